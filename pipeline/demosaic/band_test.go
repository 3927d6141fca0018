package demosaic

import (
	"errors"
	"image"
	"testing"
)

// orientRef is the upright view of src (w×h×3) for flip, as
// pipeline.Oriented reads it: output (r, c) from source (c, r) when
// flip&4, rows mirrored by flip&2 and columns by flip&1 after.
func orientRef(src []float32, w, h, flip int) ([]float32, int, int) {
	ow, oh := w, h
	if flip&4 != 0 {
		ow, oh = h, w
	}
	out := make([]float32, len(src))
	for r := range oh {
		for c := range ow {
			sr, sc := r, c
			if flip&4 != 0 {
				sr, sc = c, r
			}
			if flip&2 != 0 {
				sr = h - 1 - sr
			}
			if flip&1 != 0 {
				sc = w - 1 - sc
			}
			copy(out[(r*ow+c)*3:(r*ow+c)*3+3], src[(sr*w+sc)*3:(sr*w+sc)*3+3])
		}
	}
	return out, ow, oh
}

// TestBandsMatchRCD: every flip, band heights that do not divide the
// image, bands lower than RCD's margin, regions at odd corners, one and
// two goroutines (a transposed band's tiles run down the whole strip on
// one): the banded demosaic gives the very values of RCD on the whole
// CFA, cut and turned upright.
func TestBandsMatchRCD(t *testing.T) {
	const w, h = 301, 263
	c := mosaic(zonePlate(w, h), w, h, phases["GRBG"])
	whole := make([]float32, w*h*3)
	if err := RCD(c, whole); err != nil {
		t.Fatal(err)
	}
	for _, r := range []image.Rectangle{{}, image.Rect(3, 5, 290, 250)} {
		rr := r
		if rr.Empty() {
			rr = image.Rect(0, 0, w, h)
		}
		cut := make([]float32, 0, rr.Dx()*rr.Dy()*3)
		for y := rr.Min.Y; y < rr.Max.Y; y++ {
			cut = append(cut, whole[(y*w+rr.Min.X)*3:(y*w+rr.Max.X)*3]...)
		}
		for flip := range 8 {
			want, ow, oh := orientRef(cut, rr.Dx(), rr.Dy(), flip)
			for _, bt := range [][2]int{{BandRows, 2}, {BandRows, 1}, {37, 2}, {7, 2}} {
				band := bt[0]
				c := c
				c.Threads = bt[1]
				b, err := NewBands(c, r, flip)
				if err != nil {
					t.Fatal(err)
				}
				if b.W != ow || b.H != oh {
					t.Fatalf("flip %d: size %d×%d, want %d×%d", flip, b.W, b.H, ow, oh)
				}
				got := make([]float32, ow*oh*3)
				for y := 0; y < oh; y += band {
					y1 := min(oh, y+band)
					if err := b.Rows(y, y1, got[y*ow*3:y1*ow*3]); err != nil {
						t.Fatal(err)
					}
				}
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("region %v flip %d band %d, %d threads: sample %d (pixel %d,%d) %g, RCD %g", r, flip, band, c.Threads, i, i/3%ow, i/3/ow, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestBandsDoneAndOrder: raw rows are released as the bands pass them
// (only when the flip keeps the row order), and rows out of order fail.
func TestBandsDoneAndOrder(t *testing.T) {
	const w, h = 64, 300
	c := mosaic(smooth(w, h), w, h, phases["RGGB"])
	var got []int
	c.Done = func(y int) { got = append(got, y) }
	b, err := NewBands(c, image.Rectangle{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float32, w*h*3)
	for y := 0; y < h; y += 100 {
		if err := b.Rows(y, y+100, dst[y*w*3:]); err != nil {
			t.Fatal(err)
		}
	}
	if want := []int{90, 190, h}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("Done calls %v, want %v", got, want)
	}
	if err := b.Rows(0, 10, dst); !errors.Is(err, ErrBandOrder) {
		t.Errorf("rows again from 0: %v, want ErrBandOrder", err)
	}
	got = nil
	b, _ = NewBands(c, image.Rectangle{}, 3)
	b.Rows(0, h, dst)
	if len(got) != 0 {
		t.Errorf("flip 3 released rows %v: its bands go bottom up", got)
	}
}
