package resize

import (
	"math"
	"math/rand"
	"runtime"
	"testing"
)

func TestLanczosKernel(t *testing.T) {
	if kernel(0) != 1 {
		t.Errorf("L(0) = %v", kernel(0))
	}
	for _, x := range []float64{1, 2, -1, -2, 3, 3.5, -4} {
		if v := kernel(x); math.Abs(v) > 1e-15 {
			t.Errorf("L(%v) = %v, want 0", x, v)
		}
	}
	// L(0.5) = sinc(0.5)·sinc(1/6) = (2/π)·(sin(π/6)/(π/6)) = (2/π)(3/π).
	if v, want := kernel(0.5), 6/(math.Pi*math.Pi); math.Abs(v-want) > 1e-12 {
		t.Errorf("L(0.5) = %v, want %v", v, want)
	}
	if kernel(1.5) >= 0 || kernel(2.5) <= 0 {
		t.Errorf("lobe signs wrong: L(1.5)=%v L(2.5)=%v", kernel(1.5), kernel(2.5))
	}
}

func TestWeightsNormalised(t *testing.T) {
	for _, tc := range [][2]int{{100, 37}, {37, 100}, {6000, 512}, {5, 1}, {1, 5}, {3, 2}} {
		wt := makeWeights(tc[0], tc[1])
		for i := range wt.start {
			var s float64
			for _, v := range wt.w[wt.off[i] : wt.off[i]+wt.n[i]] {
				s += float64(v)
			}
			if math.Abs(s-1) > 1e-6 {
				t.Errorf("%v: output %d weights sum to %v", tc, i, s)
			}
			if wt.start[i] < 0 || wt.start[i]+wt.n[i] > tc[0] {
				t.Errorf("%v: output %d range [%d,%d) outside input", tc, i, wt.start[i], wt.start[i]+wt.n[i])
			}
		}
	}
	// Downscaling widens the support: 6000→512 needs about 2·3·6000/512 ≈ 70 taps.
	if n := makeWeights(6000, 512).n[256]; n < 65 || n > 72 {
		t.Errorf("6000→512 centre taps = %d, want ≈70", n)
	}
	if n := makeWeights(100, 400).n[200]; n != 6 && n != 7 {
		t.Errorf("100→400 taps = %d, want 6 or 7", n)
	}
}

var sizes = []struct{ w, h, dw, dh int }{
	{64, 48, 17, 13},   // downscale
	{40, 30, 97, 71},   // upscale
	{50, 50, 50, 20},   // vertical only
	{33, 21, 80, 21},   // horizontal only
	{300, 200, 31, 21}, // strong downscale
	{7, 5, 7, 5},       // identity
}

// reference is a direct float64 implementation of the same resampling:
// each output sample sums L((j−c)·min(1, dst/src)) · src[clamp(j)] over
// all j within the support, divided by the sum of the kernel values.
func reference(src []float32, w, h, c, dw, dh int) []float64 {
	axis := func(n, dn, i int) (idx []int, wt []float64) {
		s := float64(dn) / float64(n)
		fs := math.Min(1, s)
		ctr := (float64(i)+0.5)/s - 0.5
		var sum float64
		for j := int(math.Floor(ctr - 3/fs)); j <= int(math.Ceil(ctr+3/fs)); j++ {
			v := kernel((float64(j) - ctr) * fs)
			idx = append(idx, min(max(j, 0), n-1))
			wt = append(wt, v)
			sum += v
		}
		for k := range wt {
			wt[k] /= sum
		}
		return idx, wt
	}
	tmp := make([]float64, dw*h*c)
	for x := 0; x < dw; x++ {
		idx, wt := axis(w, dw, x)
		for y := 0; y < h; y++ {
			for ch := 0; ch < c; ch++ {
				var v float64
				for k, j := range idx {
					v += wt[k] * float64(src[(y*w+j)*c+ch])
				}
				tmp[(y*dw+x)*c+ch] = v
			}
		}
	}
	out := make([]float64, dw*dh*c)
	for y := 0; y < dh; y++ {
		idx, wt := axis(h, dh, y)
		for x := 0; x < dw; x++ {
			for ch := 0; ch < c; ch++ {
				var v float64
				for k, j := range idx {
					v += wt[k] * tmp[(j*dw+x)*c+ch]
				}
				out[(y*dw+x)*c+ch] = v
			}
		}
	}
	return out
}

// TestAgainstReference compares with the float64 reference on random
// images, edges included (so edge clamping is checked too).
func TestAgainstReference(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	for _, s := range sizes {
		for _, c := range []int{1, 3, 4} {
			src := make([]float32, s.w*s.h*c)
			for i := range src {
				src[i] = r.Float32()
			}
			// A bright edge column and row make clamping matter.
			for y := 0; y < s.h; y++ {
				for ch := 0; ch < c; ch++ {
					src[(y*s.w)*c+ch] = 5
				}
			}
			for x := 0; x < s.w*c; x++ {
				src[(s.h-1)*s.w*c+x] = -3
			}
			got := Lanczos3(src, s.w, s.h, c, s.dw, s.dh)
			want := reference(src, s.w, s.h, c, s.dw, s.dh)
			for i := range want {
				if math.Abs(float64(got[i])-want[i]) > 2e-5 {
					t.Fatalf("%v c=%d: out[%d] = %v, reference %v", s, c, i, got[i], want[i])
				}
			}
		}
	}
}

func TestConstant(t *testing.T) {
	for _, c := range []int{1, 3, 4} {
		for _, s := range sizes {
			src := make([]float32, s.w*s.h*c)
			for i := range src {
				src[i] = []float32{0.25, 0.7, 1.3, 0.01}[i%c]
			}
			out := Lanczos3(src, s.w, s.h, c, s.dw, s.dh)
			if len(out) != s.dw*s.dh*c {
				t.Fatalf("len = %d", len(out))
			}
			for i, v := range out {
				want := []float32{0.25, 0.7, 1.3, 0.01}[i%c]
				if math.Abs(float64(v-want)) > 1e-6 {
					t.Fatalf("c=%d %v: out[%d] = %v, want %v", c, s, i, v, want)
				}
			}
		}
	}
}

// TestLinearRamp checks that ramps in x and y stay linear away from the
// edges, at the right position. The Lanczos-3 kernel sampled at a
// fractional phase has a small non-zero first moment (up to ≈0.02 input
// pixels at phase 0.25 when upscaling, where the kernel is not stretched;
// far less when downscaling), so the tolerance is a position error in input
// pixels: 0.025 upscaling, 0.005 downscaling. A half-pixel misalignment or
// a wrong scale fails by far.
func TestLinearRamp(t *testing.T) {
	for _, s := range sizes[:5] {
		const c = 3
		// Channel value = a + gx·x + gy·y (x, y in input pixels).
		gx := []float64{1 / float64(s.w), 0, 0.3 / float64(s.w)}
		gy := []float64{0, 1 / float64(s.h), -0.2 / float64(s.h)}
		a := []float64{0, 0, 0.5}
		src := make([]float32, s.w*s.h*c)
		for y := 0; y < s.h; y++ {
			for x := 0; x < s.w; x++ {
				for ch := 0; ch < c; ch++ {
					src[(y*s.w+x)*c+ch] = float32(a[ch] + gx[ch]*float64(x) + gy[ch]*float64(y))
				}
			}
		}
		out := Lanczos3(src, s.w, s.h, c, s.dw, s.dh)
		sx, sy := float64(s.w)/float64(s.dw), float64(s.h)/float64(s.dh)
		tolX, tolY := 0.005, 0.005
		if sx < 1 {
			tolX = 0.025
		}
		if sy < 1 {
			tolY = 0.025
		}
		mx := int(math.Ceil(3*max(sx, 1)/sx)) + 1 // output pixels reached by the edge
		my := int(math.Ceil(3*max(sy, 1)/sy)) + 1
		checked := 0
		maxErr := 0.0
		for y := my; y < s.dh-my; y++ {
			for x := mx; x < s.dw-mx; x++ {
				fx := (float64(x)+0.5)*sx - 0.5 // input coordinate of the centre
				fy := (float64(y)+0.5)*sy - 0.5
				for ch := 0; ch < c; ch++ {
					want := a[ch] + gx[ch]*fx + gy[ch]*fy
					got := float64(out[(y*s.dw+x)*c+ch])
					tol := tolX*math.Abs(gx[ch]) + tolY*math.Abs(gy[ch]) + 1e-6
					if e := math.Abs(got - want); e > tol {
						t.Fatalf("%v: (%d,%d,%d) = %v, want %v (error %.3g > %.3g)", s, x, y, ch, got, want, e, tol)
					} else if e/tol > maxErr {
						maxErr = e / tol
					}
				}
				checked++
			}
		}
		if checked == 0 {
			t.Errorf("%v: no interior pixel checked", s)
		}
		t.Logf("%v: %d pixels, max error %.2f of tolerance", s, checked, maxErr)
	}
}

func TestEnergyDownscale(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	const w, h, c = 640, 480, 3
	src := make([]float32, w*h*c)
	var in float64
	for i := range src {
		src[i] = r.Float32()
		in += float64(src[i])
	}
	in /= float64(len(src))
	for _, d := range [][2]int{{320, 240}, {100, 75}, {33, 17}} {
		out := Lanczos3(src, w, h, c, d[0], d[1])
		var m float64
		for _, v := range out {
			m += float64(v)
		}
		m /= float64(len(out))
		if rel := math.Abs(m-in) / in; rel > 0.005 {
			t.Errorf("%v: mean %v, input %v (%.3f%%)", d, m, in, 100*rel)
		}
	}
}

// TestDownscaleFilters checks that downscaling low-pass filters: a
// checkerboard at the input Nyquist frequency averages out, rather than
// aliasing as an unscaled kernel would.
func TestDownscaleFilters(t *testing.T) {
	const w, h = 400, 300
	src := make([]float32, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			src[y*w+x] = float32((x + y) % 2)
		}
	}
	out := Lanczos3(src, w, h, 1, 57, 43)
	for i, v := range out {
		if math.Abs(float64(v)-0.5) > 0.02 {
			t.Fatalf("out[%d] = %v, want ≈0.5", i, v)
		}
	}
}

func TestDeterministic(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	const w, h, c = 301, 203, 3
	src := make([]float32, w*h*c)
	for i := range src {
		src[i] = r.Float32()
	}
	prev := runtime.GOMAXPROCS(1)
	one := Lanczos3(src, w, h, c, 111, 77)
	runtime.GOMAXPROCS(max(4, prev))
	many := Lanczos3(src, w, h, c, 111, 77)
	runtime.GOMAXPROCS(prev)
	for i := range one {
		if one[i] != many[i] {
			t.Fatalf("out[%d]: %v (1 proc) != %v (many)", i, one[i], many[i])
		}
	}
}

func TestIdentityAndPanics(t *testing.T) {
	src := []float32{1, 2, 3, 4, 5, 6}
	out := Lanczos3(src, 2, 3, 1, 2, 3)
	for i := range src {
		if out[i] != src[i] {
			t.Fatalf("identity changed %v -> %v", src, out)
		}
	}
	out[0] = 9
	if src[0] != 1 {
		t.Error("identity result aliases src")
	}
	for _, f := range []func(){
		func() { Lanczos3(src, 2, 3, 1, 0, 3) },
		func() { Lanczos3(src, 3, 3, 1, 2, 2) },
		func() { Lanczos3(src, 2, 3, 0, 2, 2) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		}()
	}
}

func TestFitLongEdge(t *testing.T) {
	for _, tc := range []struct{ w, h, long, dw, dh int }{
		{6000, 4000, 512, 512, 341},
		{4000, 6000, 512, 341, 512},
		{6000, 4000, 2048, 2048, 1365},
		{6000, 4000, 6000, 6000, 4000},
		{6000, 4000, 8000, 6000, 4000}, // never upscale
		{300, 200, 3, 3, 2},
		{3000, 1, 100, 100, 1}, // min 1
		{1, 3000, 100, 1, 100}, // min 1
		{1000, 1000, 10, 10, 10},
		{5, 3, 2, 2, 1}, // 1.2 → 1
		{4, 3, 2, 2, 2}, // 1.5 → 2 (halves up)
		{6000, 4000, 0, 6000, 4000},
		{0, 10, 5, 0, 0},
	} {
		if dw, dh := FitLongEdge(tc.w, tc.h, tc.long); dw != tc.dw || dh != tc.dh {
			t.Errorf("FitLongEdge(%d, %d, %d) = %d, %d, want %d, %d", tc.w, tc.h, tc.long, dw, dh, tc.dw, tc.dh)
		}
	}
}

func randImage(w, h, c int) []float32 {
	r := rand.New(rand.NewSource(3))
	src := make([]float32, w*h*c)
	for i := range src {
		src[i] = r.Float32()
	}
	return src
}

func TestLargeTo512(t *testing.T) {
	if testing.Short() {
		t.Skip("24 MP")
	}
	const w, h, c = 6000, 4000, 3
	dw, dh := FitLongEdge(w, h, 512)
	if dw != 512 || dh != 341 {
		t.Fatalf("FitLongEdge = %d×%d", dw, dh)
	}
	src := randImage(w, h, c)
	for _, out := range [][]float32{Lanczos3(src, w, h, c, dw, dh), Downscale(src, w, h, c, dw, dh)} {
		if len(out) != dw*dh*c {
			t.Fatalf("len = %d", len(out))
		}
	}
}

func BenchmarkLanczos24MPTo2048(b *testing.B) {
	const w, h, c = 6000, 4000, 3
	src := randImage(w, h, c)
	dw, dh := FitLongEdge(w, h, 2048)
	b.SetBytes(int64(len(src) * 4))
	for b.Loop() {
		Lanczos3(src, w, h, c, dw, dh)
	}
}

func BenchmarkLanczos24MPTo512(b *testing.B) {
	const w, h, c = 6000, 4000, 3
	src := randImage(w, h, c)
	dw, dh := FitLongEdge(w, h, 512)
	b.SetBytes(int64(len(src) * 4))
	for b.Loop() {
		Lanczos3(src, w, h, c, dw, dh)
	}
}

// smoothImage is a w×h×3 image of a few sinusoids well below the output
// Nyquist frequency of the sizes it is used with, plus a sharp-edged
// bright square (detail the resampler must keep in place).
func smoothImage(w, h int) []float32 {
	src := make([]float32, w*h*3)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			fx, fy := float64(x)/float64(w), float64(y)/float64(h)
			v := [3]float64{
				0.4 + 0.3*math.Sin(2*math.Pi*3*fx)*math.Cos(2*math.Pi*2*fy),
				0.3 + 0.2*math.Sin(2*math.Pi*(5*fx+4*fy)),
				0.2 + 0.15*math.Cos(2*math.Pi*7*fy),
			}
			if fx > 0.3 && fx < 0.5 && fy > 0.4 && fy < 0.7 {
				v[0] += 0.5
			}
			for ch := range 3 {
				src[(y*w+x)*3+ch] = float32(v[ch])
			}
		}
	}
	return src
}

// TestDownscaleMatchesLanczos3: with the box reduction, a strong downscale
// stays within 0.4 % (RMS) and 3 % (worst pixel, at the square's edges) of
// full-range of the pure Lanczos-3 result; a sign or alignment error in the
// reduction (half a box off) fails by far.
func TestDownscaleMatchesLanczos3(t *testing.T) {
	for _, s := range []struct{ w, h, dw, dh int }{
		{1200, 800, 100, 67},   // k = 6
		{1203, 797, 128, 85},   // partial boxes at both edges
		{1000, 1000, 240, 240}, // k = 2
		{900, 600, 400, 267},   // below 2·ReducingGap: pure Lanczos-3
	} {
		src := smoothImage(s.w, s.h)
		want := Lanczos3(src, s.w, s.h, 3, s.dw, s.dh)
		got := Downscale(src, s.w, s.h, 3, s.dw, s.dh)
		var sq, worst float64
		for i := range want {
			d := math.Abs(float64(got[i] - want[i]))
			sq += d * d
			worst = max(worst, d)
		}
		rms := math.Sqrt(sq / float64(len(want)))
		t.Logf("%v: RMS %.5f, worst %.4f", s, rms, worst)
		if rms > 0.004 || worst > 0.03 {
			t.Errorf("%v: differs from Lanczos3 by RMS %.5f, worst %.4f", s, rms, worst)
		}
		if s.w/s.dw < 2*ReducingGap && worst != 0 {
			t.Errorf("%v: no reduction due, yet the result differs from Lanczos3", s)
		}
	}
}

// TestDownscaleRampAndConstant: constants stay exact (partial boxes
// included) and a ramp lands where the output pixel's centre maps to,
// within 0.005 output pixels (the Lanczos kernel's first moment at
// fractional phases, on the reduced grid); half a box off (5 input
// pixels, 0.25 output pixels) fails by far.
func TestDownscaleRampAndConstant(t *testing.T) {
	const w, h, dw, dh = 1003, 601, 50, 30
	src := make([]float32, w*h*3)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			src[(y*w+x)*3] = 0.7
			src[(y*w+x)*3+1] = float32(x) / w
			src[(y*w+x)*3+2] = float32(y) / h
		}
	}
	out := Downscale(src, w, h, 3, dw, dh)
	sx, sy := float64(w)/dw, float64(h)/dh
	for y := 2; y < dh-2; y++ {
		for x := 2; x < dw-2; x++ {
			p := out[(y*dw+x)*3:]
			fx, fy := ((float64(x)+0.5)*sx-0.5)/w, ((float64(y)+0.5)*sy-0.5)/h
			if math.Abs(float64(p[0])-0.7) > 1e-6 || math.Abs(float64(p[1])-fx) > 0.005*sx/w || math.Abs(float64(p[2])-fy) > 0.005*sy/h {
				t.Fatalf("(%d,%d) = %v, want 0.7, %v, %v", x, y, p[:3], fx, fy)
			}
		}
	}
	for i := 0; i < len(out); i += 3 {
		if math.Abs(float64(out[i])-0.7) > 1e-6 {
			t.Fatalf("out[%d] = %v, want 0.7", i, out[i])
		}
	}
}

// TestDownscaleFiltersChecker: a checkerboard at the input Nyquist
// frequency averages out as it does with Lanczos3.
func TestDownscaleFiltersChecker(t *testing.T) {
	const w, h = 1001, 703
	src := make([]float32, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			src[y*w+x] = float32((x + y) % 2)
		}
	}
	for i, v := range Downscale(src, w, h, 1, 57, 40) {
		if math.Abs(float64(v)-0.5) > 0.02 {
			t.Fatalf("out[%d] = %v, want ≈0.5", i, v)
		}
	}
}

func BenchmarkDownscale24MPTo512(b *testing.B) {
	const w, h, c = 6000, 4000, 3
	src := randImage(w, h, c)
	dw, dh := FitLongEdge(w, h, 512)
	b.SetBytes(int64(len(src) * 4))
	for b.Loop() {
		Downscale(src, w, h, c, dw, dh)
	}
}

// BenchmarkDownscalePreviewTo512: a 1440×960 preview decoded at half
// size (720×480) to a 512 px thumbnail, the source=preview variant's
// resize; and the band-wise Rows of a 3000×2000 half-size decode to
// 2048 px, the half-size tier's.
func BenchmarkDownscalePreviewTo512(b *testing.B) {
	src := randImage(720, 480, 3)
	dw, dh := FitLongEdge(720, 480, 512)
	for b.Loop() {
		Downscale(src, 720, 480, 3, dw, dh)
	}
}

func BenchmarkRowsHalfTo2048(b *testing.B) {
	const w, h, c = 3000, 2000, 3
	src := randImage(w, h, c)
	dw, dh := FitLongEdge(w, h, 2048)
	out := make([]float32, dw*dh*c)
	for b.Loop() {
		r := NewRows(w, h, c, dw, dh, func(y int) []float32 { return out[y*dw*c : (y+1)*dw*c] })
		for y := 0; y < h; y += 32 {
			r.Push(src[y*w*c : min(y+32, h)*w*c])
		}
	}
}
