package warp

import "testing"

// BenchmarkRemap24MP: Remap of a 6000×4000×3 image through a sub-pixel
// scale and shift (every sample on the interior fast path).
func BenchmarkRemap24MP(b *testing.B) {
	w, h := 6000, 4000
	src := make([]float32, w*h*3)
	for i := range src {
		src[i] = float32(i%1000) / 1000
	}
	for b.Loop() {
		Remap(src, w, h, 3, w, h, func(y, ch int, sx, sy []float32) {
			for i := range sx {
				sx[i] = float32(i)*0.999 + 2.3
				sy[i] = float32(y)*0.999 + 1.7
			}
		})
	}
}
