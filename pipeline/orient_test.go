package pipeline

import "testing"

// TestOrientMatchesEXIF: for every EXIF orientation, Orient with LibRaw's
// flip code turns the stored image into the displayed one as the EXIF
// specification defines it (stored S of w×h → displayed D).
func TestOrientMatchesEXIF(t *testing.T) {
	const w, h = 5, 3
	src := NewImage(w, h)
	for y := range h {
		for x := range w {
			src.Pix[(y*w+x)*3] = float32(y*w + x) // unique per pixel
		}
	}
	// displayed (x, y) ← stored (sx, sy), EXIF 2.32 Orientation tag.
	spec := map[int]func(x, y int) (int, int){
		1: func(x, y int) (int, int) { return x, y },
		2: func(x, y int) (int, int) { return w - 1 - x, y },
		3: func(x, y int) (int, int) { return w - 1 - x, h - 1 - y },
		4: func(x, y int) (int, int) { return x, h - 1 - y },
		5: func(x, y int) (int, int) { return y, x },
		6: func(x, y int) (int, int) { return y, h - 1 - x },
		7: func(x, y int) (int, int) { return w - 1 - y, h - 1 - x },
		8: func(x, y int) (int, int) { return w - 1 - y, x },
	}
	for o := 1; o <= 8; o++ {
		d := Orient(src, FlipFromEXIF(o))
		dw, dh := w, h
		if o >= 5 {
			dw, dh = h, w
		}
		if d.W != dw || d.H != dh {
			t.Fatalf("orientation %d: %dx%d, want %dx%d", o, d.W, d.H, dw, dh)
		}
		for y := range dh {
			for x := range dw {
				sx, sy := spec[o](x, y)
				if got, want := d.At(x, y)[0], src.At(sx, sy)[0]; got != want {
					t.Fatalf("orientation %d: displayed (%d,%d) = %v, want stored (%d,%d) = %v", o, x, y, got, sx, sy, want)
				}
			}
		}
	}
}
