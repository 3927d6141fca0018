package pipeline

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/rawerr"
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

// TestSniffTIFFExtents: real files pass; a stripped DNG (1 of 140 tiles) and
// an iPhone DNG stub (tiles past the end of the 64 KB file) are corrupt.
func TestSniffTIFFExtents(t *testing.T) {
	check := func(path string) error {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		st, _ := f.Stat()
		return Sniff(f, st.Size())
	}
	for _, f := range rawFiles(t) {
		if err := check(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	for _, name := range []string{"exiftool_DNG.dng", "exiv2_IMG_1361_iphone12pro.dng"} {
		if err := check(filepath.Join(testdata, "stubs", name)); !errors.Is(err, rawerr.ErrCorrupt) {
			t.Errorf("%s: got %v, want ErrCorrupt", name, err)
		}
	}
	// An IFD that points to itself is not followed forever.
	loop := []byte("II*\x00\x08\x00\x00\x00\x01\x00\xfe\x00\x04\x00\x01\x00\x00\x00\x00\x00\x00\x00\x08\x00\x00\x00")
	if err := Sniff(bytes.NewReader(loop), int64(len(loop))); err != nil {
		t.Errorf("IFD loop: %v", err)
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
