package header

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rawbatch/rawbatch/internal/rawerr"
)

func TestSniff(t *testing.T) {
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, rawerr.ErrEmpty},
		{"text", []byte("hello\nworld\n"), rawerr.ErrNotRaw},
		{"utf8 text", []byte("Grüße, 写真\n"), rawerr.ErrNotRaw},
		{"jpeg", []byte{0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10, 'J', 'F', 'I', 'F'}, rawerr.ErrNotRaw},
		{"png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR"), rawerr.ErrNotRaw},
		{"pdf", []byte("%PDF-1.7\n\x00\x01"), rawerr.ErrNotRaw},
		{"binary unknown", []byte{0, 1, 2, 3, 0xfe, 0x80, 0x00}, nil},
		{"crw ciff, heap missing", []byte("II\x1a\x00\x00\x00HEAPCCDR"), rawerr.ErrCorrupt},
		{"cr3 bmff", []byte("\x00\x00\x00\x18ftypcrx \x00\x00\x00\x01crx isom"), nil},
	}
	for _, c := range cases {
		err := Sniff(bytes.NewReader(c.data), int64(len(c.data)))
		if !errors.Is(err, c.want) || (c.want == nil && err != nil) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

// FuzzSniff: no input makes Sniff panic or hang.
func FuzzSniff(f *testing.F) {
	f.Add([]byte("II*\x00\x08\x00\x00\x00"))
	f.Add([]byte("MM\x00*\x00\x00\x00\x08\x00\x02\x01\x11\x00\x04\x00\x00\x00\x01\x00\x00\x00\x10"))
	f.Fuzz(func(t *testing.T, b []byte) {
		Sniff(bytes.NewReader(b), int64(len(b)))
	})
}

func TestIsRawExtension(t *testing.T) {
	for name, want := range map[string]bool{
		"a/IMG_1.CR3": true, "x.dng": true, "x.DNG": true, "x.Nef": true, "x.jpg": false,
		"noext": false, "dir.dng/file": false, ".dng": true, "x.dng.txt": false,
	} {
		if got := IsRawExtension(name); got != want {
			t.Errorf("IsRawExtension(%q) = %v", name, got)
		}
	}
}

// sample returns bytes that match row s of signatures, padded to n bytes
// with pad.
func sample(s signature, n int, pad byte) []byte {
	b := bytes.Repeat([]byte{pad}, n)
	for _, p := range s.match {
		copy(b[p.at:], p.magic)
	}
	return b
}

// TestSniffAndReadNameFilesAlike: Sniff (run before anything else sees a
// file) and Read (run on its own by tests and tools) recognise a file
// from the same table with the same words, so a WebP is "a WebP image"
// to both (Read once called it "a RIFF (WebP/AVI/WAV) file"), and text is
// text to both (Read once had its own isText, looking at 512 bytes and
// wanting at least 16).
func TestSniffAndReadNameFilesAlike(t *testing.T) {
	dir := t.TempDir()
	check := func(name string, data []byte) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o666); err != nil {
			t.Fatal(err)
		}
		serr := Sniff(bytes.NewReader(data), int64(len(data)))
		_, rerr := readFile(p, false, nil)
		sniffed, read := "<nil>", "<nil>"
		if serr != nil {
			sniffed = serr.Error()
		}
		if rerr != nil {
			read = strings.TrimPrefix(rerr.Error(), p+": ")
		}
		sniffSays := strings.HasPrefix(sniffed, rawerr.ErrNotRaw.Error()+": it is ")
		readSays := strings.HasPrefix(read, rawerr.ErrNotRaw.Error()+": it is ")
		if sniffSays != readSays || (sniffSays && sniffed != read) {
			t.Errorf("%s: Sniff says %q, Read says %q", name, sniffed, read)
		}
	}
	for i, s := range signatures {
		if s.foreign == "" {
			continue
		}
		check(fmt.Sprintf("foreign%d.dng", i), sample(s, 64, 0))
	}
	check("short.txt", []byte("hello, world\n"))
	check("long.txt", []byte(strings.Repeat("a line of text\n", 300)))
	check("text-then-binary.dng", append([]byte(strings.Repeat("text ", 120)), 0, 1, 2, 3))
	check("utf8-cut.txt", []byte(strings.Repeat("é", 2048)+"é"[:1]))
}

// TestSignatures: each RAW container row names its format, each foreign
// row says what the file is, no row is shadowed by an earlier one, and
// HasRawSignature is true exactly for the RAW rows.
func TestSignatures(t *testing.T) {
	dir := t.TempDir()
	for i, s := range signatures {
		if s.format == "" || s.raw == (s.foreign != "") {
			t.Errorf("row %d (%v): want a format, and exactly one of raw and foreign", i, s.match)
		}
		b := sample(s, 32, 0x55)
		if got := recognise(b); got.format != s.format || got.foreign != s.foreign || got.kind != s.kind {
			t.Errorf("row %d (%v) is shadowed by %v", i, s.match, got.match)
		}
		p := filepath.Join(dir, fmt.Sprint(i))
		if err := os.WriteFile(p, b, 0o666); err != nil {
			t.Fatal(err)
		}
		if HasRawSignature(p) != s.raw {
			t.Errorf("row %d (%v): HasRawSignature %v", i, s.match, !s.raw)
		}
	}
	for name, b := range map[string][]byte{
		"heic":        []byte("\x00\x00\x00\x18ftypheic\x00\x00\x00\x00"),
		"big-end crw": []byte("MM\x00\x00\x00\x1aHEAPCCDR"),
		"arri":        []byte("ARRI\x12\x34\x56\x78"),
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, b, 0o666)
		if !HasRawSignature(p) {
			t.Errorf("%s: HasRawSignature false", name)
		}
	}
	if HasRawSignature(filepath.Join(dir, "missing")) {
		t.Error("HasRawSignature of a missing file")
	}
}

// TestOneRecognition: file signatures and the text rule live here only; no
// other Go file of the module (tests aside) carries a table of RAW
// signatures or its own isText.
func TestOneRecognition(t *testing.T) {
	root := filepath.Join("..", "..")
	needles := []string{"HEAPCCDR", `"FUJIFILM"`, `"FOVb"`, `"%PDF"`, `"8BPS"`, "func isText", "func sniff(", "func knownSignature"}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "build" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		if filepath.Dir(p) == filepath.Join(root, "pipeline", "header") { // this package
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, n := range needles {
			if bytes.Contains(b, []byte(n)) {
				t.Errorf("%s holds %s: file recognition belongs to pipeline/header (sniff.go)", p, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestReadRefusesAFIFO: Read and SniffFile refuse a FIFO by the one rule
// (openRegular: ErrNotRegular, checked before opening, since an open for
// reading waits for a writer; Read once opened first and had its own
// error). The test holds the FIFO open read-write itself, so that a
// regression to opening first fails here instead of hanging.
func TestReadRefusesAFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "pipe.dng")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	hold, err := os.OpenFile(p, os.O_RDWR, 0) // never blocks on Linux
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	for name, read := range map[string]func() error{
		"Read":      func() error { _, err := readFile(p, false, nil); return err },
		"SniffFile": func() error { _, err := SniffFile(p); return err },
	} {
		err := read()
		if !errors.Is(err, ErrNotRegular) || !errors.Is(err, rawerr.ErrNotRaw) {
			t.Errorf("%s of a FIFO: %v, want ErrNotRegular", name, err)
		}
	}
}
