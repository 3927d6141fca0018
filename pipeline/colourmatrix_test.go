package pipeline

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// TestNoColourMatrixWarns: a synthetic DNG whose ColorMatrix1 tag is
// renamed to an unknown tag leaves LibRaw with no colour data for the
// (fictitious) camera. ReadHeader says so, and the conversion warns; the
// unmodified file has a matrix and no warning.
func TestNoColourMatrixWarns(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.dng")
	err := synthdng.WriteFile(good, synthdng.Spec{Width: 64, Height: 48, BlackLevel: 512, WhiteLevel: 16383,
		Scene: func(x, y, c int) float64 { return 0.2 }})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	// The IFD entry of ColorMatrix1: tag 50721, type SRATIONAL (10), 9 values.
	var entry [8]byte
	binary.LittleEndian.PutUint16(entry[0:], 50721)
	binary.LittleEndian.PutUint16(entry[2:], 10)
	binary.LittleEndian.PutUint32(entry[4:], 9)
	i := bytes.Index(b, entry[:])
	if i < 0 || bytes.Count(b, entry[:]) != 1 {
		t.Fatalf("ColorMatrix1 entry not found once in the synthetic DNG")
	}
	binary.LittleEndian.PutUint16(b[i:], 65000) // a private tag nobody reads
	bad := filepath.Join(dir, "nomatrix.dng")
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path  string
		known bool
	}{{good, true}, {bad, false}} {
		h, err := ReadHeader(c.path)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if !h.SizeFromLibRaw || h.ColourMatrix != c.known {
			t.Errorf("%s: ColourMatrix %v (from LibRaw %v), want %v", filepath.Base(c.path), h.ColourMatrix, h.SizeFromLibRaw, c.known)
		}
		res, err := ConvertFile(context.Background(), c.path, c.path+".jpg", DefaultSettings())
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		warned := false
		for _, w := range res.Warnings {
			warned = warned || strings.Contains(w, "no colour matrix")
		}
		if warned == c.known {
			t.Errorf("%s: warnings %q, want a no-colour-matrix warning: %v", filepath.Base(c.path), res.Warnings, !c.known)
		}
	}
}
