package pipeline

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/look"
)

// gamutIntoRef is look.GamutPixel as first written, per pixel: the
// reference look.GamutRows is checked against.
func gamutIntoRef(p []float32, lum [3]float32) {
	r, g, b := p[0], p[1], p[2]
	if !(r > 0) {
		r = 0
	}
	if !(g > 0) {
		g = 0
	}
	if !(b > 0) {
		b = 0
	}
	y := lum[0]*r + lum[1]*g + lum[2]*b
	if y >= 1 {
		p[0], p[1], p[2] = 1, 1, 1
		return
	}
	t := float32(1)
	for _, c := range [3]float32{r, g, b} {
		if c > 1 {
			t = min(t, (1-y)/(c-y))
		}
	}
	p[0], p[1], p[2] = min(y+t*(r-y), 1), min(y+t*(g-y), 1), min(y+t*(b-y), 1)
}

// kernelTestPixels returns interleaved RGB test pixels: every combination
// of edge values (NaN, ±Inf, negatives, 0, -0, values above 1, equal
// channels, the LUT's ends) and n random pixels spread over [-0.5, 3).
func kernelTestPixels(n int) []float32 {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	edge := []float32{nan, -inf, inf, -1, -0.25, float32(math.Copysign(0, -1)), 0, 1e-7, 0.002, 0.18, 0.5,
		0.999999, 1, 1.000001, 1.5, 4, 0.18, 0.5}
	var pix []float32
	for _, a := range edge {
		for _, b := range edge {
			for _, c := range edge {
				pix = append(pix, a, b, c)
			}
		}
	}
	rng := rand.New(rand.NewPCG(14, 1))
	for range n {
		switch rng.IntN(4) {
		case 0: // two equal channels
			v, w := rng.Float32()*1.2, rng.Float32()*1.2
			pix = append(pix, v, w, v)
		case 1: // in range
			pix = append(pix, rng.Float32(), rng.Float32(), rng.Float32())
		default:
			pix = append(pix, rng.Float32()*3.5-0.5, rng.Float32()*3.5-0.5, rng.Float32()*3.5-0.5)
		}
	}
	return pix
}

// checkKernelClose fails t where got and want differ by more than 1e-6
// relative (absolute below 1), NaN only matching NaN, except that where
// the reference gave NaN for a pixel with an infinite channel (its
// Inf−Inf and Inf/Inf, against its documented [0, 1] result) got must lie
// in [0, 1].
func checkKernelClose(t *testing.T, name string, in, got, want []float32) {
	t.Helper()
	bad := 0
	for i := range want {
		g, w := got[i], want[i]
		px := in[i/3*3 : i/3*3+3]
		inf := math.IsInf(float64(px[0]), 0) || math.IsInf(float64(px[1]), 0) || math.IsInf(float64(px[2]), 0)
		if w != w && inf && g >= 0 && g <= 1 {
			continue
		}
		if g != g || w != w {
			if g == g || w == w {
				bad++
				t.Errorf("%s: pixel %v channel %d: got %v, want %v", name, in[i/3*3:i/3*3+3], i%3, g, w)
			}
			continue
		}
		if d := math.Abs(float64(g - w)); d > 1e-6*max(1, math.Abs(float64(w))) {
			bad++
			t.Errorf("%s: pixel %v channel %d: got %v, want %v (Δ %g)", name, in[i/3*3:i/3*3+3], i%3, g, w, d)
		}
		if bad > 20 {
			t.Fatalf("%s: too many differences", name)
		}
	}
}

// TestGamutRowsMatchesReference checks gamutRows against the previous
// per-pixel gamutInto (gamutIntoRef) on edge-case and random pixels, with
// sRGB's and a wide space's luminance rows.
func TestGamutRowsMatchesReference(t *testing.T) {
	in := kernelTestPixels(200000)
	for _, lum := range [][3]float32{{0.2126, 0.7152, 0.0722}, {0.2880, 0.7119, 0.0001}} {
		got, want := append([]float32(nil), in...), append([]float32(nil), in...)
		look.GamutRows(got, lum)
		for i := 0; i+2 < len(want); i += 3 {
			gamutIntoRef(want[i:i+3:i+3], lum)
		}
		checkKernelClose(t, "gamutRows", in, got, want)
		for i := 0; i+2 < len(in); i += 3 {
			p := append([]float32(nil), in[i:i+3]...)
			look.GamutPixel(p, lum)
			checkKernelClose(t, "gamutInto", in[i:i+3], p, want[i:i+3])
		}
	}
}

// BenchmarkGamutKernels times gamutRows against the previous per-pixel
// gamutInto on 1 MP of random in-range pixels (unpredictable
// channel order, as in photographs) and of BenchmarkFusedPass24MP's ramp.
func BenchmarkGamutKernels(b *testing.B) {
	const n = 1 << 20
	rng := rand.New(rand.NewPCG(14, 2))
	random, ramp := make([]float32, 3*n), make([]float32, 3*n)
	for i := range random {
		random[i] = rng.Float32() * 1.1
		ramp[i] = float32(i%1031) / 1100
	}
	lum := [3]float32{0.2126, 0.7152, 0.0722}
	px := make([]float32, 3*n)
	kernels := []struct {
		name string
		f    func([]float32)
	}{
		{"gamut", func(p []float32) { look.GamutRows(p, lum) }},
		{"gamutRef", func(p []float32) {
			for i := 0; i+2 < len(p); i += 3 {
				gamutIntoRef(p[i:i+3:i+3], lum)
			}
		}},
	}
	for _, in := range []struct {
		name string
		pix  []float32
	}{{"random", random}, {"ramp", ramp}} {
		for _, k := range kernels {
			b.Run(in.name+"/"+k.name, func(b *testing.B) {
				for range b.N {
					b.StopTimer()
					copy(px, in.pix)
					b.StartTimer()
					k.f(px)
				}
			})
		}
	}
}
