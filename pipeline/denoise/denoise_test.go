package denoise

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Poisson-Gaussian noise of the test images: a signal x (1 = white) is
// photonGain·x photons (variance x/photonGain in x), plus Gaussian read
// noise readSigma: at x = 0.18 σ = √(0.18/600 + 0.004²) ≈ 0.0180, about
// what a full-frame sensor gives at ISO 6400.
const (
	photonGain = 600
	readSigma  = 0.004
)

// noisy returns the linear value x with Poisson-Gaussian noise (the
// Poisson part by its normal approximation: λ = photonGain·x ≥ 60 here).
func noisy(rng *rand.Rand, x float64) float32 {
	lam := photonGain * x
	return float32((lam+math.Sqrt(lam)*rng.NormFloat64())/photonGain + readSigma*rng.NormFloat64())
}

// stepImage is a w×h grey image (the same in the three channels, times
// tint) whose left half is lo and right half hi, with Poisson-Gaussian
// noise on each channel independently, and the clean image.
func stepImage(w, h int, lo, hi float64, tint [3]float64, seed uint64) (noisyPix, clean []float32) {
	rng := rand.New(rand.NewPCG(seed, 7))
	noisyPix, clean = make([]float32, 3*w*h), make([]float32, 3*w*h)
	for y := range h {
		for x := range w {
			v := lo
			if x >= w/2 {
				v = hi
			}
			for c := range 3 {
				i := 3*(y*w+x) + c
				clean[i] = float32(v * tint[c])
				noisyPix[i] = noisy(rng, v*tint[c])
			}
		}
	}
	return noisyPix, clean
}

// stats returns the mean and standard deviation of channel c of pix over
// the columns [x0, x1) of every row but the border ones.
func stats(pix []float32, w, h, c, x0, x1 int) (mean, sd float64) {
	var s, s2 float64
	var n int
	for y := 8; y < h-8; y++ {
		for x := x0; x < x1; x++ {
			v := float64(pix[3*(y*w+x)+c])
			s += v
			s2 += v * v
			n++
		}
	}
	mean = s / float64(n)
	return mean, math.Sqrt(max(s2/float64(n)-mean*mean, 0))
}

// edgeMeasure is what a denoise is judged by on the step image: the
// flat patch's standard deviation (the left half, away from the edge) and
// the step's contrast as the difference of the mean levels 2..6 pixels
// each side of the edge, averaged over the channels.
func edgeMeasure(pix []float32, w, h int) (sd, contrast float64) {
	for c := range 3 {
		_, s := stats(pix, w, h, c, 16, w/2-16)
		ml, _ := stats(pix, w, h, c, w/2-6, w/2-2)
		mr, _ := stats(pix, w, h, c, w/2+2, w/2+6)
		sd += s / 3
		contrast += (mr - ml) / 3
	}
	return sd, contrast
}

// TestWaveletHalvesNoiseKeepsEdge: on a Poisson-Gaussian noisy step
// (0.18 | 0.36, σ ≈ 0.018 on the flat side) at strength 1 the flat
// patch's standard deviation is at most half the noise's, the step keeps
// ≥ 90 % of its contrast, the mean level moves less than 1 %, and the
// measured luminance noise is the one put in (within 15 %).
func TestWaveletHalvesNoiseKeepsEdge(t *testing.T) {
	const w, h = 256, 192
	pix, clean := stepImage(w, h, 0.18, 0.36, [3]float64{1, 1, 1}, 1)
	sd0, c0 := edgeMeasure(pix, w, h)
	_, cClean := edgeMeasure(clean, w, h)
	noise := Wavelet(pix, w, h, 1)
	sd1, c1 := edgeMeasure(pix, w, h)
	t.Logf("flat σ %.5f → %.5f (%.2f×); contrast %.4f → %.4f (clean %.4f, %.1f %%); noise %+v, linear σ at 0.18 %.4f",
		sd0, sd1, sd1/sd0, c0, c1, cClean, 100*c1/cClean, noise, noise.LinearAt(0.18))
	if sd1 > sd0/2 {
		t.Errorf("flat patch σ %.5f → %.5f: not halved", sd0, sd1)
	}
	if c1 < 0.9*cClean {
		t.Errorf("step contrast %.4f of %.4f: under 90 %%", c1, cClean)
	}
	m, _ := stats(pix, w, h, 1, 16, w/2-16)
	if math.Abs(m-0.18)/0.18 > 0.01 {
		t.Errorf("flat mean %.5f, want 0.18 within 1 %%", m)
	}
	// The median of both halves: the noise at their mean level, of the
	// mean of three independent channels.
	want := math.Sqrt(0.27/photonGain+readSigma*readSigma) / math.Sqrt(3)
	if got := noise.LinearAt(0.27); math.Abs(got-want)/want > 0.15 {
		t.Errorf("measured luminance σ %.5f, put in %.5f", got, want)
	}
}

// TestWaveletZeroStrength: strength 0 leaves the image as it is.
func TestWaveletZeroStrength(t *testing.T) {
	const w, h = 64, 48
	pix, _ := stepImage(w, h, 0.18, 0.36, [3]float64{0.5, 1, 0.7}, 2)
	orig := append([]float32(nil), pix...)
	Wavelet(pix, w, h, 0)
	for i := range pix {
		if pix[i] != orig[i] {
			t.Fatalf("pixel %d: %g → %g", i, orig[i], pix[i])
		}
	}
}

// TestWaveletColourNoise: chroma is smoothed more than luminance: the
// standard deviation of R−G on a flat tinted patch falls further than
// that of the luminance.
func TestWaveletColourNoise(t *testing.T) {
	const w, h = 128, 128
	pix, _ := stepImage(w, h, 0.2, 0.2, [3]float64{0.6, 1, 0.8}, 3)
	diff := func(p []float32) (lum, chroma float64) {
		var s, s2, c, c2 float64
		for i := 0; i < w*h; i++ {
			y := float64(p[3*i]+p[3*i+1]+p[3*i+2]) / 3
			d := float64(p[3*i] - p[3*i+1])
			s, s2, c, c2 = s+y, s2+y*y, c+d, c2+d*d
		}
		n := float64(w * h)
		return math.Sqrt(s2/n - s*s/n/n), math.Sqrt(c2/n - c*c/n/n)
	}
	l0, ch0 := diff(pix)
	Wavelet(pix, w, h, 1)
	l1, ch1 := diff(pix)
	t.Logf("luminance σ %.5f → %.5f, R−G σ %.5f → %.5f", l0, l1, ch0, ch1)
	if ch1/ch0 >= l1/l0 {
		t.Errorf("R−G noise fell to %.2f×, luminance to %.2f×: chroma should fall further", ch1/ch0, l1/l0)
	}
}

// TestMirror: borders reflect without repeating the edge pixel.
func TestMirror(t *testing.T) {
	for _, c := range []struct{ i, n, want int }{{-1, 5, 1}, {-2, 5, 2}, {5, 5, 3}, {6, 5, 2}, {-9, 5, 1}, {3, 1, 0}, {2, 5, 2}} {
		if got := mirror(c.i, c.n); got != c.want {
			t.Errorf("mirror(%d, %d) = %d, want %d", c.i, c.n, got, c.want)
		}
	}
}
