package pipeline

import (
	"bytes"
	"errors"
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
