package libraw

import (
	"errors"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// TestBayerView: the in-place view shows the visible samples CopyRaw
// copies, with the pattern and levels; RawDiscarder zeroes whole pages
// above a row and leaves the rows below it as they were.
func TestBayerView(t *testing.T) {
	const w, h = 640, 480
	hd := openSynth(t, synthdng.Spec{
		Width: w, Height: h, BlackLevel: 128, WhiteLevel: 16383, AsShotNeutral: [3]float64{0.5, 1, 0.8},
		Scene: func(x, y, c int) float64 { return float64(1+(x*7+y*131)%8000) / 16383 },
	})
	if _, err := hd.Bayer(); !errors.Is(err, ErrNoCFA) {
		t.Errorf("Bayer before Unpack: %v, want ErrNoCFA", err)
	}
	if err := hd.Unpack(); err != nil {
		t.Fatal(err)
	}
	v, err := hd.Bayer()
	if err != nil {
		t.Fatal(err)
	}
	raw, rw, rh, err := hd.CopyRaw(nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.W != rw || v.H != rh || v.Stride < v.W {
		t.Fatalf("view %d×%d stride %d, CopyRaw %d×%d", v.W, v.H, v.Stride, rw, rh)
	}
	for y := range v.H {
		for x := range v.W {
			if v.Pix[y*v.Stride+x] != raw[y*rw+x] {
				t.Fatalf("(%d,%d): view %d, copy %d", x, y, v.Pix[y*v.Stride+x], raw[y*rw+x])
			}
		}
	}
	if v.Colour != [4]uint8{0, 1, 1, 2} && v.Colour != [4]uint8{0, 1, 3, 2} {
		t.Errorf("colours %v, want RGGB", v.Colour)
	}
	if v.Black+v.CBlack[0] != 128 || v.Maximum != 16383 {
		t.Errorf("black %g + %v, maximum %g; want 128, 16383", v.Black, v.CBlack, v.Maximum)
	}
	if m := v.CamMul; m[0]/m[1] < 1.99 || m[0]/m[1] > 2.01 || m[2]/m[1] < 1.24 || m[2]/m[1] > 1.26 {
		t.Errorf("cam_mul %v, want 1/AsShotNeutral", m)
	}
	d, err := hd.RawDiscarder()
	if err != nil {
		t.Fatal(err)
	}
	n := d.Discard(h / 2)
	if n < 64<<10 {
		t.Errorf("Discard(%d) released %d bytes", h/2, n)
	}
	if d.Discard(h/2) != 0 {
		t.Error("a second Discard of the same rows released more")
	}
	zero := 0
	for y := range v.H {
		for x := range v.W {
			got := v.Pix[y*v.Stride+x]
			if y >= h/2 && got != raw[y*rw+x] {
				t.Fatalf("(%d,%d) below the discarded rows: %d, was %d", x, y, got, raw[y*rw+x])
			}
			if got == 0 {
				zero++
			}
		}
	}
	if zero < n/2-v.Stride {
		t.Errorf("%d samples read zero after releasing %d bytes", zero, n)
	}
}
