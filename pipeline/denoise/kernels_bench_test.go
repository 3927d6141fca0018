package denoise

import "testing"

// BenchmarkCaptureSharpen sharpens a 12 MP textured image (4240×2832,
// CaptureSharpen at amount 0.8, σ SharpenSigma: radius 3). ns/op is one
// frame; run with -cpu 1 for the CPU time.
func BenchmarkCaptureSharpen(b *testing.B) {
	const w, h = 4240, 2832
	src := textured(w, h, 5)
	pix := make([]float32, len(src))
	for b.Loop() {
		copy(pix, src)
		CaptureSharpen(pix, w, h, 0.8, SharpenSigma)
	}
}
