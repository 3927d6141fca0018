package pipeline

import (
	"bytes"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

// TestWritebackWriter: bytes written through it arrive unchanged across
// many writeback chunks; writeback is started on a regular file, and a
// descriptor that cannot take sync_file_range (a pipe) still gets every
// byte.
func TestWritebackWriter(t *testing.T) {
	data := make([]byte, 3*writebackChunk+12345)
	rand.New(rand.NewSource(1)).Read(data)
	write := func(w io.Writer) {
		t.Helper()
		for p := data; len(p) > 0; {
			n := min(len(p), 1<<20+7)
			if k, err := w.Write(p[:n]); err != nil || k != n {
				t.Fatalf("Write = %d, %v", k, err)
			}
			p = p[n:]
		}
	}

	path := filepath.Join(t.TempDir(), "out")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := &writebackWriter{f: f}
	write(w)
	f.Close()
	if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
		t.Fatal("file content differs from what was written")
	}
	if w.skip || w.done < 3*writebackChunk {
		t.Errorf("writeback started for %d of %d bytes (skip %v)", w.done, len(data), w.skip)
	}

	r, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); got <- b }()
	w = &writebackWriter{f: pw}
	write(w)
	pw.Close()
	if b := <-got; !bytes.Equal(b, data) {
		t.Fatal("pipe received different bytes")
	}
	if !w.skip {
		t.Error("sync_file_range on a pipe did not fail; the fallback is untested")
	}
}
