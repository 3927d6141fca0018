package resize

import (
	"math"
	"math/rand"
	"testing"
)

// TestRowsMatchesDownscale: the band-wise downscaler (Rows) gives
// Downscale's image, for sizes with and without a box reduction (partial
// last boxes, one axis only, upscaling, identity), whatever the rows
// pushed at a time.
func TestRowsMatchesDownscale(t *testing.T) {
	cases := []struct{ w, h, c, dw, dh int }{
		{600, 400, 3, 512, 341}, // no reduction
		{601, 403, 3, 51, 34},   // box 5×5 with partial last boxes
		{640, 430, 3, 205, 137}, // box 1 (ratio 3.1): Lanczos only
		{300, 1000, 3, 300, 97}, // vertical only, reduced
		{1000, 60, 3, 90, 60},   // horizontal only, reduced
		{64, 48, 3, 97, 71},     // upscale
		{37, 23, 3, 37, 23},     // identity
		{200, 150, 1, 23, 17},   // one channel
		{4000, 90, 3, 512, 12},  // 24 MP-like widths: 2048 px and 512 px ratios
		{3000, 2000, 3, 2048, 1365},
	}
	rng := rand.New(rand.NewSource(3))
	for _, tc := range cases {
		src := randImage(tc.w, tc.h, tc.c)
		want := Downscale(src, tc.w, tc.h, tc.c, tc.dw, tc.dh)
		for _, batch := range []int{1, 7, 64, tc.h} {
			got := make([]float32, tc.dw*tc.dh*tc.c)
			rl := tc.dw * tc.c
			r := NewRows(tc.w, tc.h, tc.c, tc.dw, tc.dh, func(y int) []float32 { return got[y*rl : (y+1)*rl] })
			n := tc.w * tc.c
			for y := 0; y < tc.h; {
				k := min(tc.h-y, 1+rng.Intn(batch))
				r.Push(src[y*n : (y+k)*n])
				y += k
			}
			if !r.Done() {
				t.Fatalf("%+v batch %d: %d of %d rows written", tc, batch, r.out, tc.dh)
			}
			var worst float64
			for i := range want {
				worst = max(worst, math.Abs(float64(got[i]-want[i])))
			}
			if worst > 1e-6 {
				t.Errorf("%+v batch %d: max |band-wise − whole| = %g", tc, batch, worst)
			}
		}
	}
}

// TestRowsHoldsFewRows: the band-wise downscaler of a tall image holds no
// more than the kernel's rows and a push's.
func TestRowsHoldsFewRows(t *testing.T) {
	w, h, dw, dh := 64, 6000, 16, 512
	r := NewRows(w, h, 3, dw, dh, func(int) []float32 { return make([]float32, dw*3) })
	src := randImage(w, 64, 3)
	most := 0
	for y := 0; y < h; y += 64 {
		r.Push(src[:min(64, h-y)*w*3])
		most = max(most, len(r.ring)+len(r.spare))
	}
	if !r.Done() || most > 6*ReducingGap+64/r.ky+4 {
		t.Errorf("done %v; held %d resampled rows at most", r.Done(), most)
	}
}
