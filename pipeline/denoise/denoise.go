// Package denoise reduces the noise of, and sharpens, demosaiced linear
// camera RGB: W×H×3 float32, interleaved, rows top to bottom, 1.0 the
// white level of the decode (docs/denoise.md).
//
// Noise reduction is wavelet shrinkage on the à trous ("with holes")
// stationary wavelet transform with the B3-spline kernel [1 4 6 4 1]/16
// (Starck, Murtagh and Bijaoui, Image Processing and Data Analysis, 1998;
// the scheme of dcraw's wavelet_denoise, -n), applied after a square-root
// variance-stabilising transform (Anscombe 1948: the variance of Poisson
// shot noise becomes about constant) to one luminance and two
// colour-difference planes, each with its own noise estimate: the median
// absolute deviation of its wavelet coefficients, σ = MAD/0.6745 (Donoho
// and Johnstone 1994). The coefficients are shrunk by the non-negative
// garrote d·max(0, 1 − T²/d²) (Breiman 1995; Gao 1998), which keeps large
// coefficients (edges) almost as they are. The conversion runs it row by
// row in two passes (stream.go), holding rings of rows instead of the whole
// image: NoiseMeter measures the noise of every level, Denoiser shrinks
// with the thresholds it gives. The tests hold the two, bit for bit, to
// Wavelet, the same transform on the whole image at once
// (wavelet_ref_test.go).
//
// Capture sharpening (CaptureSharpen) is an unsharp mask of small radius
// on luminance, applied to the three channels as one gain per pixel (no
// colour fringes).
package denoise

import (
	"math"
	"slices"
	"sync"
)

// Epsilon is the offset of the variance-stabilising transform v = √(x + ε)
// (x linear, 1 = white): below about ε the transform is nearly linear, so
// read noise in deep shadows is not blown up.
const Epsilon = 2e-3

// Levels of the wavelet transform for luminance and for the two colour
// differences: hole spacings 1, 2, 4, 8 (and 16) pixels. Colour noise after
// demosaic is coarser than luminance noise, so chroma gets one level more.
const (
	LumaLevels   = 4
	ChromaLevels = 5 // the first of them is the 2×2 halving (splitRow)
)

// Threshold factors: T = strength · k · σ_j, σ_j the noise of level j, k
// LumaK for the luminance and ChromaK for the colour differences (colour
// can be smoothed much more than luminance before it shows). Chosen on the
// measurements in docs/denoise.md.
const (
	LumaK   = 1.6
	ChromaK = 3.0
)

// whiteNoise[j] is the standard deviation of the level-j detail of the
// B3-spline à trous transform of unit white noise (Starck et al. 1998,
// table 2.2): the ratio the per-level noise may reach at most, relative to
// level 0, times maxCorrelation.
var whiteNoise = [...]float64{0.889, 0.200, 0.086, 0.041, 0.020, 0.010}

// maxCorrelation bounds each level's measured noise σ_j by maxCorrelation ·
// σ_0 · whiteNoise[j]/whiteNoise[0]: demosaicked noise is spatially
// correlated (its coarse levels hold more than white noise would), but a
// level's MAD that exceeds even this holds texture, not noise.
const maxCorrelation = 3.0

// Noise is the measured noise (NoiseLevels.Noise): the noise standard
// deviation of the finest wavelet level in the stabilised domain
// (√(x+ε)), for the luminance (mean of the three stabilised channels) and
// for the colour differences R−G and B−G.
type Noise struct {
	Luma, Chroma1, Chroma2 float64
}

// LinearAt converts the stabilised luminance noise to the linear standard
// deviation of the luminance (R+G+B)/3 at signal level x (1 = white):
// σ_x ≈ 2·√(x+ε)·σ_v, σ_v = Luma/0.889 (the finest level's share of white
// noise). For example LinearAt(0.18) is the noise of a mid-grey patch.
func (n Noise) LinearAt(x float64) float64 {
	return 2 * math.Sqrt(x+Epsilon) * n.Luma / whiteNoise[0]
}

// splitRow splits one full-resolution row src (3·w, RGB): its
// stabilised luminance into yr (w), a quarter of its colour differences
// added to the half-resolution rows q1r, q2r ((w+px+1)/2): column x to
// half column (x+px)/2, a column without a partner (an odd last one;
// with px 1, column 0) counted twice. A half-resolution row is its two
// full rows added in order onto zeros (the last row twice when h is
// odd). px is 0 for the image's own grid (half column k holds columns
// 2k and 2k+1), 1 for that grid seen mirrored in x (Turn).
func splitRow(src, yr, q1r, q2r []float32, px int, coded *codeStab) {
	w := len(yr)
	src = src[:3*w]
	x := 0
	if px == 1 {
		// Column 0 alone in half column 0.
		y, c1, c2 := stab3(src[0:3:3], coded)
		yr[0] = y
		q1r[0] = q1r[0] + c1 + c1
		q2r[0] = q2r[0] + c2 + c2
		x = 1
	}
	// Columns x+2i and x+2i+1 into half column (x+px)/2+i, in that order.
	k := (x + px) / 2
	n := (w - x) / 2
	q1, q2 := q1r[k:k+n], q2r[k:k+n:k+n]
	ys, s := yr[x:x+2*n], src[3*x:3*(x+2*n)]
	// Four half columns at a time by the vector kernel (stab computed,
	// the table's values), the rest here.
	if v := vecSplit(s, ys, q1, q2); v > 0 {
		q1, q2, ys, s = q1[v:], q2[v:], ys[2*v:], s[6*v:]
	}
	if coded != nil {
		for i := range q1 {
			// stab3 of both pixels, written out (too large to be inlined).
			p := s[6*i : 6*i+6 : 6*i+6]
			ar, ag, ab := coded.stab(p[0]), coded.stab(p[1]), coded.stab(p[2])
			br, bg, bb := coded.stab(p[3]), coded.stab(p[4]), coded.stab(p[5])
			yy := ys[2*i : 2*i+2 : 2*i+2]
			yy[0], yy[1] = (ar+ag+ab)/3, (br+bg+bb)/3
			q1[i] = q1[i] + (ar-ag)*0.25 + (br-bg)*0.25
			q2[i] = q2[i] + (ab-ag)*0.25 + (bb-bg)*0.25
		}
	} else {
		for i := range q1 {
			p := s[6*i : 6*i+6 : 6*i+6]
			ar, ag, ab := stab(p[0]), stab(p[1]), stab(p[2])
			br, bg, bb := stab(p[3]), stab(p[4]), stab(p[5])
			yy := ys[2*i : 2*i+2 : 2*i+2]
			yy[0], yy[1] = (ar+ag+ab)/3, (br+bg+bb)/3
			q1[i] = q1[i] + (ar-ag)*0.25 + (br-bg)*0.25
			q2[i] = q2[i] + (ab-ag)*0.25 + (bb-bg)*0.25
		}
	}
	if x += 2 * n; x < w {
		// The last column alone in its half column.
		y, c1, c2 := stab3(src[3*x:3*x+3:3*x+3], coded)
		yr[x] = y
		k += n
		q1r[k] = q1r[k] + c1 + c1
		q2r[k] = q2r[k] + c2 + c2
	}
}

// stab3 is a pixel's (RGB) stabilised luminance and its quarter colour
// differences, splitRow's terms.
func stab3(q []float32, coded *codeStab) (y, c1, c2 float32) {
	var vr, vg, vb float32
	if coded != nil {
		vr, vg, vb = coded.stab(q[0]), coded.stab(q[1]), coded.stab(q[2])
	} else {
		vr, vg, vb = stab(q[0]), stab(q[1]), stab(q[2])
	}
	return (vr + vg + vb) / 3, (vr - vg) * 0.25, (vb - vg) * 0.25
}

// codeScale is the value of a code of 16-bit rows spanning [0, 1]: a
// streamed conversion's pass 2 gives the Denoiser its stored rows as
// float32(code)·codeScale.
const codeScale = float32(1.0 / 65535)

// codeStab is stab of every such value: stabCodes()[c] = stab(float32(c)
// · codeScale).
type codeStab [65536]float32

// stabCodes returns the table, made once (256 KiB).
var stabCodes = sync.OnceValue(func() *codeStab {
	t := new(codeStab)
	for c := range t {
		t[c] = stab(float32(c) * codeScale)
	}
	return t
})

// stab is stab(x), from the table when x is a code's value (the same
// number: the table holds stab of that very float32), else computed: a
// lookup instead of a square root for rows decoded from 16 bits.
func (t *codeStab) stab(x float32) float32 {
	c := int32(x*65535 + 0.5)
	if uint32(c) <= 65535 && float32(c)*codeScale == x {
		return t[uint16(c)]
	}
	return stab(x)
}

// mergeCols are the half-resolution neighbours and weights of each
// full-resolution column in mergeRow's interpolation, the same on every
// row; the columns from pair on come in pairs (pairs of them): columns
// pair+2i and pair+2i+1 lie between half columns half+i and half+i+1, at
// weights 1/4 and 3/4.
type mergeCols struct {
	xa, xb      []int32
	txs         []float32
	pair, pairs int
	half        int
}

// mergeColumns returns them for w columns of which hw half columns were
// made with phase px (splitRow).
func mergeColumns(w, hw, px int) mergeCols {
	xa, xb, txs := make([]int32, w), make([]int32, w), make([]float32, w)
	for x := range txs {
		fx := (float32(x+px) - 0.5) / 2
		x0 := int(fx+1) - 1 // floor for fx ≥ −1
		txs[x] = fx - float32(x0)
		xa[x], xb[x] = int32(max(x0, 0)), int32(min(x0+1, hw-1))
	}
	c := mergeCols{xa: xa, xb: xb, txs: txs}
	// The pairs: from the first column whose neighbours are two half
	// columns at weight 1/4, as long as that pattern holds (checked, not
	// assumed, so mergeRow's pairs use the very operands the table
	// gives).
	c.pair = 1 - px
	if c.pair < w {
		c.half = int(xa[c.pair])
	}
	for {
		x, k := c.pair+2*c.pairs, int32(c.half+c.pairs)
		if x+1 >= w || xa[x] != k || xb[x] != k+1 || txs[x] != 0.25 || xa[x+1] != k || xb[x+1] != k+1 || txs[x+1] != 0.75 {
			break
		}
		c.pairs++
	}
	return c
}

// mergeRows returns the half-resolution rows a0, a1 (of hh, made with
// phase py) that full row r interpolates between, and the weight ty of
// a1.
func mergeRows(r, hh, py int) (a0, a1 int, ty float32) {
	fy := (float32(r+py) - 0.5) / 2
	y0 := int(fy+1) - 1 // floor for fy ≥ −1
	return max(y0, 0), min(y0+1, hh-1), fy - float32(y0)
}

// mergeRow writes into dst (3·w) the linear RGB of a full row: the
// luminance row yr and the colour differences interpolated bilinearly
// (mergeColumns, mergeRows) between the half rows a0 (q1a, q2a) and a1
// (q1b, q2b), ty the weight of a1; the inverse of splitRow's transform (a
// stabilised value below 0 is taken as 0, so black comes back as 0).
func mergeRow(yr, q1a, q1b, q2a, q2b []float32, c mergeCols, ty float32, dst []float32) {
	w := len(yr)
	dst = dst[:3*w]
	xa, xb, txs := c.xa[:w], c.xb[:w], c.txs[:w]
	one := func(x int) {
		ia, ib, tx := xa[x], xb[x], txs[x]
		c1 := bilerp(q1a[ia], q1a[ib], q1b[ia], q1b[ib], tx, ty)
		c2 := bilerp(q2a[ia], q2a[ib], q2b[ia], q2b[ib], tx, ty)
		mergePixel(yr[x], c1, c2, dst[3*x:3*x+3:3*x+3])
	}
	for x := range min(c.pair, w) {
		one(x)
	}
	if n := c.pairs; n > 0 {
		h := c.half
		p1a, p1b, p2a, p2b := q1a[h:h+n+1], q1b[h:h+n+1], q2a[h:h+n+1], q2b[h:h+n+1]
		ys, d := yr[c.pair:c.pair+2*n], dst[3*c.pair:3*(c.pair+2*n)]
		for i := vecMergePairs(p1a, p1b, p2a, p2b, ys, d, n, ty); i < n; i++ {
			a1, b1, a2, b2 := p1a[i:i+2:i+2], p1b[i:i+2:i+2], p2a[i:i+2:i+2], p2b[i:i+2:i+2]
			y := ys[2*i : 2*i+2 : 2*i+2]
			o := d[6*i : 6*i+6 : 6*i+6]
			// mergePixel of both columns, written out (too large to be
			// inlined).
			c1 := bilerp(a1[0], a1[1], b1[0], b1[1], 0.25, ty)
			c2 := bilerp(a2[0], a2[1], b2[0], b2[1], 0.25, ty)
			g := y[0] - (c1+c2)/3
			o[0], o[1], o[2] = unstab(g+c1), unstab(g), unstab(g+c2)
			c1 = bilerp(a1[0], a1[1], b1[0], b1[1], 0.75, ty)
			c2 = bilerp(a2[0], a2[1], b2[0], b2[1], 0.75, ty)
			g = y[1] - (c1+c2)/3
			o[3], o[4], o[5] = unstab(g+c1), unstab(g), unstab(g+c2)
		}
	}
	for x := c.pair + 2*c.pairs; x < w; x++ {
		one(x)
	}
}

// mergePixel writes into q (RGB) the linear pixel of stabilised
// luminance y and colour differences c1, c2.
func mergePixel(y, c1, c2 float32, q []float32) {
	g := y - (c1+c2)/3
	q[0], q[1], q[2] = unstab(g+c1), unstab(g), unstab(g+c2)
}

func bilerp(p00, p01, p10, p11, tx, ty float32) float32 {
	top := p00 + tx*(p01-p00)
	bot := p10 + tx*(p11-p10)
	return top + ty*(bot-top)
}

// stab is the stabilising transform √(max(x,0)+ε).
func stab(x float32) float32 { return float32(math.Sqrt(float64(pos(x) + Epsilon))) }

func unstab(v float32) float32 {
	v = pos(v)
	return pos(v*v - Epsilon)
}

// pos is max(x, 0) (NaN stays NaN, −0 gives +0) with a branch instead of
// the builtin's branch-free sequence: the values it sees are nearly all
// positive, so the branch is predicted.
func pos(x float32) float32 {
	if x > 0 || x != x {
		return x
	}
	return 0
}

// levelThreshold is the squared threshold (k·σ)² of level j whose measured
// noise is sigma, σ_0 being sigma0: above level 0, σ is at most
// maxCorrelation times white noise's share of σ_0 at that level.
func levelThreshold(j int, sigma, sigma0, k float64) float32 {
	if j > 0 {
		sigma = min(sigma, maxCorrelation*sigma0*whiteNoise[j]/whiteNoise[0])
	}
	return float32(k * sigma * k * sigma)
}

// The guard of the finest level (sumDetails) limits each
// shrunk coefficient to the range of its eight neighbours' (and 0),
// widened by m on each side: a coefficient the garrote kept whose
// neighbours it shrank to about nothing is an isolated spike (noise far
// out in its tail, a hot photosite), which would stay as a single-pixel
// speckle on an otherwise smoothed area, whereas an edge or a line has
// neighbours along it with coefficients as large. Borders are mirrored.
// The rule is that of a hot-pixel filter (a value beyond its neighbours'
// range is brought back to it), applied to the detail only; m is
// guardMargin times the level's threshold.
//
// The neighbours' range [lo, hi] always holds 0, so it is −max of their
// negative parts and max of their positive parts, both non-negative
// floats, which order as their bits do: guardKeys takes the maxima on
// the bits (signKeys) with integer max, a compare and a conditional move,
// where the float builtins need NaN-aware sequences of several
// instructions each. The result is the same number (the sign of a zero
// aside).

// signKeys writes the parts of coefficient v that guardKeys compares:
// the bits of max(v, 0) and of max(−v, 0) (0 and 0 for ±0).
func signKeys(v float32) (p, n uint32) {
	b := math.Float32bits(v)
	neg := uint32(int32(b) >> 31)
	return b &^ neg, b & 0x7fffffff & neg
}

// guardKeys writes into out (w) the guarded coefficients of a row whose
// coefficients' keys (signKeys) are pm, nm, with the rows above (pu, nu)
// and below (pd, nd), each of w; margin m ≥ 0.
func guardKeys(pu, pm, pd, nu, nm, nd []uint32, out []float32, m float32) {
	w := len(pm)
	pu, pd, nu, nm, nd, out = pu[:w], pd[:w], nu[:w], nm[:w], nd[:w], out[:w]
	if w < 3 {
		for x := range w {
			out[x] = guardKey(pu, pm, pd, nu, nm, nd, x, m)
		}
		return
	}
	out[0] = guardKey(pu, pm, pd, nu, nm, nd, 0, m)
	x0 := 1 + vecGuard(pu, pm, pd, nu, nm, nd, out, m)
	// Sliding over the columns: the maxima of column x−1 (all three rows)
	// and of column x (above and below; all three), column x+1's made
	// each step.
	cp0, cn0 := max(pu[x0-1], pm[x0-1], pd[x0-1]), max(nu[x0-1], nm[x0-1], nd[x0-1])
	vp1, vn1 := max(pu[x0], pd[x0]), max(nu[x0], nd[x0])
	cp1, cn1 := max(vp1, pm[x0]), max(vn1, nm[x0])
	for x := x0; x < w-1; x++ {
		vp2, vn2 := max(pu[x+1], pd[x+1]), max(nu[x+1], nd[x+1])
		cp2, cn2 := max(vp2, pm[x+1]), max(vn2, nm[x+1])
		out[x] = clampKeys(pm[x], nm[x], max(cp0, vp1, cp2), max(cn0, vn1, cn2), m)
		cp0, cn0, vp1, vn1, cp1, cn1 = cp1, cn1, vp2, vn2, cp2, cn2
	}
	out[w-1] = guardKey(pu, pm, pd, nu, nm, nd, w-1, m)
}

// guardKey is guardKeys' coefficient x, neighbours mirrored at the
// borders (the coefficient itself is its own neighbour in a row of one).
func guardKey(pu, pm, pd, nu, nm, nd []uint32, x int, m float32) float32 {
	w := len(pm)
	xl, xr := mirror(x-1, w), mirror(x+1, w)
	hp := max(pu[xl], pu[x], pu[xr], pm[xl], pm[xr], pd[xl], pd[x], pd[xr])
	hn := max(nu[xl], nu[x], nu[xr], nm[xl], nm[xr], nd[xl], nd[x], nd[xr])
	return clampKeys(pm[x], nm[x], hp, hn, m)
}

// clampKeys is the coefficient of keys p, n limited to [−(hn+m), hp+m],
// hp and hn the keys of its neighbours' largest positive and negative
// parts: one of p, n is 0, so it is min(max(v,0), hi+m) − min(max(−v,0),
// −lo+m), each min of non-negative floats taken on their bits.
func clampKeys(p, n, hp, hn uint32, m float32) float32 {
	bp := min(p, math.Float32bits(math.Float32frombits(hp)+m))
	bn := min(n, math.Float32bits(math.Float32frombits(hn)+m))
	return math.Float32frombits(bp) - math.Float32frombits(bn)
}

// guardRing holds the keys (signKeys) of three rows of the finest level's
// shrunk detail, row r in slot r mod 3, so that guarding consecutive rows
// makes each row's keys once instead of three times.
type guardRing struct {
	p, n [3][]uint32
	row  [3]int // the row each slot holds, −1 none
}

func newGuardRing(w int) *guardRing {
	g := &guardRing{}
	for i := range 3 {
		g.p[i], g.n[i] = make([]uint32, w), make([]uint32, w)
	}
	g.reset()
	return g
}

// reset forgets the rows held (their detail is about to change, or
// another plane's comes).
func (g *guardRing) reset() { g.row = [3]int{-1, -1, -1} }

// slot returns the slot of row r, filling it with fill(r, p, n) (the
// keys of row r into p and n) unless it holds r already.
func (g *guardRing) slot(r int, fill func(r int, p, n []uint32)) int {
	i := r % 3
	if g.row[i] != r {
		fill(r, g.p[i], g.n[i])
		g.row[i] = r
	}
	return i
}

// guard writes into out row y of the guarded detail of a plane of h rows
// whose keys fill makes, margin m.
func (g *guardRing) guard(y, h int, fill func(r int, p, n []uint32), out []float32, m float32) {
	u := g.slot(mirror(y-1, h), fill)
	c := g.slot(y, fill)
	d := g.slot(mirror(y+1, h), fill)
	guardKeys(g.p[u], g.p[c], g.p[d], g.n[u], g.n[c], g.n[d], out, m)
}

// garrote is the non-negative garrote shrinkage of coefficient d with
// squared threshold t2: d − t2/d when d² > t2, else 0.
func garrote(d, t2 float32) float32 {
	// max(d², 1e-30) with a branch (d² is rarely that small, so it is
	// predicted); the shrinkage itself branch-free (max): noise makes
	// d² > t2 unpredictable.
	dd := d * d
	if dd < 1e-30 {
		dd = 1e-30
	}
	return d * nonNeg(1-t2/dd)
}

// nonNeg is max(q, 0) for q not NaN (−0 gives +0): the sign bit spread
// over the bits clears a negative q, two integer instructions where the
// float builtin needs a NaN-aware sequence of several.
func nonNeg(q float32) float32 {
	b := math.Float32bits(q)
	return math.Float32frombits(b &^ uint32(int32(b)>>31))
}

// blurRows writes into out row y of the B3-spline smoothing, with holes
// of step pixels, of a plane w pixels wide, using tmp (w floats) for the
// vertical pass: r[i] is the row y+(i−2)·step that it reads (mirrored at
// the plane's top and bottom), each of w pixels i at r[i][i·stride];
// the columns are mirrored at the borders.
func blurRows(r [5][]float32, stride, w, step int, tmp, out []float32) {
	n := (w-1)*stride + 1
	r0, r1, r2, r3, r4 := r[0][:n], r[1][:n], r[2][:n], r[3][:n], r[4][:n]
	// The taps as variables (hot.b3), held in registers across the loops.
	k0, k1, k2 := hot.b3[0], hot.b3[1], hot.b3[2]
	if stride == 1 {
		v := vecB3(r0, r1, r2, r3, r4, tmp[:n], k0, k1, k2)
		b3Tail(r0, r1, r2, r3, r4, tmp[:n], v)
	} else {
		for x := range tmp {
			i := x * stride
			tmp[x] = (r0[i]+r4[i])*k0 + (r1[i]+r3[i])*k1 + r2[i]*k2
		}
	}
	blurH(tmp[:w], step, out)
}

// b3Tail is the vertical pass of blurRows (stride 1) from column v on.
func b3Tail(r0, r1, r2, r3, r4, tmp []float32, v int) {
	k0, k1, k2 := hot.b3[0], hot.b3[1], hot.b3[2]
	n := len(tmp)
	tmp, r0, r1, r2, r3, r4 = tmp[v:n], r0[v:n], r1[v:n], r2[v:n], r3[v:n], r4[v:n]
	for x, c := range r2 {
		tmp[x] = (r0[x]+r4[x])*k0 + (r1[x]+r3[x])*k1 + c*k2
	}
}

// blurRows4 is blurRows on four rows y+k·step (k = 0..3) of a plane of
// stride 1 whose taps slide: r[i] is the row y+(i−2)·step, so that row k
// reads r[k] to r[k+4]. The vertical pass reads each of the eight rows
// once for the four (the rows do not stay in the first-level cache from
// one output row to the next); the results are blurRows' on each row.
// tmp holds 4·w floats.
func blurRows4(r [8][]float32, w, step int, tmp []float32, out [4][]float32) {
	t := [4][]float32{tmp[:w], tmp[w : 2*w], tmp[2*w : 3*w], tmp[3*w : 4*w]}
	v := vecB3x4(r, t)
	for k := range 4 {
		b3Tail(r[k][:w], r[k+1][:w], r[k+2][:w], r[k+3][:w], r[k+4][:w], t[k], v)
		blurH(t[k], step, out[k])
	}
}

// blurH is the horizontal pass of blurRows: the B3 smoothing of the
// vertical pass's row tmp (w) with holes of step, into out.
func blurH(tmp []float32, step int, out []float32) {
	w := len(tmp)
	k0, k1, k2 := hot.b3[0], hot.b3[1], hot.b3[2]
	s2 := 2 * step
	lo, hi := min(s2, w), max(w-s2, min(s2, w))
	for x := 0; x < lo; x++ {
		out[x] = edgeTap(tmp, w, x, step)
	}
	if m := hi - lo; m > 0 {
		// lo = s2 and hi = w − s2 here: every tap inside.
		t0, t1, t2 := tmp[lo-s2:][:m], tmp[lo-step:][:m], tmp[lo:][:m]
		t3, t4, o := tmp[lo+step:][:m], tmp[lo+s2:][:m], out[lo:][:m]
		v := vecB3Wide(tmp, out, step, m)
		if v == 0 {
			v = vecB3(t0, t1, t2, t3, t4, o, k0, k1, k2)
		}
		t0, t1, t2, t3, t4, o = t0[v:], t1[v:], t2[v:], t3[v:], t4[v:], o[v:]
		for x, c := range t2 {
			o[x] = (t0[x]+t4[x])*k0 + (t1[x]+t3[x])*k1 + c*k2
		}
	}
	for x := hi; x < w; x++ {
		out[x] = edgeTap(tmp, w, x, step)
	}
}

// hot holds constants of the inner loops as variables: a loop that reads
// them into locals first keeps them in registers, where the compiler
// loads a constant from memory again on every iteration (the B3
// smoothing takes about a third less CPU so). The values are the
// constants': the results are the same.
var hot = struct {
	b3 [3]float32 // B3-spline taps 1/16, 4/16, 6/16
}{
	b3: [3]float32{1.0 / 16, 4.0 / 16, 6.0 / 16},
}

// edgeTap is the horizontal B3 tap of blurH at column x near a border.
func edgeTap(tmp []float32, w, x, step int) float32 {
	s2 := 2 * step
	return (tmp[mirror(x-s2, w)]+tmp[mirror(x+s2, w)])*(1.0/16) +
		(tmp[mirror(x-step, w)]+tmp[mirror(x+step, w)])*(4.0/16) + tmp[x]*(6.0/16)
}

// mirror reflects i into [0, n) about the edges (…, 2, 1, 0, 1, 2, …).
func mirror(i, n int) int {
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

// maxSamples bounds the grid points of a level's noise measure
// (sampleEvery): the median of 16384
// coefficients has a relative standard error of about 1 %.
const maxSamples = 1 << 14

// sampleAt returns the grid positions along an axis of n pixels, in
// increasing order: every/2 + i·every, or with rev the same positions
// counted from the other end (n−1 − every/2 − i·every: the grid of the
// image seen mirrored).
func sampleAt(n, every int, rev bool) []int {
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

// sampleEvery is the noise grid's spacing for a w×h plane: the smallest
// with at most maxSamples pixels; the grid's rows and columns are
// every/2 + i·every.
func sampleEvery(w, h int) int {
	every := 1
	for (w/every)*(h/every) > maxSamples {
		every++
	}
	return every
}

// sampleRow appends to d the absolute detail coefficients at hole
// spacing step (the plane minus its B3 smoothing) of the noise grid's
// points on one row (at columns xs), r being the rows it reads as in
// blurRows; madSigma of them is the level's noise.
func sampleRow(d []float32, r [5][]float32, stride, w, step int, xs []int) []float32 {
	k := [5]float32{1.0 / 16, 4.0 / 16, 6.0 / 16, 4.0 / 16, 1.0 / 16}
	for _, x := range xs {
		// The columns of the taps: mirrored only near the borders.
		var cols [5]int
		for m := range cols {
			cols[m] = x + (m-2)*step
		}
		if x < 2*step || x+2*step >= w {
			for m := range cols {
				cols[m] = mirror(cols[m], w)
			}
		}
		var s float32
		for i := range 5 {
			var row float32
			for m := range 5 {
				row += k[m] * r[i][cols[m]*stride]
			}
			s += k[i] * row
		}
		v := r[2][x*stride] - s
		d = append(d, max(v, -v))
	}
	return d
}

// madSigma is MAD/0.6745 of the absolute coefficients d (reordered), 0
// for none.
func madSigma(d []float32) float64 {
	if len(d) == 0 {
		return 0
	}
	return float64(nth(d, len(d)/2)) / 0.6745
}

// nth returns the k-th smallest value of d (0-based: what d[k] is after
// sorting d), reordering d: Hoare's selection with a median-of-three
// pivot, linear on average instead of the sort's n·log n (madSigma's
// median).
func nth(d []float32, k int) float32 {
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
// coefficient may lie beyond its neighbours' range (guardKeys): 0.5 keeps
// the flat-patch noise near what the garrote alone leaves (0.13× of the
// input against 0.17×, TestCandidates; 0.07× with no margin, a change of
// the strength's calibration) while no pixel of a flat mid-grey patch at
// ISO 6400 stays beyond 15 % of its 3×3 median.
const guardMargin = 0.5
