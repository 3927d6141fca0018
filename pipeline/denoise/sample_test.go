package denoise

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSampleRowMirrors: sampleRow, whose taps are mirrored only near the
// borders, gives bit for bit the coefficients of the 5×5 B3 smoothing
// with every tap mirrored (refSampleRow), at every column of rows of widths 1 to 40
// and every hole spacing of the cascades, for strides 1 and 3.
func TestSampleRowMirrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for w := 1; w <= 40; w++ {
		for _, stride := range []int{1, 3} {
			for _, step := range []int{1, 2, 4, 8, 16} {
				var r [5][]float32
				for i := range r {
					r[i] = make([]float32, (w-1)*stride+1)
					for x := range r[i] {
						r[i][x] = float32(rng.NormFloat64())
					}
				}
				xs := make([]int, w)
				for x := range xs {
					xs[x] = x
				}
				got := sampleRow(nil, r, stride, w, step, xs)
				want := refSampleRow(nil, r, stride, w, step, xs)
				for x := range xs {
					if math.Float32bits(got[x]) != math.Float32bits(want[x]) {
						t.Fatalf("width %d, stride %d, step %d, column %d: %v, want %v", w, stride, step, x, got[x], want[x])
					}
				}
			}
		}
	}
}
