package denoise

// Wavelet, the noise reduction on the whole image at once, and the
// functions only it uses. The conversion runs the row-by-row NoiseMeter
// and Denoiser, built on the same row functions (splitRow, mergeRow,
// blurRows, sampleRow, sumDetails' garrote and guard); the tests hold
// them to Wavelet bit for bit (TestNoiseMeterMatchesWavelet,
// TestDenoiserMatchesWavelet), and Wavelet in turn to refWavelet
// (reference_test.go).

import (
	"math"
	"sync"

	"github.com/rawbatch/rawbatch/pipeline/internal/par"
	"github.com/rawbatch/rawbatch/pipeline/internal/thp"
)

// Wavelet denoises pix (w×h×3 float32, interleaved, linear, 1 = white) in
// place with the given strength (0 or less: pix is left as it is and the
// Noise is zero; 1: the thresholds LumaK and ChromaK times the measured
// noise; larger smooths more) and returns the noise it measured. Each
// pixel is stabilised (v = √(max(x,0)+ε) per channel) and split into the
// luminance Y = (vR+vG+vB)/3 and the colour differences C1 = vR−vG,
// C2 = vB−vG. Y is shrunk at full resolution through LumaLevels levels;
// C1 and C2 at half resolution (2×2 box means: colour detail of one pixel
// is not seen, and there is a quarter of the work) through ChromaLevels−1
// levels, then brought back by bilinear interpolation when the pixels are
// put together again. pix itself is the scratch space of the levels (its
// pixels are all held in the planes meanwhile), so Wavelet allocates only
// the planes: 6 bytes a pixel. It runs on up to GOMAXPROCS
// goroutines over row bands; the result does not depend on their number.
// It panics if len(pix) < 3·w·h. The conversion runs its row-by-row form,
// NoiseMeter then Denoiser, which gives its noise and pixels bit for bit
// in rings of rows (TestNoiseMeterMatchesWavelet,
// TestDenoiserMatchesWavelet): Wavelet is their reference.
func Wavelet(pix []float32, w, h int, strength float64) Noise {
	return waveletOn(waveletKernels{split: split, shrinkPlane: shrinkPlane, merge: merge, planes: thp.Floats}, pix, w, h, strength)
}

// waveletKernels are the whole-image steps a Wavelet runs: the fast ones
// (Wavelet) or the reference ones (refWavelet).
type waveletKernels struct {
	split       func(pix []float32, w, h int, y, q1, q2 []float32)
	shrinkPlane func(p []float32, stride int, a, b, g []float32, w, h, levels int, k float64) float64
	merge       func(y, q1, q2 []float32, hw, hh int, pix []float32, w, h int)
	planes      func(n int) []float32
}

// waveletOn is Wavelet with the steps k: the luminance and the two
// colour differences split into planes, each shrunk (pix the levels'
// scratch), and put back together.
func waveletOn(k waveletKernels, pix []float32, w, h int, strength float64) Noise {
	n := w * h
	if n == 0 || strength <= 0 {
		return Noise{}
	}
	pix = pix[:3*n]
	hw, hh := (w+1)/2, (h+1)/2
	m := hw * hh
	y, q1, q2 := k.planes(n), k.planes(m), k.planes(m)
	k.split(pix, w, h, y, q1, q2)
	var noise Noise
	noise.Luma = k.shrinkPlane(y, 1, pix[n:2*n], pix[2*n:], pix[:n], w, h, LumaLevels, LumaK*strength)
	noise.Chroma1 = k.shrinkPlane(q1, 1, pix[:m], pix[m:2*m], pix[2*m:3*m], hw, hh, ChromaLevels-1, ChromaK*strength)
	noise.Chroma2 = k.shrinkPlane(q2, 1, pix[:m], pix[m:2*m], pix[2*m:3*m], hw, hh, ChromaLevels-1, ChromaK*strength)
	k.merge(y, q1, q2, hw, hh, pix, w, h)
	return noise
}

// split writes the stabilised luminance of pix (w×h×3) into y (w×h) and
// the 2×2 box means of its colour differences into q1, q2 ((w+1)/2 ×
// (h+1)/2; an odd last row or column is averaged with itself).
func split(pix []float32, w, h int, y, q1, q2 []float32) {
	hw, hh := (w+1)/2, (h+1)/2
	par.Rows(hh, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			q1r, q2r := q1[r*hw:][:hw], q2[r*hw:][:hw]
			clear(q1r)
			clear(q2r)
			for _, row := range [2]int{2 * r, min(2*r+1, h-1)} {
				splitRow(pix[3*row*w:][:3*w], y[row*w:][:w], q1r, q2r, 0, nil)
			}
		}
	})
}

// merge writes into pix (w×h×3) the linear RGB of the luminance y (w×h)
// and the colour differences q1, q2 (hw×hh, split's grid: half-resolution
// pixel (x, y) centred on full-resolution 2x+0.5, 2y+0.5) interpolated
// bilinearly, edges replicated: the inverse of split's transform (a
// stabilised value below 0 is taken as 0, so black comes back as 0).
func merge(y, q1, q2 []float32, hw, hh int, pix []float32, w, h int) {
	cols := mergeColumns(w, hw, 0)
	par.Rows(h, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			a0, a1, ty := mergeRows(r, hh, 0)
			a0, a1 = a0*hw, a1*hw
			mergeRow(y[r*w:][:w], q1[a0:a0+hw], q1[a1:a1+hw], q2[a0:a0+hw], q2[a1:a1+hw], cols, ty, pix[3*r*w:][:3*w])
		}
	})
}

// shrinkPlane denoises the w×h plane whose pixel i is p[i·stride] (a
// channel of an interleaved image, or a plane with stride 1) in place
// through levels of the à trous transform, with thresholds k·σ_j; a and b
// are w×h scratch planes. It returns σ_0, the noise of the finest level.
//
// p is the input of the first level's smoothing and the sum of the shrunk
// details and the last smooth image: a level's row is added to p as soon
// as it is computed, except for the first level's, which waits for the
// second level's pass (its smoothing reads p's neighbouring rows), and the
// last smooth image is added in the last level's pass, so there are
// levels passes over the plane (levels+2 when levels is 1).
func shrinkPlane(p []float32, stride int, a, b, g []float32, w, h, levels int, k float64) float64 {
	var sigma0 float64
	var t20 float32      // the first level's squared threshold
	cur, cs := p, stride // the smooth image of the level being split
	// Row buffers and guard rings, reused from band to band.
	rows := sync.Pool{New: func() any { return make([]float32, w) }}
	rings := sync.Pool{New: func() any { return newGuardRing(w) }}
	gKeys := floatKeys(g, w)
	for j := range levels {
		step := 1 << j
		sigma := levelNoise(cur, cs, w, h, step)
		if j == 0 {
			sigma0 = sigma
		}
		t2 := levelThreshold(j, sigma, sigma0, k)
		next := a
		if j > 0 && &cur[0] == &a[0] {
			next = b
		}
		last := j == levels-1
		switch {
		case j == 0:
			t20 = t2
			// p is both the input and the sum: smooth all of it first,
			// then its shrunk detail into g; the detail, guarded against
			// isolated coefficients (guardKeys), goes into p in the next
			// level's pass.
			par.Rows(h, func(lo, hi int) {
				tmp := rows.Get().([]float32)
				defer rows.Put(tmp)
				for y := lo; y < hi; y++ {
					blurRow(cur, cs, w, h, y, step, tmp, next[y*w:(y+1)*w])
				}
			})
			par.Rows(h, func(lo, hi int) {
				for i := lo * w; i < hi*w; i++ {
					g[i] = garrote(p[i*stride]-next[i], t2)
				}
			})
			if levels == 1 {
				par.Rows(h, func(lo, hi int) {
					d := rows.Get().([]float32)
					defer rows.Put(d)
					ring := rings.Get().(*guardRing)
					defer rings.Put(ring)
					ring.reset()
					for y := lo; y < hi; y++ {
						ring.guard(y, h, gKeys, d, guardMargin*float32(math.Sqrt(float64(t2))))
						for x := range d {
							p[(y*w+x)*stride] = d[x] + next[y*w+x]
						}
					}
				})
			}
		default:
			par.Rows(h, func(lo, hi int) {
				tmp := rows.Get().([]float32)
				defer rows.Put(tmp)
				var d0 []float32
				var ring *guardRing
				if j == 1 {
					d0 = rows.Get().([]float32)
					defer rows.Put(d0)
					ring = rings.Get().(*guardRing)
					defer rings.Put(ring)
					ring.reset()
				}
				for y := lo; y < hi; y++ {
					nr := next[y*w : (y+1)*w]
					blurRow(cur, 1, w, h, y, step, tmp, nr)
					row := cur[y*w : (y+1)*w]
					if j == 1 {
						ring.guard(y, h, gKeys, d0, guardMargin*float32(math.Sqrt(float64(t20))))
					}
					if stride == 1 {
						addDetail(p[y*w:(y+1)*w], row, nr, d0, last, t2)
						continue
					}
					acc := p[y*w*stride : (y*w+w-1)*stride+1]
					if j == 1 {
						// The first level's guarded shrunk detail.
						for x := range row {
							acc[x*stride] = d0[x]
						}
					}
					if last {
						for x := range row {
							v := acc[x*stride] + garrote(row[x]-nr[x], t2)
							acc[x*stride] = v + nr[x]
						}
						continue
					}
					for x := range row {
						acc[x*stride] += garrote(row[x]-nr[x], t2)
					}
				}
			})
		}
		cur, cs = next, 1
	}
	return sigma0
}

// addDetail is a row of shrinkPlane's pass of a level after the first on a
// plane of stride 1: it adds to acc (a row of the sum) the level's shrunk
// detail, row (the row of the level's input) minus nr (of its smoothing),
// with squared threshold t2. With d0 (the second level's pass: the first
// level's shrunk, guarded detail of the row), acc is first replaced by
// d0; with last, nr (the last smooth image) is added too.
func addDetail(acc, row, nr, d0 []float32, last bool, t2 float32) {
	acc, nr = acc[:len(row)], nr[:len(row)]
	switch {
	case d0 != nil && last:
		d0 = d0[:len(row)]
		for x, c := range row {
			v := d0[x] + garrote(c-nr[x], t2)
			acc[x] = v + nr[x]
		}
	case d0 != nil:
		d0 = d0[:len(row)]
		for x, c := range row {
			acc[x] = d0[x] + garrote(c-nr[x], t2)
		}
	case last:
		for x, c := range row {
			v := acc[x] + garrote(c-nr[x], t2)
			acc[x] = v + nr[x]
		}
	default:
		for x, c := range row {
			acc[x] += garrote(c-nr[x], t2)
		}
	}
}

// floatKeys fills keys from the rows of a w-wide plane s of shrunk
// coefficients.
func floatKeys(s []float32, w int) func(r int, p, n []uint32) {
	return func(r int, p, n []uint32) {
		row := s[r*w:][:w]
		p, n = p[:w], n[:w]
		for x, v := range row {
			p[x], n[x] = signKeys(v)
		}
	}
}

// blurRow writes row y of the B3-spline smoothing of the w×h plane
// whose pixel i is src[i·stride], with holes of step pixels, into out,
// using tmp (w floats) for the vertical pass; borders are mirrored.
func blurRow(src []float32, stride, w, h, y, step int, tmp, out []float32) {
	n := (w-1)*stride + 1
	var r [5][]float32
	for i := range r {
		r[i] = src[mirror(y+(i-2)*step, h)*w*stride:][:n]
	}
	blurRows(r, stride, w, step, tmp, out)
}

// levelNoise estimates the noise σ of the detail of the w×h plane whose
// pixel i is src[i·stride] at hole spacing step: MAD/0.6745 of the detail
// coefficients (the plane minus its B3 smoothing) on a regular grid of at
// most maxSamples pixels (sampleEvery).
func levelNoise(src []float32, stride, w, h, step int) float64 {
	every := sampleEvery(w, h)
	n := (w-1)*stride + 1
	xs := sampleAt(w, every, false)
	d := make([]float32, 0, len(xs)*(h/every+1))
	for _, y := range sampleAt(h, every, false) {
		var r [5][]float32
		for i := range r {
			r[i] = src[mirror(y+(i-2)*step, h)*w*stride:][:n]
		}
		d = sampleRow(d, r, stride, w, step, xs)
	}
	return madSigma(d)
}
