package demosaic

import (
	"image"
	"runtime"
	"testing"
)

// TestTilesKeptAcrossImages: the tile planes of one image's demosaic are
// kept (not collected) for the next image's, which then gives exactly what
// it gives in fresh planes: a small image after a larger one of other
// data, by RCD and by Bands, with a collection between.
func TestTilesKeptAcrossImages(t *testing.T) {
	fresh := func(c CFA, bands bool) []float32 {
		tiles.mu.Lock()
		tiles.kept = nil
		tiles.mu.Unlock()
		tiles.pool = syncPoolOfTiles()
		return demosaicOnce(t, c, bands)
	}
	small := noisyCFA(64, 48, phases["RGGB"], true, 7)
	for _, bands := range []bool{false, true} {
		want := fresh(small, bands)
		demosaicOnce(t, noisyCFA(300, 211, phases["GBRG"], false, 8), bands)
		tiles.mu.Lock()
		kept := append([]*rcdTile(nil), tiles.kept...)
		tiles.mu.Unlock()
		if len(kept) == 0 {
			t.Fatalf("bands %v: no tile kept after a demosaic", bands)
		}
		runtime.GC()
		runtime.GC()
		got := demosaicOnce(t, small, bands)
		tiles.mu.Lock()
		reused := false
		for _, k := range tiles.kept {
			for _, o := range kept {
				reused = reused || k == o
			}
		}
		tiles.mu.Unlock()
		if !reused {
			t.Errorf("bands %v: the next image's demosaic did not reuse the kept tiles", bands)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("bands %v: sample %d is %g in reused planes, %g in fresh ones", bands, i, got[i], want[i])
			}
		}
	}
}

// demosaicOnce demosaics c by RCD, or by Bands in bands of BandRows
// upright rows.
func demosaicOnce(t *testing.T, c CFA, bands bool) []float32 {
	t.Helper()
	out := make([]float32, c.W*c.H*3)
	if !bands {
		if err := RCD(c, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	b, err := NewBands(c, image.Rectangle{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for y := 0; y < b.H; y += BandRows {
		y1 := min(b.H, y+BandRows)
		if err := b.Rows(y, y1, out[y*b.W*3:y1*b.W*3]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
