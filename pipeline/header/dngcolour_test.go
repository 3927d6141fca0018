package header

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// TestColorMatrixPastEnd: a DNG whose ColorMatrix1 offset points past the
// end of the file (LibRaw converts it with wrong colours, no warning) fails
// as corrupt, naming the tag; the intact file reads.
func TestColorMatrixPastEnd(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.dng")
	if err := synthdng.WriteFile(good, synthdng.Spec{Width: 64, Height: 48, Scene: func(x, y, c int) float64 { return 0.2 }}); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(good); err != nil {
		t.Fatalf("intact: %v", err)
	}
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	// Walk IFD0 (little-endian, synthdng) to ColorMatrix1 and move its
	// value offset past the end of the file.
	bo := binary.LittleEndian
	if string(b[:2]) != "II" {
		t.Fatal("synthdng wrote a big-endian file")
	}
	ifd0 := int(bo.Uint32(b[4:]))
	n := int(bo.Uint16(b[ifd0:]))
	found := false
	for i := range n {
		e := b[ifd0+2+12*i:]
		if bo.Uint16(e) == 50721 {
			bo.PutUint32(e[8:], uint32(len(b)+1000))
			found = true
		}
	}
	if !found {
		t.Fatal("no ColorMatrix1 in IFD0")
	}
	bad := writeFile(t, dir, "bad.dng", b)
	for _, withLibRaw := range []bool{true, false} {
		_, err := readFile(bad, withLibRaw, nil)
		if !errors.Is(err, rawerr.ErrCorrupt) || !strings.Contains(err.Error(), "bad.dng: corrupt or truncated data: ColorMatrix1 (tag 50721) lies past the end of the ") {
			t.Errorf("libraw=%v: %v", withLibRaw, err)
		}
	}
}
