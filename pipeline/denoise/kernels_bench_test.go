package denoise

import (
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

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

// BenchmarkDenoiserPass2 is the streamed denoise's pass 2 alone on a
// 12 MP noisy image (4240×2832, 16-bit stored rows, strength 0.5 as at
// ISO 1600): Denoiser in bands of 64 rows, the noise measured once
// beforehand. cpu-ms/op is the process's CPU time per frame (user and
// system, all goroutines).
func BenchmarkDenoiserPass2(b *testing.B) {
	const w, h = 4240, 2832
	src := stored(textured(w, h, 5))
	pix := make([]float32, len(src))
	row := func(y int) []float32 { return pix[3*y*w : 3*(y+1)*w] }
	m := NewNoiseMeter(w, h, Turn{})
	m.Rows(h, func(y int) []float32 { return src[3*y*w : 3*(y+1)*w] })
	l, _ := m.Levels()
	var cpu time.Duration
	for b.Loop() {
		copy(pix, src)
		c0 := cpuTime()
		d := NewDenoiser(w, h, 0.5, l, Turn{})
		for y := 0; y < h; y += 64 {
			d.Rows(y+64, row)
		}
		cpu += cpuTime() - c0
	}
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
}

// BenchmarkNoiseMeterPass1 is the streamed denoise's pass 1 alone
// (NoiseMeter over every row of the 12 MP image of
// BenchmarkDenoiserPass2, in bands of 64 rows, float rows).
func BenchmarkNoiseMeterPass1(b *testing.B) {
	const w, h = 4240, 2832
	src := textured(w, h, 5)
	var cpu time.Duration
	for b.Loop() {
		c0 := cpuTime()
		m := NewNoiseMeter(w, h, Turn{})
		for y := 0; y < h; y += 64 {
			m.Rows(y+64, func(y int) []float32 { return src[3*y*w : 3*(y+1)*w] })
		}
		cpu += cpuTime() - c0
	}
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
}

// cpuTime is the process's CPU time so far (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fillB3Rows makes each of r a row of w smooth ramps, the B3 benchmarks'
// input.
func fillB3Rows(r [][]float32, w int) {
	for i := range r {
		r[i] = make([]float32, w)
		for x := range r[i] {
			r[i][x] = float32(x%97) * 0.01
		}
	}
}

// BenchmarkB3Row is blurRows on one 6000-pixel row of a plane (the
// luminance of a 24 MP image), at hole spacing 4.
func BenchmarkB3Row(b *testing.B) {
	const w = 6000
	var r [5][]float32
	fillB3Rows(r[:], w)
	tmp, out := make([]float32, w), make([]float32, w)
	for b.Loop() {
		blurRows(r, 1, w, 4, tmp, out)
	}
}

// BenchmarkB3Rows4 is blurRows4: four rows of BenchmarkB3Row at once.
func BenchmarkB3Rows4(b *testing.B) {
	const w = 6000
	var r [8][]float32
	fillB3Rows(r[:], w)
	tmp := make([]float32, 4*w)
	var out [4][]float32
	for k := range out {
		out[k] = make([]float32, w)
	}
	for b.Loop() {
		blurRows4(r, w, 4, tmp, out)
	}
}

// splitBenchRow is a 6000-pixel row of linear values (a 24 MP image's).
func splitBenchRow(w int) []float32 {
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]float32, 3*w)
	for i := range src {
		src[i] = float32(rng.Float64())
	}
	return src
}

// BenchmarkSplitRow is splitRow on one 6000-pixel row (computed
// stabilisation, pass 1's).
func BenchmarkSplitRow(b *testing.B) {
	const w = 6000
	src := splitBenchRow(w)
	yr, q1, q2 := make([]float32, w), make([]float32, w/2), make([]float32, w/2)
	for b.Loop() {
		splitRow(src, yr, q1, q2, 0, nil)
	}
}

// BenchmarkMergeRow is mergeRow on one 6000-pixel row.
func BenchmarkMergeRow(b *testing.B) {
	const w = 6000
	src := splitBenchRow(w)
	yr, q1, q2 := make([]float32, w), make([]float32, w/2), make([]float32, w/2)
	splitRow(src, yr, q1, q2, 0, nil)
	cols := mergeColumns(w, w/2, 0)
	for b.Loop() {
		mergeRow(yr, q1, q1, q2, q2, cols, 0.75, src)
	}
}
