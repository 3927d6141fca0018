package denoise

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSharpenerBands: capture sharpening row by row in bands of any
// height (ones that do not divide the image, ones below the radius) gives
// CaptureSharpen's result on the whole image, reading only the rows it
// may, for the default σ and a wider one.
func TestSharpenerBands(t *testing.T) {
	const w, h = 97, 203
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]float32, w*h*3)
	for i := range src {
		src[i] = rng.Float32()
	}
	for _, sigma := range []float64{SharpenSigma, 0.5} {
		whole := slices.Clone(src)
		CaptureSharpen(whole, w, h, 0.8, sigma)
		if slices.Equal(whole, src) {
			t.Fatal("nothing sharpened")
		}
		for _, band := range []int{1, 2, 5, 64, h} {
			pix := slices.Clone(src)
			s := NewSharpener(w, h, 0.8, sigma)
			lo := 0
			row := func(y int) []float32 {
				if y < lo || y >= lo+band+s.Lookahead() {
					t.Errorf("σ %g band %d: row %d read while finishing from %d", sigma, band, y, lo)
				}
				return pix[3*y*w : 3*(y+1)*w]
			}
			for lo = 0; lo < h; lo += band {
				s.Rows(lo+band, row)
			}
			if !slices.Equal(pix, whole) {
				t.Errorf("σ %g band %d: differs from the whole image's", sigma, band)
			}
		}
	}
}
