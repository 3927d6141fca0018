package denoise

// The noise reduction's kernels in their straightforward form, under ref
// names: the guard's neighbour range with the float builtins over the
// shrunk detail of three rows made for each row, per-column index tables
// for the colour interpolation, a square root per value, the B3 taps as
// constants. TestKernelsMatchReference and TestRowKernelsMatchReference
// hold the fast kernels (and Wavelet and the Denoiser built on them) to
// these.

import (
	"math"
	"slices"

	"github.com/rawbatch/rawbatch/pipeline/internal/par"
)

// refWavelet is Wavelet on the reference kernels.
func refWavelet(pix []float32, w, h int, strength float64) Noise {
	return waveletOn(waveletKernels{split: refSplit, shrinkPlane: refShrinkPlane, merge: refMerge,
		planes: func(n int) []float32 { return make([]float32, n) }}, pix, w, h, strength)
}

// refSplit writes the stabilised luminance of pix (w×h×3) into y (w×h) and
// the 2×2 box means of its colour differences into q1, q2 ((w+1)/2 ×
// (h+1)/2; an odd last row or column is averaged with itself).
func refSplit(pix []float32, w, h int, y, q1, q2 []float32) {
	hw, hh := (w+1)/2, (h+1)/2
	par.Rows(hh, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			q1r, q2r := q1[r*hw:][:hw], q2[r*hw:][:hw]
			clear(q1r)
			clear(q2r)
			for _, row := range [2]int{2 * r, min(2*r+1, h-1)} {
				refSplitRow(pix[3*row*w:][:3*w], y[row*w:][:w], q1r, q2r, 0)
			}
		}
	})
}

// refSplitRow is refSplit's work on one full-resolution row src (3·w, RGB): its
// stabilised luminance into yr (w), a quarter of its colour differences
// added to the half-resolution rows q1r, q2r ((w+px+1)/2): column x to
// half column (x+px)/2, a column without a partner (an odd last one;
// with px 1, column 0) counted twice. A half-resolution row is its two
// full rows added in order onto zeros (the last row twice when h is
// odd). px is 0 for refWavelet's grid, 1 for that grid seen mirrored in x
// (Turn).
func refSplitRow(src, yr, q1r, q2r []float32, px int) {
	w := len(yr)
	src = src[:3*w]
	for x := range yr {
		q := src[3*x : 3*x+3 : 3*x+3]
		vr, vg, vb := refStab(q[0]), refStab(q[1]), refStab(q[2])
		yr[x] = (vr + vg + vb) / 3
		c1, c2 := (vr-vg)*0.25, (vb-vg)*0.25
		k := (x + px) / 2
		q1r[k] += c1
		q2r[k] += c2
		if x == w-1 && (w+px)%2 == 1 || x == 0 && px == 1 {
			q1r[k] += c1
			q2r[k] += c2
		}
	}
}

// refMerge writes into pix (w×h×3) the linear RGB of the luminance y (w×h)
// and the colour differences q1, q2 (hw×hh, refSplit's grid: half-resolution
// pixel (x, y) centred on full-resolution 2x+0.5, 2y+0.5) interpolated
// bilinearly, edges replicated: the inverse of refSplit's transform (a
// stabilised value below 0 is taken as 0, so black comes back as 0).
func refMerge(y, q1, q2 []float32, hw, hh int, pix []float32, w, h int) {
	cols := refMergeColumns(w, hw, 0)
	par.Rows(h, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			a0, a1, ty := refMergeRows(r, hh, 0)
			a0, a1 = a0*hw, a1*hw
			refMergeRow(y[r*w:][:w], q1[a0:a0+hw], q1[a1:a1+hw], q2[a0:a0+hw], q2[a1:a1+hw], cols, ty, pix[3*r*w:][:3*w])
		}
	})
}

// refMergeCols are refMerge's half-resolution neighbours and weights of each
// full-resolution column, the same on every row.
type refMergeCols struct {
	xa, xb []int32
	txs    []float32
}

// refMergeColumns returns them for w columns of which hw half columns were
// made with phase px (refSplitRow).
func refMergeColumns(w, hw, px int) refMergeCols {
	xa, xb, txs := make([]int32, w), make([]int32, w), make([]float32, w)
	for x := range txs {
		fx := (float32(x+px) - 0.5) / 2
		x0 := int(fx+1) - 1 // floor for fx ≥ −1
		txs[x] = fx - float32(x0)
		xa[x], xb[x] = int32(max(x0, 0)), int32(min(x0+1, hw-1))
	}
	return refMergeCols{xa, xb, txs}
}

// refMergeRows returns the half-resolution rows a0, a1 (of hh, made with
// phase py) that full row r interpolates between, and the weight ty of
// a1.
func refMergeRows(r, hh, py int) (a0, a1 int, ty float32) {
	fy := (float32(r+py) - 0.5) / 2
	y0 := int(fy+1) - 1 // floor for fy ≥ −1
	return max(y0, 0), min(y0+1, hh-1), fy - float32(y0)
}

// refMergeRow is refMerge's row: the luminance row yr and the colour rows a0
// (q1a, q2a) and a1 (q1b, q2b) of weight ty, into dst (3·w).
func refMergeRow(yr, q1a, q1b, q2a, q2b []float32, c refMergeCols, ty float32, dst []float32) {
	dst = dst[:3*len(yr)]
	xa, xb, txs := c.xa[:len(yr)], c.xb[:len(yr)], c.txs[:len(yr)]
	for x := range yr {
		ia, ib, tx := xa[x], xb[x], txs[x]
		c1 := refBilerp(q1a[ia], q1a[ib], q1b[ia], q1b[ib], tx, ty)
		c2 := refBilerp(q2a[ia], q2a[ib], q2b[ia], q2b[ib], tx, ty)
		g := yr[x] - (c1+c2)/3
		q := dst[3*x : 3*x+3 : 3*x+3]
		q[0], q[1], q[2] = refUnstab(g+c1), refUnstab(g), refUnstab(g+c2)
	}
}

func refBilerp(p00, p01, p10, p11, tx, ty float32) float32 {
	top := p00 + tx*(p01-p00)
	bot := p10 + tx*(p11-p10)
	return top + ty*(bot-top)
}

// refStab is the stabilising transform √(max(x,0)+ε).
func refStab(x float32) float32 { return float32(math.Sqrt(float64(refPos(x) + Epsilon))) }

func refUnstab(v float32) float32 {
	v = refPos(v)
	return refPos(v*v - Epsilon)
}

// refPos is max(x, 0) (NaN stays NaN, −0 gives +0) with a branch instead of
// the builtin's branch-free sequence: the values it sees are nearly all
// positive, so the branch is predicted.
func refPos(x float32) float32 {
	if x > 0 || x != x {
		return x
	}
	return 0
}

// refShrinkPlane denoises the w×h plane whose pixel i is p[i·stride] (a
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
func refShrinkPlane(p []float32, stride int, a, b, g []float32, w, h, levels int, k float64) float64 {
	var sigma0 float64
	var t20 float32      // the first level's squared threshold
	cur, cs := p, stride // the smooth image of the level being refSplit
	for j := range levels {
		step := 1 << j
		sigma := refLevelNoise(cur, cs, w, h, step)
		if j == 0 {
			sigma0 = sigma
		}
		t2 := refLevelThreshold(j, sigma, sigma0, k)
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
			// isolated coefficients (refGuardRow), goes into p in the next
			// level's pass.
			par.Rows(h, func(lo, hi int) {
				tmp := make([]float32, w)
				for y := lo; y < hi; y++ {
					refBlurRow(cur, cs, w, h, y, step, tmp, next[y*w:(y+1)*w])
				}
			})
			par.Rows(h, func(lo, hi int) {
				for i := lo * w; i < hi*w; i++ {
					g[i] = refGarrote(p[i*stride]-next[i], t2)
				}
			})
			if levels == 1 {
				par.Rows(h, func(lo, hi int) {
					d := make([]float32, w)
					for y := lo; y < hi; y++ {
						refGuardRow(g, w, h, y, d, guardMargin*float32(math.Sqrt(float64(t2))))
						for x := range d {
							p[(y*w+x)*stride] = d[x] + next[y*w+x]
						}
					}
				})
			}
		default:
			par.Rows(h, func(lo, hi int) {
				tmp := make([]float32, w)
				var d0 []float32
				if j == 1 {
					d0 = make([]float32, w)
				}
				for y := lo; y < hi; y++ {
					nr := next[y*w : (y+1)*w]
					refBlurRow(cur, 1, w, h, y, step, tmp, nr)
					row := cur[y*w : (y+1)*w]
					if j == 1 {
						refGuardRow(g, w, h, y, d0, guardMargin*float32(math.Sqrt(float64(t20))))
					}
					if stride == 1 {
						refAddDetail(p[y*w:(y+1)*w], row, nr, d0, last, t2)
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
							v := acc[x*stride] + refGarrote(row[x]-nr[x], t2)
							acc[x*stride] = v + nr[x]
						}
						continue
					}
					for x := range row {
						acc[x*stride] += refGarrote(row[x]-nr[x], t2)
					}
				}
			})
		}
		cur, cs = next, 1
	}
	return sigma0
}

// refLevelThreshold is the squared threshold (k·σ)² of level j whose measured
// noise is sigma, σ_0 being sigma0: above level 0, σ is at most
// maxCorrelation times white noise's share of σ_0 at that level.
func refLevelThreshold(j int, sigma, sigma0, k float64) float32 {
	if j > 0 {
		sigma = min(sigma, maxCorrelation*sigma0*whiteNoise[j]/whiteNoise[0])
	}
	return float32(k * sigma * k * sigma)
}

// refAddDetail is a row of refShrinkPlane's pass of a level after the first on a
// plane of stride 1: it adds to acc (a row of the sum) the level's shrunk
// detail, row (the row of the level's input) minus nr (of its smoothing),
// with squared threshold t2. With d0 (the second level's pass: the first
// level's shrunk, guarded detail of the row), acc is first replaced by
// d0; with last, nr (the last smooth image) is added too.
func refAddDetail(acc, row, nr, d0 []float32, last bool, t2 float32) {
	acc, nr = acc[:len(row)], nr[:len(row)]
	switch {
	case d0 != nil && last:
		d0 = d0[:len(row)]
		for x, c := range row {
			v := d0[x] + refGarrote(c-nr[x], t2)
			acc[x] = v + nr[x]
		}
	case d0 != nil:
		d0 = d0[:len(row)]
		for x, c := range row {
			acc[x] = d0[x] + refGarrote(c-nr[x], t2)
		}
	case last:
		for x, c := range row {
			v := acc[x] + refGarrote(c-nr[x], t2)
			acc[x] = v + nr[x]
		}
	default:
		for x, c := range row {
			acc[x] += refGarrote(c-nr[x], t2)
		}
	}
}

// refGuardRow writes into out (w) row y of the finest level's shrunk detail
// s (a w×h plane) with each coefficient limited to the range of its eight
// neighbours' (and 0) widened by m on each side: a coefficient the
// refGarrote kept whose neighbours it shrank to about nothing is an isolated
// spike (noise far out in its tail, a hot photosite), which would stay as
// a single-pixel speckle on an otherwise smoothed area, whereas an edge or
// a line has neighbours along it with coefficients as large. Borders are
// mirrored. The rule is that of a hot-pixel filter (a value beyond its
// neighbours' range is brought back to it), applied to the detail only;
// refShrinkPlane's m is guardMargin times the level's threshold.
func refGuardRow(s []float32, w, h, y int, out []float32, m float32) {
	up := s[refMirror(y-1, h)*w:][:w]
	mid := s[y*w:][:w]
	dn := s[refMirror(y+1, h)*w:][:w]
	refGuardRows(up, mid, dn, out, m)
}

// refGuardRows is refGuardRow from the rows above (up), of (mid) and below (dn)
// the row, with margin m.
func refGuardRows(up, mid, dn, out []float32, m float32) {
	w := len(mid)
	up, dn, out = up[:w], dn[:w], out[:w]
	for x, v := range mid {
		xl, xr := refMirror(x-1, w), refMirror(x+1, w)
		lo := min(up[xl], up[x], up[xr], mid[xl], mid[xr], dn[xl], dn[x], dn[xr], 0)
		hi := max(up[xl], up[x], up[xr], mid[xl], mid[xr], dn[xl], dn[x], dn[xr], 0)
		out[x] = min(max(v, lo-m), hi+m)
	}
}

// refGarrote is the non-negative refGarrote shrinkage of coefficient d with
// squared threshold t2: d − t2/d when d² > t2, else 0.
func refGarrote(d, t2 float32) float32 {
	// max(d², 1e-30) with a branch (d² is rarely that small, so it is
	// predicted); the shrinkage itself branch-free (max): noise makes
	// d² > t2 unpredictable.
	dd := d * d
	if dd < 1e-30 {
		dd = 1e-30
	}
	return d * max(0, 1-t2/dd)
}

// refBlurRow writes row y of the B3-spline smoothing of the w×h plane
// whose pixel i is src[i·stride], with holes of step pixels, into out,
// using tmp (w floats) for the vertical pass; borders are mirrored.
func refBlurRow(src []float32, stride, w, h, y, step int, tmp, out []float32) {
	n := (w-1)*stride + 1
	var r [5][]float32
	for i := range r {
		r[i] = src[refMirror(y+(i-2)*step, h)*w*stride:][:n]
	}
	refBlurRows(r, stride, w, step, tmp, out)
}

// refBlurRows is refBlurRow from the rows it reads: r[i] the row y+(i−2)·step
// (mirrored), each of w pixels i at r[i][i·stride].
func refBlurRows(r [5][]float32, stride, w, step int, tmp, out []float32) {
	n := (w-1)*stride + 1
	r0, r1, r2, r3, r4 := r[0][:n], r[1][:n], r[2][:n], r[3][:n], r[4][:n]
	if stride == 1 {
		tmp, r0, r1, r3, r4 := tmp[:n], r0[:n], r1[:n], r3[:n], r4[:n]
		for x, c := range r2 {
			tmp[x] = (r0[x]+r4[x])*(1.0/16) + (r1[x]+r3[x])*(4.0/16) + c*(6.0/16)
		}
	} else {
		for x := range tmp {
			i := x * stride
			tmp[x] = (r0[i]+r4[i])*(1.0/16) + (r1[i]+r3[i])*(4.0/16) + r2[i]*(6.0/16)
		}
	}
	s2 := 2 * step
	lo, hi := min(s2, w), max(w-s2, min(s2, w))
	for x := 0; x < lo; x++ {
		out[x] = refEdgeTap(tmp, w, x, step)
	}
	if m := hi - lo; m > 0 {
		// lo = s2 and hi = w − s2 here: every tap inside.
		t0, t1, t2 := tmp[lo-s2:][:m], tmp[lo-step:][:m], tmp[lo:][:m]
		t3, t4, o := tmp[lo+step:][:m], tmp[lo+s2:][:m], out[lo:][:m]
		for x, c := range t2 {
			o[x] = (t0[x]+t4[x])*(1.0/16) + (t1[x]+t3[x])*(4.0/16) + c*(6.0/16)
		}
	}
	for x := hi; x < w; x++ {
		out[x] = refEdgeTap(tmp, w, x, step)
	}
}

// refEdgeTap is the horizontal B3 tap of refBlurRow at column x near a border.
func refEdgeTap(tmp []float32, w, x, step int) float32 {
	s2 := 2 * step
	return (tmp[refMirror(x-s2, w)]+tmp[refMirror(x+s2, w)])*(1.0/16) +
		(tmp[refMirror(x-step, w)]+tmp[refMirror(x+step, w)])*(4.0/16) + tmp[x]*(6.0/16)
}

// refMirror reflects i into [0, n) about the edges (…, 2, 1, 0, 1, 2, …).
func refMirror(i, n int) int {
	if n == 1 {
		return 0
	}
	for i < 0 || i >= n {
		if i < 0 {
			i = -i
		}
		if i >= n {
			i = 2*(n-1) - i
		}
	}
	return i
}

// refMaxSamples bounds the pixels refLevelNoise samples: the median of 16384
const refMaxSamples = 1 << 14

// refLevelNoise estimates the noise σ of the detail of the w×h plane whose
// pixel i is src[i·stride] at hole spacing step: MAD/0.6745 of the detail
// coefficients (the plane minus its B3 smoothing) on a regular grid of at
// most refMaxSamples pixels (refSampleEvery).
func refLevelNoise(src []float32, stride, w, h, step int) float64 {
	every := refSampleEvery(w, h)
	n := (w-1)*stride + 1
	xs := refSampleAt(w, every, false)
	d := make([]float32, 0, len(xs)*(h/every+1))
	for _, y := range refSampleAt(h, every, false) {
		var r [5][]float32
		for i := range r {
			r[i] = src[refMirror(y+(i-2)*step, h)*w*stride:][:n]
		}
		d = refSampleRow(d, r, stride, w, step, xs)
	}
	return refMadSigma(d)
}

// refSampleAt returns the grid positions along an axis of n pixels, in
// increasing order: every/2 + i·every, or with rev the same positions
// counted from the other end (n−1 − every/2 − i·every: the grid of the
// image seen mirrored).
func refSampleAt(n, every int, rev bool) []int {
	var p []int
	for i := every / 2; i < n; i += every {
		p = append(p, i)
	}
	if rev {
		for k, i := range p {
			p[k] = n - 1 - i
		}
		slices.Reverse(p)
	}
	return p
}

// refSampleEvery is refLevelNoise's grid spacing for a w×h plane: the smallest
// with at most refMaxSamples pixels; the grid's rows and columns are
// every/2 + i·every.
func refSampleEvery(w, h int) int {
	every := 1
	for (w/every)*(h/every) > refMaxSamples {
		every++
	}
	return every
}

// refSampleRow appends to d the absolute detail coefficients of refLevelNoise's
// grid points on one row (at columns xs), r being the rows it reads as in
// refBlurRows.
func refSampleRow(d []float32, r [5][]float32, stride, w, step int, xs []int) []float32 {
	k := [5]float32{1.0 / 16, 4.0 / 16, 6.0 / 16, 4.0 / 16, 1.0 / 16}
	for _, x := range xs {
		var s float32
		for i := range 5 {
			var row float32
			for m := range 5 {
				row += k[m] * r[i][refMirror(x+(m-2)*step, w)*stride]
			}
			s += k[i] * row
		}
		v := r[2][x*stride] - s
		d = append(d, max(v, -v))
	}
	return d
}

// refMadSigma is MAD/0.6745 of the absolute coefficients d (reordered), 0
// for none.
func refMadSigma(d []float32) float64 {
	if len(d) == 0 {
		return 0
	}
	return float64(refNth(d, len(d)/2)) / 0.6745
}

// refNth returns the k-th smallest value of d (0-based: what d[k] is after
// sorting d), reordering d: Hoare's selection with a median-of-three
// pivot, linear on average instead of the sort's n·log n (the median of
// refLevelNoise's MAD).
func refNth(d []float32, k int) float32 {
	lo, hi := 0, len(d)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if d[mid] < d[lo] {
			d[mid], d[lo] = d[lo], d[mid]
		}
		if d[hi] < d[lo] {
			d[hi], d[lo] = d[lo], d[hi]
		}
		if d[hi] < d[mid] {
			d[hi], d[mid] = d[mid], d[hi]
		}
		p := d[mid]
		i, j := lo, hi
		for i <= j {
			for d[i] < p {
				i++
			}
			for d[j] > p {
				j--
			}
			if i <= j {
				d[i], d[j] = d[j], d[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return d[k]
		}
	}
	return d[k]
}

// guardMargin is how far, in thresholds of the finest level, a shrunk
// coefficient may lie beyond its neighbours' range (refGuardRows): 0.5 keeps
// the flat-patch noise near what the refGarrote alone leaves (0.13× of the
// input against 0.17×, TestCandidates; 0.07× with no margin, a change of
// the strength's calibration) while no pixel of a flat mid-grey patch at
