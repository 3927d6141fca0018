package demosaic

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDataMaximum: dataMaximum, per phase on integers and rows in
// parallel, is exactly LibRaw's data_maximum evaluated per photosite
// (the largest sample less its phase's black level, floored), for odd
// and even sizes, a stride wider than the image, and any thread count.
func TestDataMaximum(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 14))
	for _, sz := range [][2]int{{1, 1}, {1, 7}, {9, 1}, {2, 2}, {333, 217}, {640, 481}} {
		w, h := sz[0], sz[1]
		v := Mosaic{W: w, H: h, Stride: w + 3}
		v.Pix = make([]uint16, (h-1)*v.Stride+w)
		for i := range v.Pix {
			v.Pix[i] = uint16(r.IntN(16000))
		}
		// One hot photosite in the phase with the highest black.
		v.Pix[(h/2)*v.Stride+w/2] = 16383
		black := [4]float64{512.5, 510, 530.25, 509}
		var want float64
		for y := range h {
			for x := range w {
				want = max(want, float64(v.Pix[y*v.Stride+x])-black[(y&1)*2+x&1])
			}
		}
		want = math.Floor(want)
		for _, th := range []int{1, 2, 5} {
			if got := dataMaximum(v, black, th); got != want {
				t.Errorf("%d×%d, %d threads: %g, want %g", w, h, th, got, want)
			}
		}
	}
}
