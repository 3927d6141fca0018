package denoise

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// kernelTolerance is how far, in linear units (1 = white), the noise
// reduction's pixels may lie from those of the reference kernels
// (reference_test.go): float rounding only. The kernels are meant to give
// the same numbers; 1e-6 is about 8 float32 ulps at white.
const kernelTolerance = 1e-6

// realisticNoisy is a w×h linear camera RGB image (1 = white) as a
// demosaic gives one at ISO 1600: a tinted gradient from deep shadow
// (0.002) to 0.6, a bright disc clipped at 1, a black patch (read noise
// only, so values below 0), fine lines (texture), with Poisson-Gaussian
// noise (2400 photoelectrons at white, read noise 0.002: σ ≈ 0.009 at
// 0.18) spatially correlated as a demosaic's is (each pixel's noise
// shares a third of its right and lower neighbours').
func realisticNoisy(w, h int, seed uint64) []float32 {
	const gain, read = 2400, 0.002
	rng := rand.New(rand.NewPCG(seed, 11))
	noise := make([]float64, 3*w*h)
	for i := range noise {
		noise[i] = rng.NormFloat64()
	}
	pix := make([]float32, 3*w*h)
	tint := [3]float64{0.55, 1, 0.75}
	for y := range h {
		for x := range w {
			v := 0.002 + 0.6*float64(x)/float64(max(w-1, 1))
			dx, dy := float64(x-w*3/4), float64(y-h/3)
			switch {
			case dx*dx+dy*dy < float64(h*h)/36:
				v = 1.3
			case x < w/5 && y > h*2/3:
				v = 0
			case y > h/2 && x%6 < 2:
				v *= 1.4
			}
			for c := range 3 {
				s := min(v*tint[c], 1.0)
				sd := math.Sqrt(s/gain + read*read)
				i := 3*(y*w+x) + c
				n := (noise[i] + noise[3*(y*w+(x+1)%w)+c]/3 + noise[3*(((y+1)%h)*w+x)+c]/3) / math.Sqrt(1+2.0/9)
				pix[i] = float32(s + sd*n)
			}
		}
	}
	return pix
}

// stored is pix as a two-pass stream's pass 2 reads it: 16-bit codes of
// 1/65535, clipped to [0, 1].
func stored(pix []float32) []float32 {
	out := make([]float32, len(pix))
	for i, v := range pix {
		out[i] = float32(math.Round(float64(min(max(v, 0), 1))*65535)) / 65535
	}
	return out
}

// maxDiff is the largest |a[i] − b[i]|.
func maxDiff(a, b []float32) float64 {
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

// TestKernelsMatchReference: Wavelet on the whole image and its streamed
// form (NoiseMeter, then Denoiser in bands) give the reference kernels'
// Wavelet (refWavelet) within kernelTolerance and its noise exactly, on a
// realistic ISO 1600 image of 256×192 (float rows with values below 0
// and above 1 for the whole image, 16-bit stored rows for the stream) at
// strengths 0.5 (ISO 1600's auto) and 2, and on odd and tiny sizes whose
// mirrored borders bounce. The denoise changes the image by far more
// than the tolerance, so a kernel that is off shows.
func TestKernelsMatchReference(t *testing.T) {
	sizes := append([][2]int{{256, 192}}, streamSizes...)
	for _, sz := range sizes {
		w, h := sz[0], sz[1]
		src := realisticNoisy(w, h, uint64(w*7+h))
		for _, st := range []float64{0.5, 2} {
			for k, in := range [][]float32{src, stored(src)} {
				want := slices.Clone(in)
				wn := refWavelet(want, w, h, st)
				if w == 256 && maxDiff(want, in) < 100*kernelTolerance {
					t.Fatalf("%d×%d strength %g: the reference changed the image by %g only", w, h, st, maxDiff(want, in))
				}
				got := slices.Clone(in)
				gn := Wavelet(got, w, h, st)
				if gn != wn {
					t.Errorf("%d×%d strength %g input %d: Wavelet's noise %+v, reference %+v", w, h, st, k, gn, wn)
				}
				if d := maxDiff(got, want); d > kernelTolerance {
					t.Errorf("%d×%d strength %g input %d: Wavelet's pixels up to %g from the reference's", w, h, st, k, d)
				} else if w == 256 {
					t.Logf("%d×%d strength %g input %d: Wavelet within %g of the reference", w, h, st, k, d)
				}
				if k == 0 {
					continue
				}
				for _, band := range []int{7, 64} {
					m := NewNoiseMeter(w, h, Turn{})
					for y := 0; y < h; y += band {
						m.Rows(y+band, func(y int) []float32 { return in[3*y*w : 3*(y+1)*w] })
					}
					l, _ := m.Levels()
					if l.Noise() != wn {
						t.Errorf("%d×%d band %d: meter's noise %+v, reference %+v", w, h, band, l.Noise(), wn)
					}
					pix := slices.Clone(in)
					d := NewDenoiser(w, h, st, l, Turn{})
					for y := 0; y < h; y += band {
						d.Rows(y+band, func(y int) []float32 { return pix[3*y*w : 3*(y+1)*w] })
					}
					if dd := maxDiff(pix, want); dd > kernelTolerance {
						t.Errorf("%d×%d strength %g band %d: Denoiser's pixels up to %g from the reference's", w, h, st, band, dd)
					} else if w == 256 {
						t.Logf("%d×%d strength %g band %d: Denoiser within %g of the reference", w, h, st, band, dd)
					}
				}
			}
		}
	}
}

// TestRowKernelsMatchReference: the row kernels the streamed form shares
// with Wavelet, on both colour grid phases (a turned stream's px = 1) and
// widths from 1 to 9 and 256, give the reference's numbers within
// kernelTolerance: splitRow (its luminance and the half rows it adds
// to), mergeRow, and the guard (guardRing over signKeys against
// refGuardRows, on coefficients with runs of zeros, both signs and
// spikes, margins 0 and > 0).
func TestRowKernelsMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	coef := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			switch rng.IntN(4) {
			case 0: // shrunk to nothing
			case 1:
				s[i] = float32(math.Copysign(0, -1))
			default:
				s[i] = float32(rng.NormFloat64() * 0.01)
				if rng.IntN(20) == 0 {
					s[i] *= 30
				}
			}
		}
		return s
	}
	for _, w := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 256} {
		src := realisticNoisy(w, 3, uint64(w))
		for px := range 2 {
			hw := (w + px + 1) / 2
			// splitRow: two full rows onto zeroed half rows, as split
			// does, through the square roots and through the table of
			// codes (on float rows, where it computes them, and on coded
			// rows).
			yr, q1, q2 := make([]float32, w), make([]float32, hw), make([]float32, hw)
			for k, coded := range []*codeStab{nil, stabCodes(), stabCodes()} {
				ry, r1, r2 := make([]float32, w), make([]float32, hw), make([]float32, hw)
				clear(q1)
				clear(q2)
				for r := range 2 {
					row := src[3*r*w : 3*(r+1)*w]
					if k == 2 {
						row = stored(row)
					}
					splitRow(row, yr, q1, q2, px, coded)
					refSplitRow(row, ry, r1, r2, px)
					if d := max(maxDiff(yr, ry), maxDiff(q1, r1), maxDiff(q2, r2)); d > kernelTolerance {
						t.Errorf("w %d px %d table %d: splitRow up to %g from the reference's", w, px, k, d)
					}
				}
			}
			// mergeRow at both vertical weights a row can have.
			c, rc := mergeColumns(w, hw, px), refMergeColumns(w, hw, px)
			for _, ty := range []float32{0.25, 0.75, 0} {
				dst, ref := make([]float32, 3*w), make([]float32, 3*w)
				q1b, q2b := coef(hw), coef(hw)
				for i := range q1b {
					q1b[i] += q1[i]
					q2b[i] += q2[i]
				}
				mergeRow(yr, q1, q1b, q2, q2b, c, ty, dst)
				refMergeRow(yr, q1, q1b, q2, q2b, rc, ty, ref)
				if d := maxDiff(dst, ref); d > kernelTolerance {
					t.Errorf("w %d px %d ty %g: mergeRow up to %g from the reference's", w, px, ty, d)
				}
			}
		}
		// The guard, over rows 0..h−1 of a plane in order (rows mirrored
		// at both ends), with one ring as the Denoiser's bands use it.
		for _, h := range []int{1, 2, 5} {
			s := coef(w * h)
			for _, m := range []float32{0, 0.004} {
				ring := newGuardRing(w)
				out, ref := make([]float32, w), make([]float32, w)
				for y := range h {
					ring.guard(y, h, floatKeys(s, w), out, m)
					refGuardRow(s, w, h, y, ref, m)
					if d := maxDiff(out, ref); d > kernelTolerance {
						t.Errorf("guard w %d h %d m %g row %d: up to %g from the reference's", w, h, m, y, d)
					}
				}
			}
		}
	}
}

// TestNonNegIsMax: nonNeg is the builtin max(q, 0) on every float32 but
// NaN (the garrote's 1 − t2/d² is never NaN for a number d), −0 and
// the infinities included.
func TestNonNegIsMax(t *testing.T) {
	for _, q := range []float32{1, 1e-30, 0, float32(math.Copysign(0, -1)), -1e-30, -2, 0.5, float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, -math.MaxFloat32} {
		if got, want := nonNeg(q), max(q, 0); math.Float32bits(got) != math.Float32bits(want) {
			t.Errorf("nonNeg(%v) = %v, max gives %v", q, got, want)
		}
	}
}

// TestCodeStabIsStab: the table's stab is stab, bit for bit, on every
// code's value, on values next to them (not codes: computed), and on
// values below 0, above 1, ±0 and NaN.
func TestCodeStabIsStab(t *testing.T) {
	tab := stabCodes()
	check := func(x float32) {
		got, want := tab.stab(x), refStab(x)
		if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Fatalf("stab(%v) from the table %v, computed %v", x, got, want)
		}
	}
	for c := range 65536 {
		x := float32(c) * codeScale
		check(x)
		check(math.Nextafter32(x, 2))
		check(math.Nextafter32(x, -1))
	}
	for _, x := range []float32{-1, -1e-6, float32(math.Copysign(0, -1)), 1.5, 70000, float32(math.Inf(1)), float32(math.NaN())} {
		check(x)
	}
}
