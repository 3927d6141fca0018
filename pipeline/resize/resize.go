// Package resize resamples interleaved float32 images.
//
// The filter is the Lanczos-3 windowed sinc (C. E. Duchon, "Lanczos
// filtering in one and two dimensions", J. Applied Meteorology 18 (1979)
// 1016–1022; K. Turkowski, "Filters for common resampling tasks", Graphics
// Gems I (1990)):
//
//	L(x) = sinc(x) · sinc(x/a)  for |x| < a,   0 otherwise,   a = 3,
//	sinc(x) = sin(πx) / (πx),   sinc(0) = 1.
//
// It is applied separably, as is usual for image resampling (e.g. Pillow,
// libvips, ImageMagick): a horizontal pass, then a vertical pass. Resample
// linear-light values: the filter has negative lobes, so outputs can fall
// slightly outside the input range near sharp edges (ringing); callers clip
// if they need to.
package resize

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/rawbatch/rawbatch/pipeline/internal/par"
	"github.com/rawbatch/rawbatch/pipeline/internal/thp"
)

// lobes is the Lanczos parameter a (number of lobes each side).
const lobes = 3

// kernel is L(x) for a = 3 (see the package documentation).
func kernel(x float64) float64 {
	x = math.Abs(x)
	if x >= lobes {
		return 0
	}
	if x < 1e-12 {
		return 1
	}
	px := math.Pi * x
	return lobes * math.Sin(px) * math.Sin(px/lobes) / (px * px)
}

// weights holds, for each output sample i, the contiguous input range
// [start[i], start[i]+n[i]) and its weights w[off[i]:off[i]+n[i]].
type weights struct {
	start, n, off []int
	w             []float32
	// tileSpan is the most input samples under hTile consecutive
	// outputs (the horizontal kernel's block of source columns).
	tileSpan int
}

// makeWeights builds the 1-D Lanczos-3 resampling table from src to dst
// samples. Output sample i (centre at i+0.5 in output units) maps to input
// coordinate c = (i+0.5)·src/dst − 0.5. When downscaling (dst < src) the
// kernel is stretched by src/dst, so the support is ±3·src/dst input
// samples; when upscaling it is ±3. Weights are normalised to sum to 1
// (computed in float64). Taps outside [0, src) are clamped to the edge
// sample (their weight is added to sample 0 or src−1).
func makeWeights(src, dst int) weights { return makeWeightsExtent(src, float64(src), dst) }

// makeWeightsExtent is makeWeights for a source of src samples that spans
// extent sample widths of the output grid's coordinate system: output
// sample i maps to input coordinate (i+0.5)·extent/dst − 0.5. extent
// differs from src only after a box reduction whose last box is partial
// (see Downscale); taps are still clamped to [0, src).
func makeWeightsExtent(src int, extent float64, dst int) weights {
	scale := float64(dst) / extent
	filterScale := min(1, scale) // kernel argument multiplier
	support := lobes / filterScale
	t := weights{start: make([]int, dst), n: make([]int, dst), off: make([]int, dst)}
	tmp := make([]float64, 0, int(2*support)+3)
	for i := 0; i < dst; i++ {
		c := (float64(i)+0.5)/scale - 0.5
		lo := int(math.Ceil(c - support))
		hi := int(math.Floor(c + support))
		if lo == hi+1 { // cannot happen for support ≥ 3; keep one tap
			hi = lo
		}
		tmp = tmp[:0]
		var sum float64
		for j := lo; j <= hi; j++ {
			v := kernel((float64(j) - c) * filterScale)
			tmp = append(tmp, v)
			sum += v
		}
		// Fold the taps outside the image onto the edge samples.
		a, b := max(lo, 0), min(hi, src-1)
		if a > b { // the whole support is outside (impossible for c in range)
			a = min(max(lo, 0), src-1)
			b = a
		}
		ws := make([]float64, b-a+1)
		for j := lo; j <= hi; j++ {
			k := min(max(j, a), b) - a
			ws[k] += tmp[j-lo]
		}
		// Drop zero taps at both ends (kernel zeros at the support edge).
		for len(ws) > 1 && ws[0] == 0 {
			ws = ws[1:]
			a++
		}
		for len(ws) > 1 && ws[len(ws)-1] == 0 {
			ws = ws[:len(ws)-1]
		}
		t.start[i], t.n[i], t.off[i] = a, len(ws), len(t.w)
		sum = 0
		for _, v := range ws {
			sum += v
		}
		var s32 float64
		for _, v := range ws {
			f := float32(v / sum)
			t.w = append(t.w, f)
			s32 += float64(f)
		}
		// Put the float32 rounding residual on the largest tap so that the
		// stored weights sum to 1 as closely as float32 allows.
		big := t.off[i]
		for k := t.off[i]; k < t.off[i]+len(ws); k++ {
			if math.Abs(float64(t.w[k])) > math.Abs(float64(t.w[big])) {
				big = k
			}
		}
		t.w[big] = float32(float64(t.w[big]) + (1 - s32))
	}
	// Eight floats past the last tap: the vector kernel loads the
	// weights eight at a time.
	t.w = append(t.w, make([]float32, 8)...)
	for x0 := 0; x0 < dst; x0 += hTile {
		lo, hi := t.start[x0], 0
		for x := x0; x < min(x0+hTile, dst); x++ {
			lo, hi = min(lo, t.start[x]), max(hi, t.start[x]+t.n[x])
		}
		t.tileSpan = max(t.tileSpan, hi-lo)
	}
	return t
}

// Lanczos3 resamples src, an interleaved image of w×h pixels with c
// channels (len(src) = w·h·c, row-major, float32, linear light), to dw×dh
// pixels with a separable Lanczos-3 filter and returns the new
// dw·dh·c slice.
//
// A horizontal pass (src → intermediate of dw×h×c) is followed by a vertical
// pass (→ dw×dh×c); a pass whose size does not change is skipped (the
// Lanczos kernel is then the identity). Pixel centres are aligned
// (output x ↦ input (x+0.5)·w/dw − 0.5); when downscaling the kernel is
// widened by the scale factor (support ±3·w/dw input pixels) so that it
// low-pass filters; weights are normalised to sum to 1; pixels outside the
// image take the value of the nearest edge pixel. Arithmetic is float32
// (weights are computed in float64 and rounded). Rows are processed in
// parallel by up to GOMAXPROCS goroutines; every output value is computed
// by the same sequence of operations regardless of scheduling, so the
// result is deterministic.
//
// Lanczos3 panics if w, h, c, dw or dh is not positive or len(src) is not
// w·h·c.
func Lanczos3(src []float32, w, h, c int, dw, dh int) []float32 {
	if w <= 0 || h <= 0 || c <= 0 || dw <= 0 || dh <= 0 {
		panic(fmt.Sprintf("resize: invalid sizes %dx%dx%d -> %dx%d", w, h, c, dw, dh))
	}
	if len(src) != w*h*c {
		panic(fmt.Sprintf("resize: len(src) = %d, want %d×%d×%d = %d", len(src), w, h, c, w*h*c))
	}
	return lanczos3(src, w, h, c, float64(w), float64(h), dw, dh)
}

// lanczos3 is Lanczos3 for a source of w×h samples spanning ew×eh sample
// widths (see makeWeightsExtent).
func lanczos3(src []float32, w, h, c int, ew, eh float64, dw, dh int) []float32 {
	tmp := src
	if dw != w || ew != float64(w) {
		tmp = thp.Floats(dw * h * c)
		hw := makeWeightsExtent(w, ew, dw)
		par.Rows(h, func(lo, hi int) {
			dst, in := make([][]float32, hi-lo), make([][]float32, hi-lo)
			for y := lo; y < hi; y++ {
				dst[y-lo], in[y-lo] = tmp[y*dw*c:(y+1)*dw*c], src[y*w*c:(y+1)*w*c]
			}
			horizontalRows(dst, in, c, &hw)
		})
	}
	if dh == h && eh == float64(h) {
		if len(tmp) == len(src) && &tmp[0] == &src[0] {
			return append([]float32(nil), src...)
		}
		return tmp
	}
	out := thp.Floats(dw * dh * c)
	vw := makeWeightsExtent(h, eh, dh)
	rowLen := dw * c
	parallelRows(dh, func(y int) {
		s := vw.start[y]
		verticalRow(out[y*rowLen:(y+1)*rowLen], &vw, y, func(k int) []float32 { return tmp[(s+k)*rowLen : (s+k+1)*rowLen] })
	})
	return out
}

// ReducingGap is how much Lanczos-3 resampling Downscale keeps after its
// box reduction: the box factor k is the largest integer with
// (input size / output size) / k ≥ ReducingGap. 2.0 is the default of
// Pillow's Image.thumbnail (its reducing_gap, which calls Image.reduce and
// then resamples with the remaining factor); at 2 the result is visually
// indistinguishable from a pure Lanczos-3 pass (TestDownscaleMatchesLanczos3).
const ReducingGap = 2

// Downscale resamples src (interleaved w×h×c float32, linear light) to
// dw×dh like Lanczos3, but first averages k×k boxes of input pixels when the
// image shrinks by 2·ReducingGap or more on an axis, as Pillow's thumbnail
// and libvips' shrink-then-reduce do. The Lanczos-3 pass then works on an
// image k times smaller per axis with pixel centres kept on the original
// grid: output x still maps to input (x+0.5)·w/dw − 0.5. The last box of a
// row or column may be partial (w not a multiple of k); it averages the
// pixels it has. Cost: one pass over src plus a Lanczos-3 pass with
// 6·ReducingGap taps instead of 6·w/dw (24 MP → 512 px on one core: 0.13 s instead of 0.36 s,
// BenchmarkDownscale24MPTo512).
// It panics as Lanczos3 does.
func Downscale(src []float32, w, h, c int, dw, dh int) []float32 {
	if w <= 0 || h <= 0 || c <= 0 || dw <= 0 || dh <= 0 {
		panic(fmt.Sprintf("resize: invalid sizes %dx%dx%d -> %dx%d", w, h, c, dw, dh))
	}
	if len(src) != w*h*c {
		panic(fmt.Sprintf("resize: len(src) = %d, want %d×%d×%d = %d", len(src), w, h, c, w*h*c))
	}
	kx := max(1, int(float64(w)/float64(dw)/ReducingGap))
	ky := max(1, int(float64(h)/float64(dh)/ReducingGap))
	if kx == 1 && ky == 1 {
		return lanczos3(src, w, h, c, float64(w), float64(h), dw, dh)
	}
	red, rw, rh := boxReduce(src, w, h, c, kx, ky)
	return lanczos3(red, rw, rh, c, float64(w)/float64(kx), float64(h)/float64(ky), dw, dh)
}

// boxReduce averages kx×ky boxes of src (interleaved w×h×c) into a
// ceil(w/kx)×ceil(h/ky)×c image; boxes at the right and bottom edges may be
// partial and average the pixels they cover. Sums are float32 along one
// box row and float64 across rows.
func boxReduce(src []float32, w, h, c, kx, ky int) ([]float32, int, int) {
	rw, rh := (w+kx-1)/kx, (h+ky-1)/ky
	out := thp.Floats(rw * rh * c)
	parallelRows(rh, func(ry int) {
		y0, y1 := ry*ky, min(ry*ky+ky, h)
		acc := make([]float64, rw*c)
		for y := y0; y < y1; y++ {
			boxAddRow(acc, src[y*w*c:(y+1)*w*c], w, c, kx, 0, rw)
		}
		dst := out[ry*rw*c : (ry+1)*rw*c]
		for rx := 0; rx < rw; rx++ {
			n := float64((y1 - y0) * (min(rx*kx+kx, w) - rx*kx))
			for ch := 0; ch < c; ch++ {
				dst[rx*c+ch] = float32(acc[rx*c+ch] / n)
			}
		}
	})
	return out, rw, rh
}

// maxTaps is the most taps the vector vertical pass takes (a downscale
// by Downscale has at most 6·2·ReducingGap+1; Lanczos3 alone, by a large
// factor, more: those go tap by tap).
const maxTaps = 32

// verticalRow sets dst to output row y of the vertical pass with table
// t, row(k) being the input row of its tap k: the first tap's product,
// then each later tap's added in order, whole rows at once with the
// vector kernel where it runs, else tap by tap (axpy).
func verticalRow(dst []float32, t *weights, y int, row func(k int) []float32) {
	n, off := t.n[y], t.off[y]
	i := 0
	if vec && n <= maxTaps {
		var rows [maxTaps]unsafe.Pointer
		for k := range n {
			rows[k] = unsafe.Pointer(unsafe.SliceData(row(k)[:len(dst)]))
		}
		i = vecVertical(dst, &rows, n, t.w[off:])
	}
	for k := range n {
		axpy(dst[i:], row(k)[i:], t.w[off+k], k == 0)
	}
}

// axpy sets dst[i] = wt·row[i] (first) or adds wt·row[i] to dst[i]:
// one tap of the vertical pass, eight floats at a time where the vector
// kernel runs.
func axpy(dst, row []float32, wt float32, first bool) {
	i := vecAxpy(dst, row, wt, first)
	row = row[:len(dst)]
	if first {
		for ; i < len(dst); i++ {
			dst[i] = wt * row[i]
		}
		return
	}
	for ; i < len(dst); i++ {
		dst[i] += wt * row[i]
	}
}

// horizontalRows resamples rows src[i] into dst[i] (c channels) with
// table t: eight rows at a time with the vector kernel where it runs (3
// channels), the others one by one (horizontalRow); the values are the
// same either way.
func horizontalRows(dst, src [][]float32, c int, t *weights) {
	i := 0
	if vec && c == 3 && len(src) >= 8 {
		blk, ob := make([]uint32, 24*t.tileSpan), make([]uint32, 24*hTile)
		for ; i+8 <= len(src); i += 8 {
			vecHorizontal8(dst[i:i+8], src[i:i+8], t, blk, ob)
		}
	}
	for ; i < len(src); i++ {
		horizontalRow(dst[i], src[i], c, t)
	}
}

// horizontalRow resamples one row of pixels (c channels) with table t:
// each output value is its first tap's product, then each later tap's
// added in order.
func horizontalRow(dst, src []float32, c int, t *weights) {
	dw := len(t.start)
	switch c {
	case 3:
		for x := 0; x < dw; x++ {
			s, n, off := t.start[x], t.n[x], t.off[x]
			ws := t.w[off : off+n]
			px := src[3*s : 3*(s+n)]
			r, g, b := ws[0]*px[0], ws[0]*px[1], ws[0]*px[2]
			for k := 1; k < n; k++ {
				wt := ws[k]
				p := px[3*k : 3*k+3 : 3*k+3]
				r += wt * p[0]
				g += wt * p[1]
				b += wt * p[2]
			}
			d := dst[3*x : 3*x+3 : 3*x+3]
			d[0], d[1], d[2] = r, g, b
		}
	case 1:
		for x := 0; x < dw; x++ {
			s, n, off := t.start[x], t.n[x], t.off[x]
			ws := t.w[off : off+n]
			px := src[s : s+n]
			v := ws[0] * px[0]
			for k := 1; k < n; k++ {
				v += ws[k] * px[k]
			}
			dst[x] = v
		}
	default:
		for x := 0; x < dw; x++ {
			s, n, off := t.start[x], t.n[x], t.off[x]
			d := dst[c*x : c*x+c]
			for k := 0; k < n; k++ {
				wt := t.w[off+k]
				p := src[c*(s+k) : c*(s+k)+c]
				for ch := range d {
					if k == 0 {
						d[ch] = wt * p[ch]
					} else {
						d[ch] += wt * p[ch]
					}
				}
			}
		}
	}
}

// parallelRows calls f(y) for y in [0, n), rows shared among up to
// GOMAXPROCS goroutines (par.Rows).
func parallelRows(n int, f func(y int)) {
	par.Rows(n, func(lo, hi int) {
		for y := lo; y < hi; y++ {
			f(y)
		}
	})
}

// FitLongEdge returns the size that fits w×h within long pixels on its long
// edge, keeping the aspect ratio: the long edge becomes long and the short
// edge is round(short·long/longEdge) (halves round up), at least 1. It
// never upscales: if max(w, h) ≤ long, or long ≤ 0 (no limit), it returns
// w, h. Non-positive w or h give 0, 0.
func FitLongEdge(w, h, long int) (dw, dh int) {
	if w <= 0 || h <= 0 {
		return 0, 0
	}
	if long <= 0 || max(w, h) <= long {
		return w, h
	}
	scale := func(short, edge int) int {
		v := (int64(short)*int64(long)*2 + int64(edge)) / (2 * int64(edge))
		return int(max(v, 1))
	}
	if w >= h {
		return long, scale(h, w)
	}
	return scale(w, h), long
}

// Fit returns the size that fits w×h inside a boxW×boxH box keeping the
// aspect ratio (a side of 0 is unbounded; both 0 is no limit): the
// limiting side becomes the box's and the other is rounded as in
// FitLongEdge (at least 1). A long edge L is the box L×L, so Fit(w, h, L,
// L, false) equals FitLongEdge(w, h, L). Without upscale the image is never
// enlarged: when it already fits, Fit returns w, h. Non-positive w or h
// give 0, 0.
func Fit(w, h, boxW, boxH int, upscale bool) (dw, dh int) {
	if w <= 0 || h <= 0 {
		return 0, 0
	}
	boxW, boxH = max(boxW, 0), max(boxH, 0)
	if boxW == 0 && boxH == 0 {
		return w, h
	}
	scale := func(side, num, den int) int {
		v := (int64(side)*int64(num)*2 + int64(den)) / (2 * int64(den))
		return int(max(v, 1))
	}
	// Width-limited when boxW/w ≤ boxH/h (cross-multiplied, exact).
	if boxW > 0 && (boxH == 0 || int64(boxW)*int64(h) <= int64(boxH)*int64(w)) {
		if boxW >= w && !upscale {
			return w, h
		}
		return boxW, scale(h, boxW, w)
	}
	if boxH >= h && !upscale {
		return w, h
	}
	return scale(w, boxH, h), boxH
}

// Scale returns w×h scaled by percent/100, each side rounded to the
// nearest pixel and at least 1; without upscale a percent above 100 (or
// not above 0) returns w, h. Non-positive w or h give 0, 0.
func Scale(w, h int, percent float64, upscale bool) (dw, dh int) {
	if w <= 0 || h <= 0 {
		return 0, 0
	}
	if !(percent > 0) || (percent >= 100 && !upscale) {
		return w, h
	}
	f := func(s int) int { return max(1, int(math.Round(float64(s)*percent/100))) }
	return f(w), f(h)
}

// boxAddRow adds one source row (w pixels of c interleaved channels) to
// the box sums acc of output columns rx0 to rx1−1, each the sum of kx
// source pixels: float32 within the row (at most kx terms), float64 in
// acc across rows.
func boxAddRow(acc []float64, row []float32, w, c, kx, rx0, rx1 int) {
	for rx := rx0; rx < rx1; rx++ {
		a := acc[rx*c : rx*c+c]
		px := row[rx*kx*c : min(rx*kx+kx, w)*c]
		if c == 3 {
			var r, g, b float32
			for len(px) >= 3 {
				p := px[:3:3]
				r += p[0]
				g += p[1]
				b += p[2]
				px = px[3:]
			}
			a[0] += float64(r)
			a[1] += float64(g)
			a[2] += float64(b)
			continue
		}
		for i, v := range px {
			a[i%c] += float64(v)
		}
	}
}
