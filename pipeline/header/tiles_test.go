package header

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// TestTilesPastTheEnd: a tiled lossless-JPEG ARW or DNG cut short, so
// that a tile's TileOffsets+TileByteCounts extent passes the end of the
// file, is truncated (ErrCorrupt, ErrTruncated) whichever tile it is. A
// Sony ARW also lists its first tile as its one strip (StripOffsets,
// StripByteCounts), and only that was checked: an ARW cut in half, or by
// a byte, passed.
func TestTilesPastTheEnd(t *testing.T) {
	dir := t.TempDir()
	arw, dng := writeTiled(t, dir, 600, 400, 256)
	for _, p := range []string{arw, dng} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Read(p); err != nil {
			t.Fatalf("%s whole: %v", filepath.Base(p), err)
		}
		for _, cut := range []int{1, 2, 64, len(data) / 2} {
			_, err := Read(writeFile(t, dir, fmt.Sprintf("cut%d-%s", cut, filepath.Base(p)), data[:len(data)-cut]))
			if !errors.Is(err, rawerr.ErrCorrupt) || !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), fmt.Sprintf("past the end of the %d-byte file", len(data)-cut)) {
				t.Errorf("%s less %d bytes: %v, want truncated", filepath.Base(p), cut, err)
			}
		}
	}
}

// TestCutInsideHeader: a DNG or ARW whose copy stopped inside its first
// IFDs (before the raw IFD is read: 20 to 200 bytes) is truncated
// (ErrTruncated, which the runner leaves for a later run while the file
// is fresh), not "a TIFF image without raw sensor data".
func TestCutInsideHeader(t *testing.T) {
	dir := t.TempDir()
	arw, dng := writeTiled(t, dir, 64, 48, 64)
	for _, p := range []string{arw, dng} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{12, 20, 60, 100, 200} {
			_, err := Read(writeFile(t, dir, fmt.Sprintf("%d-%s", n, filepath.Base(p)), data[:n]))
			if !errors.Is(err, ErrTruncated) || !errors.Is(err, rawerr.ErrCorrupt) {
				t.Errorf("%s cut to %d bytes: %v, want truncated", filepath.Base(p), n, err)
			}
		}
	}
}

// writeTiled writes a w×h Sony lossless ARW (a.arw) and a lossless-JPEG
// DNG (d.dng) with tiles of tile² photosites into dir and returns their
// paths.
func writeTiled(t *testing.T, dir string, w, h, tile int) (arw, dng string) {
	t.Helper()
	scene := func(x, y, c int) float64 { return float64((x*7+y*13+c*5)%97) / 97 }
	arw = filepath.Join(dir, "a.arw")
	if err := synthdng.WriteSonyLosslessARW(arw, synthdng.ARWSpec{Width: w, Height: h, TileWidth: tile, TileLength: tile,
		Bits: 14, BlackLevel: 512, WhiteLevel: 16383, Model: synthdng.RealModel, Scene: scene}); err != nil {
		t.Fatal(err)
	}
	dng = filepath.Join(dir, "d.dng")
	if err := synthdng.WriteFile(dng, synthdng.Spec{Width: w, Height: h, BlackLevel: 512, WhiteLevel: 16383,
		Compression: 7, TileSize: tile, Scene: scene}); err != nil {
		t.Fatal(err)
	}
	return arw, dng
}
