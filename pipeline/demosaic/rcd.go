package demosaic

import (
	"image"
	"math"
	"sync"
	"sync/atomic"
)

// RCD's steps, as L. Sanz Rodríguez describes the algorithm (2017; the
// default demosaic of RawTherapee and darktable), for each photosite of a
// normalised Bayer CFA:
//
//  1. Vertical/horizontal discrimination: the square of a 7-tap colour
//     difference high-pass filter (1, −3, −1, 6, −1, −3, 1) along each
//     axis, summed over three photosites along that axis; VH = V/(V + H)
//     (0: the data varies horizontally, interpolate vertically).
//  2. A low-pass filter of the CFA on the red/blue quincunx (centre 1,
//     4-neighbours ½, diagonals ¼).
//  3. Green at red and blue sites: the four adjacent greens, each corrected
//     by the ratio of the low-pass values at the centre and two photosites
//     out (N = G_n·2·LPF_c/(LPF_c + LPF_nn)), combined per axis weighted
//     by the inverse of the gradients toward each side, and the vertical
//     and horizontal estimates blended by VH (the centre's, or the mean of
//     its four diagonal neighbours when that is more decided).
//  4. Red at blue and blue at red sites: the same on the diagonals (the
//     P/Q discrimination, the colour differences R−G or B−G of the four
//     diagonal neighbours, gradient-weighted); then red and blue at green
//     sites from the colour differences of the four adjacent photosites,
//     blended by VH.
//
// Each tile of up to tileW output photosites across (tileH down in RCD's
// bands) is computed from a window of margin more photosites on each side: margin is how far the
// last step reaches through the earlier ones (step 4's second part needs
// step 4's first at ±3, which needs green at ±2, which needs the CFA at
// ±4 and VH at ±1, VH the CFA at ±4). Outside the image the window
// mirrors the CFA about its first and last rows and columns, which keeps
// the colour pattern, so borders are demosaiced by the same steps.
//
// The steps run row by row down the window, each as soon as the rows it
// reads are there (rcdTile.run), so that the rows a step reads were
// written a few rows before and are still in cache, instead of each step
// being one pass over the whole window; the planes then need only the
// rows in flight (ringRows), and tiles can be wide (and, for Bands'
// transposed strips, high), recomputing little of their neighbours'
// margins.
const (
	tileW  = 512
	tileH  = 192
	margin = 10
	// eps keeps the ratios and gradient weights finite on black areas;
	// epsSq is its square, for the squared filter responses.
	eps   = 1e-5
	epsSq = 1e-10
)

// RCD demosaics c into dst (W×H×3 float32, interleaved, at least 3·W·H
// values) by Ratio Corrected Demosaicing, in parallel over bands of tileH
// rows, top to bottom (up to c.Threads or GOMAXPROCS goroutines, each with
// its own TileBytes of tile planes, reused from image to image). Results
// do not depend on the number of goroutines. Images narrower or lower than 2 photosites are
// demosaiced bilinearly. Errors: an invalid CFA (ErrNotBayer, sizes).
func RCD(c CFA, dst []float32) error {
	if err := c.check(dst); err != nil {
		return err
	}
	if c.W < 2 || c.H < 2 {
		return Bilinear(c, dst)
	}
	tx, ty := (c.W+tileW-1)/tileW, (c.H+tileH-1)/tileH
	p := progress{done: make([]bool, ty), f: c.Done}
	var stopped atomic.Bool
	// One set of tile planes per goroutine, taken for each band and
	// handed back after it: at most as many as bands run at once.
	rows(c.Threads, ty, func(lo, hi int) {
		t := tiles.Get().(*rcdTile)
		defer tiles.Put(t)
		for by := lo; by < hi; by++ {
			if stopped.Load() || c.Stop != nil && c.Stop() {
				stopped.Store(true)
				return
			}
			for bx := range tx {
				ox, oy := bx*tileW, by*tileH
				out := tileOut{dst: dst, dx: 1, dy: c.W, rect: image.Rect(ox, oy, min(ox+tileW, c.W), min(oy+tileH, c.H))}
				t.run(&c, out)
			}
			p.finished(by, c.H)
		}
	})
	if stopped.Load() {
		return ErrStopped
	}
	return nil
}

// progress tracks which bands of tiles are done, for CFA.Done: band b
// reads rows b·tileH − margin to (b+1)·tileH + margin, so when every band
// before b is done no row above b·tileH − margin is read again.
type progress struct {
	mu       sync.Mutex
	done     []bool
	next     int // the first band not done
	released int
	f        func(y int)
}

func (p *progress) finished(band, h int) {
	if p.f == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done[band] = true
	for p.next < len(p.done) && p.done[p.next] {
		p.next++
	}
	y := h
	if p.next < len(p.done) {
		y = max(0, p.next*tileH-margin)
	}
	if y > p.released {
		p.released = y
		p.f(y)
	}
}

// spanX is the largest window's width and every plane's row stride. A
// plane holds ringRows rows of the window: the steps read no row more
// than liveRows − 1 above the last one loaded (run), so when the rows
// reach the plane's end the last liveRows − 1 of every plane move to its
// top (rcdTile.shift) and the window goes on down from there; plane is
// the photosites of one plane.
const (
	spanX    = tileW + 2*margin
	ringRows = 48
	liveRows = 14
	plane    = spanX * ringRows
)

// The planes of a tile, in the order they lie in rcdTile.buf: red, green
// and blue; the normalised CFA; the V/(V+H) and P/(P+Q) discriminations;
// the low-pass filter; the squared filter responses V, H (step 1) and P,
// Q (step 4.1); the differences of photosites two apart that step 3's
// gradients sum, |CFA(x, y) − CFA(x, y + 2)| (dv) and |CFA(x, y) −
// CFA(x + 2, y)| (dh), those of red and blue that step 4.3's sum (rv,
// rh, bv, bh) and the diagonal ones step 4.2's sum (d1, d2, gd1, gd2:
// diagDiffs). Steps run on different rows at once (run), so each
// quantity has a plane of its own.
const (
	planeR = iota
	planeG
	planeB
	planeCFA
	planeVH
	planePQ
	planeLPF
	planeV
	planeH
	planeP
	planeQ
	planeDV
	planeDH
	planeRV
	planeRH
	planeBV
	planeBH
	planeD1
	planeD2
	planeGD1
	planeGD2
	tilePlanes
)

// TileBytes is the memory in bytes of one goroutine's tile planes
// (tilePlanes float32 planes of spanX×ringRows photosites and 8 padding
// rows); RCD and Bands take one set per goroutine from a pool that keeps
// them from tile to tile and image to image.
const TileBytes = (tilePlanes*plane + 8*spanX) * 4

// A window row w (rcdTile.win) sees every plane from 4 rows above a row y
// to 4 rows below it through one array: photosite (x, y + dy) of plane k
// is w[k*plane + (4+dy)*spanX + x]. The offsets o* below are those of row
// y, column 0, of each plane. Indexing one fixed-size array with x plus
// a constant, x bounded by its loop, needs no bounds check, and the whole
// kernel addresses its planes from one base register.
const (
	winLen = (tilePlanes-1)*plane + 9*spanX
	oR     = planeR*plane + 4*spanX
	oG     = planeG*plane + 4*spanX
	oB     = planeB*plane + 4*spanX
	oCFA   = planeCFA*plane + 4*spanX
	oVH    = planeVH*plane + 4*spanX
	oPQ    = planePQ*plane + 4*spanX
	oLPF   = planeLPF*plane + 4*spanX
	oV     = planeV*plane + 4*spanX
	oH     = planeH*plane + 4*spanX
	oP     = planeP*plane + 4*spanX
	oQ     = planeQ*plane + 4*spanX
	oDV    = planeDV*plane + 4*spanX
	oDH    = planeDH*plane + 4*spanX
	oRV    = planeRV*plane + 4*spanX
	oRH    = planeRH*plane + 4*spanX
	oBV    = planeBV*plane + 4*spanX
	oBH    = planeBH*plane + 4*spanX
	oD1    = planeD1*plane + 4*spanX
	oD2    = planeD2*plane + 4*spanX
	oGD1   = planeGD1*plane + 4*spanX
	oGD2   = planeGD2*plane + 4*spanX
)

// rcdTile holds one window's planes. Every step writes each photosite it
// later reads within the same tile, so the planes need no clearing
// between tiles.
type rcdTile struct {
	// buf holds the planes in the order of planeR..planeGD2, after 4
	// padding rows and followed by 4 more, so that every row's window
	// (win) lies inside it.
	buf    []float32
	x0, y0 int // the image position of window (0, 0)
	// base is the window row at the top of the planes.
	base int
}

// newRCDTile makes a tile's planes (tiles.go keeps them for reuse: fresh
// memory costs a page fault per page, reused memory none).
func newRCDTile() *rcdTile { return &rcdTile{buf: make([]float32, tilePlanes*plane+8*spanX)} }

// win returns the window of row y (see winLen), which must lie in the
// planes' rows base..base+ringRows−1.
func (t *rcdTile) win(y int) *[winLen]float32 {
	i := (y - t.base) * spanX
	return (*[winLen]float32)(t.buf[i : i+winLen])
}

// shift moves the last liveRows − 1 rows of every plane to its top, for
// the rows below them.
func (t *rcdTile) shift() {
	const keep = liveRows - 1
	for k := range tilePlanes {
		p := t.buf[4*spanX+k*plane : 4*spanX+(k+1)*plane]
		copy(p[:keep*spanX], p[(ringRows-keep)*spanX:])
	}
	t.base += ringRows - keep
}

// tileOut is where a tile's photosites go: image photosite (x, y) of rect
// is pixel base + x·dx + y·dy of dst (W×H×3 float32, interleaved), for
// RCD's image (dx 1, dy W) and Bands' rotated and mirrored bands alike.
type tileOut struct {
	dst          []float32
	base, dx, dy int
	rect         image.Rectangle
}

// vecRCD is whether the steps run their vector kernels (rcd_simd.go)
// where the build and CPU allow (vec); tests turn it off to compare with
// the scalar loops.
var vecRCD = vec

func sq(v float32) float32 { return v * v }

// abs is |v| without a branch (a branch mispredicts on noisy data).
func abs(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// atLeastEpsSq is max(epsSq, v) for v ≥ 0 (a sum of squares): the
// magnitudes of non-negative floats order as their bits do, and an
// integer max is one conditional move where the float max is eight
// instructions (Go's NaN and signed-zero rules).
func atLeastEpsSq(v float32) float32 {
	return math.Float32frombits(uint32(max(int32(math.Float32bits(v)), int32(math.Float32bits(epsSq)))))
}

// blend returns a·b + (1 − a)·c.
func blend(a, b, c float32) float32 { return a*(b-c) + c }

// refined returns the discrimination of a photosite: its own value c, or
// n, the mean of its four diagonal neighbours, when that lies further from
// ½ (more decided). Branchless: the magnitudes of non-negative floats
// order as their bits do.
func refined(c, n float32) float32 {
	a := int32(math.Float32bits(0.5-c) &^ (1 << 31))
	b := int32(math.Float32bits(0.5-n) &^ (1 << 31))
	// a − b: both in [0, 2³¹), so the difference does not overflow and
	// its sign is a < b; the compiler makes a branch of an if here.
	m := uint32((a - b) >> 31)
	cb, nb := math.Float32bits(c), math.Float32bits(n)
	return math.Float32frombits(cb ^ (cb^nb)&m)
}

// greenFirst is 1 when window row y starts with a green photosite, else 0.
func greenFirst(c *CFA, y int) int {
	if c.Colour[(y&1)*2] == 1 {
		return 1
	}
	return 0
}

// run demosaics the photosites of out.rect (inside the CFA, within tileW
// columns from its corner rounded down to even ones, any number of rows)
// into out. Its window is the rect from that even corner, widened to an even
// size, and margin photosites around.
//
// The steps run as one pass down the window: once row L of the CFA is
// loaded, each step does the one row whose inputs row L completes, so
// that every step lags the one it reads by the rows it reaches down:
// V and H at L−3, V/(V+H) at L−4, the low-pass filter at L−1, the
// vertical CFA differences at L−2 and the horizontal at L, green and the
// diagonal differences at L−5, P and Q at L−3, P/(P+Q) at L−4, red and
// blue at blue and red sites at L−7, the vertical red and blue
// differences at L−9, and at L−10 the horizontal ones, red and blue at
// green sites and the output row; the lowest row read is L−13
// (liveRows). Each step's rows and columns are those of a pass over the
// whole window, so the values are the same (TestRCDMatchesPrevious).
// margin and the corner are even, so window parity equals image parity.
func (t *rcdTile) run(c *CFA, out tileOut) {
	r := out.rect
	cx, cy := r.Min.X&^1, r.Min.Y&^1
	sx := min((r.Max.X-cx+1)&^1, tileW) + 2*margin
	sy := (r.Max.Y-cy+1)&^1 + 2*margin
	t.x0, t.y0 = cx-margin, cy-margin
	t.base = 0
	for L := range sy {
		if L-t.base == ringRows {
			t.shift()
		}
		t.load(c, L, sx)
		if y := L - 3; y >= 3 && y < sy-3 {
			t.vh(y, sx)
			t.pq(c, y, sx)
		}
		if y := L - 4; y >= 4 && y < sy-4 {
			t.vhRatio(y, sx)
			t.pqRatio(c, y, sx)
		}
		if y := L - 1; y >= 1 && y < sy-1 {
			t.lowPass(c, y, sx)
		}
		if y := L - 2; y >= 1 && y < sy-3 {
			t.diffV(y, sx)
		}
		if y := L; y >= 5 && y < sy-5 {
			t.diffH(y, sx)
		}
		if y := L - 5; y >= 5 && y < sy-5 {
			t.green(c, y, sx)
			t.diagDiffs(c, y, sx)
		}
		if y := L - 7; y >= 7 && y < sy-7 {
			t.opposite(c, y, sx)
		}
		if y := L - 9; y >= margin-3 && y <= sy-margin {
			t.diffRBV(c, y, sx)
		}
		if y := L - 10; y >= margin && y < sy-margin {
			t.diffRBH(c, y, sx)
			t.redBlue(c, y, sx)
			if iy := t.y0 + y; iy >= r.Min.Y && iy < r.Max.Y {
				t.store(out, y)
			}
		}
	}
}

// load normalises window row y of the CFA (mirrored at the image's
// edges) into its plane and each sample into its own colour's plane.
func (t *rcdTile) load(c *CFA, y, sx int) {
	if uint(sx) > spanX {
		panic("demosaic: window wider than spanX")
	}
	iy := reflect(t.y0+y, c.H)
	w := t.win(y)
	cr := w[oCFA : oCFA+sx : oCFA+sx]
	c.normRow(iy, t.x0, cr)
	ph := (iy & 1) * 2
	p0 := colourOffset(c.Colour[ph])
	p1 := colourOffset(c.Colour[ph+1])
	r0, r1 := w[p0:p0+sx:p0+sx], w[p1:p1+sx:p1+sx]
	for x := vecLoad(w, p0, p1, 0, sx); x+1 < len(cr); x += 2 { // sx is even
		r0[x], r1[x+1] = cr[x], cr[x+1]
	}
}

// colourOffset is the window offset of colour k's plane (0 red, 1 green,
// 2 blue).
func colourOffset(k uint8) int {
	return oR + int(k)*plane
}

// vh is step 1's filter responses of row y: V (the vertical one) and H
// (the horizontal one), squared.
func (t *rcdTile) vh(y, sx int) {
	const s = spanX
	if uint(sx) > spanX {
		panic("demosaic: window wider than spanX")
	}
	w := t.win(y)
	for x := vecVH(w, 3, sx-3); x < sx-3; x++ {
		w[oV+x] = sq(w[oCFA-3*s+x] - 3*w[oCFA-2*s+x] - w[oCFA-s+x] + 6*w[oCFA+x] - w[oCFA+s+x] - 3*w[oCFA+2*s+x] + w[oCFA+3*s+x])
		w[oH+x] = sq(w[oCFA+x-3] - 3*w[oCFA+x-2] - w[oCFA+x-1] + 6*w[oCFA+x] - w[oCFA+x+1] - 3*w[oCFA+x+2] + w[oCFA+x+3])
	}
}

// vhRatio is step 1's V/(V+H) of row y, V and H summed over three
// photosites along their axis.
func (t *rcdTile) vhRatio(y, sx int) {
	const s = spanX
	if uint(sx) > spanX {
		panic("demosaic: window wider than spanX")
	}
	w := t.win(y)
	for x := vecVHRatio(w, 4, sx-4); x < sx-4; x++ {
		vs := atLeastEpsSq(w[oV-s+x] + w[oV+x] + w[oV+s+x])
		hs := atLeastEpsSq(w[oH+x-1] + w[oH+x] + w[oH+x+1])
		w[oVH+x] = vs / (vs + hs)
	}
}

// lowPass is step 2, the low-pass filter of row y at its red and blue
// sites.
func (t *rcdTile) lowPass(c *CFA, y, sx int) {
	const s = spanX
	if uint(sx) > spanX {
		panic("demosaic: window wider than spanX")
	}
	w := t.win(y)
	for x := vecLowPass(w, 1+(1^greenFirst(c, y))&1, min(spanX-1, sx-1)); x < spanX-1 && x < sx-1; x += 2 {
		w[oLPF+x] = w[oCFA+x] + 0.5*(w[oCFA-s+x]+w[oCFA+s+x]+w[oCFA+x-1]+w[oCFA+x+1]) +
			0.25*(w[oCFA-s+x-1]+w[oCFA-s+x+1]+w[oCFA+s+x-1]+w[oCFA+s+x+1])
	}
}

// diffV is |CFA(x, y) − CFA(x, y + 2)| of row y, which step 3's vertical
// gradients sum, each computed once.
func (t *rcdTile) diffV(y, sx int) {
	const s = spanX
	if uint(sx) > spanX {
		panic("demosaic: window wider than spanX")
	}
	w := t.win(y)
	for x := vecDiffV(w, 5, sx-5); x < sx-5; x++ {
		w[oDV+x] = abs(w[oCFA+x] - w[oCFA+2*s+x])
	}
}

// diffH is |CFA(x, y) − CFA(x + 2, y)| of row y, which step 3's
// horizontal gradients sum.
func (t *rcdTile) diffH(y, sx int) {
	if uint(sx) > spanX {
		panic("demosaic: window wider than spanX")
	}
	w := t.win(y)
	for x := vecDiffH(w, 1, sx-3); x < sx-3; x++ {
		w[oDH+x] = abs(w[oCFA+x] - w[oCFA+x+2])
	}
}

// green is step 3 on row y: green at its red and blue sites.
func (t *rcdTile) green(c *CFA, y, sx int) {
	const s = spanX
	if uint(sx) > spanX {
		panic("demosaic: window wider than spanX")
	}
	w := t.win(y)
	for x := vecGreen(w, 5+(5^greenFirst(c, y))&1, min(spanX-5, sx-5)); x < spanX-5 && x < sx-5; x += 2 {
		// |CFA(y − 1) − CFA(y + 1)|, |CFA(y) − CFA(y − 2)|, ... as
		// diffV and diffH stored them.
		vg := w[oDV-s+x]
		hg := w[oDH+x-1]
		nG := eps + vg + w[oDV-2*s+x] + w[oDV-3*s+x] + w[oDV-4*s+x]
		sG := eps + vg + w[oDV+x] + w[oDV+s+x] + w[oDV+2*s+x]
		wG := eps + hg + w[oDH+x-2] + w[oDH+x-3] + w[oDH+x-4]
		eG := eps + hg + w[oDH+x] + w[oDH+x+1] + w[oDH+x+2]
		l := w[oLPF+x]
		ln, ls, lw, le := w[oLPF-2*s+x], w[oLPF+2*s+x], w[oLPF+x-2], w[oLPF+x+2]
		nE := w[oCFA-s+x] * (1 + (l-ln)/(eps+l+ln))
		sE := w[oCFA+s+x] * (1 + (l-ls)/(eps+l+ls))
		wE := w[oCFA+x-1] * (1 + (l-lw)/(eps+l+lw))
		eE := w[oCFA+x+1] * (1 + (l-le)/(eps+l+le))
		vE := (sG*nE + nG*sE) / (nG + sG)
		hE := (eG*wE + wG*eE) / (eG + wG)
		d := refined(w[oVH+x], 0.25*(w[oVH-s+x-1]+w[oVH-s+x+1]+w[oVH+s+x-1]+w[oVH+s+x+1]))
		w[oG+x] = clamp01(blend(d, hE, vE))
	}
}

// pq is step 4.1's diagonal filter responses of row y, P and Q squared,
// at its red and blue sites (whose diagonal neighbours are red and blue
// sites too).
func (t *rcdTile) pq(c *CFA, y, sx int) {
	const s = spanX
	if uint(sx) > spanX {
		panic("demosaic: window wider than spanX")
	}
	w := t.win(y)
	for x := vecPQ(w, 3+(3^greenFirst(c, y))&1, min(spanX-3, sx-3)); x < spanX-3 && x < sx-3; x += 2 {
		w[oP+x] = sq(w[oCFA-3*s+x-3] - 3*w[oCFA-2*s+x-2] - w[oCFA-s+x-1] + 6*w[oCFA+x] - w[oCFA+s+x+1] - 3*w[oCFA+2*s+x+2] + w[oCFA+3*s+x+3])
		w[oQ+x] = sq(w[oCFA-3*s+x+3] - 3*w[oCFA-2*s+x+2] - w[oCFA-s+x+1] + 6*w[oCFA+x] - w[oCFA+s+x-1] - 3*w[oCFA+2*s+x-2] + w[oCFA+3*s+x-3])
	}
}

// pqRatio is step 4.1's P/(P+Q) of row y, P and Q summed over three
// photosites along their diagonal.
func (t *rcdTile) pqRatio(c *CFA, y, sx int) {
	const s = spanX
	if uint(sx) > spanX {
		panic("demosaic: window wider than spanX")
	}
	w := t.win(y)
	for x := vecPQRatio(w, 4+(4^greenFirst(c, y))&1, min(spanX-4, sx-4)); x < spanX-4 && x < sx-4; x += 2 {
		ps := atLeastEpsSq(w[oP-s+x-1] + w[oP+x] + w[oP+s+x+1])
		qs := atLeastEpsSq(w[oQ-s+x+1] + w[oQ+x] + w[oQ+s+x-1])
		w[oPQ+x] = ps / (ps + qs)
	}
}

// opposite is step 4.2 on row y: red at its blue sites, or blue at its
// red sites.
func (t *rcdTile) opposite(c *CFA, y, sx int) {
	const s = spanX
	if uint(sx) > spanX {
		panic("demosaic: window wider than spanX")
	}
	w := t.win(y)
	x0 := 7 + (7^greenFirst(c, y))&1
	o := oR // the colour to interpolate: the opposite of the site's
	if c.Colour[(y&1)*2+x0&1] == 0 {
		o = oB
	}
	rcdOpposite(w, (*[7 * s]float32)(w[o-3*s:o+4*s]), x0, sx)
}

// diagDiffs is, at the red and blue sites of row y, the differences
// that step 4.2's diagonal gradients sum, each computed once (each is
// the gradient of two sites): of the colour step 4.2 interpolates there,
// the opposite of the site's, |O(x−1, y−1) − O(x+1, y+1)| (D1) and
// |O(x+1, y−1) − O(x−1, y+1)| (D2), and of green, |G(x, y) − G(x−2, y−2)|
// (GD1) and |G(x, y) − G(x+2, y−2)| (GD2).
func (t *rcdTile) diagDiffs(c *CFA, y, sx int) {
	const s = spanX
	if uint(sx) > spanX {
		panic("demosaic: window wider than spanX")
	}
	w := t.win(y)
	x0 := 5 + (5^greenFirst(c, y))&1
	o := oR // as in opposite
	if c.Colour[(y&1)*2+x0&1] == 0 {
		o = oB
	}
	op := (*[3 * s]float32)(w[o-s : o+2*s]) // rows y − 1 to y + 1
	for x := vecDiagDiffs(w, op, x0, min(spanX-5, sx-5)); x < spanX-5 && x < sx-5; x += 2 {
		w[oD1+x] = abs(op[x-1] - op[2*s+x+1])
		w[oD2+x] = abs(op[x+1] - op[2*s+x-1])
		w[oGD1+x] = abs(w[oG+x] - w[oG-2*s+x-2])
		w[oGD2+x] = abs(w[oG+x] - w[oG-2*s+x+2])
	}
}

// diffRBV is |R(x, y) − R(x, y + 2)| and blue's at the red and blue sites
// of row y, which step 4.3's vertical gradients sum (at its green sites,
// whose vertical neighbours those are).
func (t *rcdTile) diffRBV(c *CFA, y, sx int) {
	const s = spanX
	if uint(sx) > spanX {
		panic("demosaic: window wider than spanX")
	}
	w := t.win(y)
	for x := vecDiffRBV(w, margin+(margin^greenFirst(c, y))&1, min(spanX-margin, sx-margin)); x < spanX-margin && x < sx-margin; x += 2 {
		w[oRV+x] = abs(w[oR+x] - w[oR+2*s+x])
		w[oBV+x] = abs(w[oB+x] - w[oB+2*s+x])
	}
}

// diffRBH is |R(x, y) − R(x + 2, y)| and blue's at the red and blue
// sites of row y, which step 4.3's horizontal gradients sum.
func (t *rcdTile) diffRBH(c *CFA, y, sx int) {
	if uint(sx) > spanX {
		panic("demosaic: window wider than spanX")
	}
	w := t.win(y)
	for x := vecDiffRBH(w, margin-3+(margin-3^greenFirst(c, y))&1, min(spanX-margin+1, sx-margin+1)); x < spanX-margin+1 && x < sx-margin+1; x += 2 {
		w[oRH+x] = abs(w[oR+x] - w[oR+x+2])
		w[oBH+x] = abs(w[oB+x] - w[oB+x+2])
	}
}

// redBlue is step 4.3 on row y: red and blue at its green sites, from
// the colour differences of the four adjacent photosites, blended by VH.
func (t *rcdTile) redBlue(c *CFA, y, sx int) {
	const s = spanX
	if uint(sx) > spanX {
		panic("demosaic: window wider than spanX")
	}
	w := t.win(y)
	for x := vecRedBlue(w, margin+(margin^greenFirst(c, y)^1)&1, min(spanX-margin, sx-margin)); x < spanX-margin && x < sx-margin; x += 2 {
		gc := w[oG+x]
		d := refined(w[oVH+x], 0.25*(w[oVH-s+x-1]+w[oVH-s+x+1]+w[oVH+s+x-1]+w[oVH+s+x+1]))
		gn, gs, gw, ge := eps+abs(gc-w[oG-2*s+x]), eps+abs(gc-w[oG+2*s+x]), eps+abs(gc-w[oG+x-2]), eps+abs(gc-w[oG+x+2])
		gnE, gsE, gwE, geE := w[oG-s+x], w[oG+s+x], w[oG+x-1], w[oG+x+1]
		{
			on, os, ow, oe := w[oR-s+x], w[oR+s+x], w[oR+x-1], w[oR+x+1]
			vg, hg := w[oRV-s+x], w[oRH+x-1]
			nG := gn + vg + w[oRV-3*s+x]
			sG := gs + vg + w[oRV+s+x]
			wG := gw + hg + w[oRH+x-3]
			eG := ge + hg + w[oRH+x+1]
			nE, sE, wE, eE := on-gnE, os-gsE, ow-gwE, oe-geE
			vE := (nG*sE + sG*nE) / (nG + sG)
			hE := (eG*wE + wG*eE) / (eG + wG)
			w[oR+x] = clamp01(gc + blend(d, hE, vE))
		}
		{
			on, os, ow, oe := w[oB-s+x], w[oB+s+x], w[oB+x-1], w[oB+x+1]
			vg, hg := w[oBV-s+x], w[oBH+x-1]
			nG := gn + vg + w[oBV-3*s+x]
			sG := gs + vg + w[oBV+s+x]
			wG := gw + hg + w[oBH+x-3]
			eG := ge + hg + w[oBH+x+1]
			nE, sE, wE, eE := on-gnE, os-gsE, ow-gwE, oe-geE
			vE := (nG*sE + sG*nE) / (nG + sG)
			hE := (eG*wE + wG*eE) / (eG + wG)
			w[oB+x] = clamp01(gc + blend(d, hE, vE))
		}
	}
}

// store writes window row y's photosites inside out.rect to out.
func (t *rcdTile) store(out tileOut, y int) {
	iy := t.y0 + y
	r := out.rect
	n := r.Dx()
	i := r.Min.X - t.x0
	w := t.win(y)
	R, G, B := w[oR+i:oR+i+n], w[oG+i:oG+i+n], w[oB+i:oB+i+n]
	d := out.base + r.Min.X*out.dx + iy*out.dy
	if out.dx == 1 {
		o := out.dst[3*d : 3*(d+n)]
		G, B = G[:len(R)], B[:len(R)]
		for x, v := range R {
			p := o[3*x : 3*x+3 : 3*x+3]
			p[0], p[1], p[2] = v, G[x], B[x]
		}
		return
	}
	for x, v := range R {
		p := out.dst[3*d : 3*d+3 : 3*d+3]
		p[0], p[1], p[2] = v, G[x], B[x]
		d += out.dx
	}
}

// rcdOpposite is step 4.2 on one window row w (red at blue sites, or blue
// at red) of a window sx wide, its red and blue sites from column x0 on:
// the colour differences of the four diagonal neighbours, weighted by the
// gradients toward each, blended by P/(P+Q). op holds the rows y − 3 to
// y + 3 of the colour's plane (photosite (x, y + dy) at op[(3+dy)*spanX +
// x]).
func rcdOpposite(w *[winLen]float32, op *[7 * spanX]float32, x0, sx int) {
	const s, o = spanX, 3 * spanX
	if uint(sx) > spanX {
		panic("demosaic: window wider than spanX")
	}
	for x := vecOpposite(w, op, max(x0, 7), min(spanX-7, sx-7)); x < spanX-7 && x < sx-7; x += 2 {
		gc := w[oG+x]
		nwo, neo, swo, seo := op[o-s+x-1], op[o-s+x+1], op[o+s+x-1], op[o+s+x+1]
		// |nwo − seo|, |neo − swo|; |nwo − O(x−3, y−3)| is the first
		// at (x−2, y−2), ... (diagDiffs).
		pg, qg := w[oD1+x], w[oD2+x]
		nwG := eps + pg + w[oD1-2*s+x-2] + w[oGD1+x]
		neG := eps + qg + w[oD2-2*s+x+2] + w[oGD2+x]
		swG := eps + qg + w[oD2+2*s+x-2] + w[oGD2+2*s+x-2]
		seG := eps + pg + w[oD1+2*s+x+2] + w[oGD1+2*s+x+2]
		nwE := nwo - w[oG-s+x-1]
		neE := neo - w[oG-s+x+1]
		swE := swo - w[oG+s+x-1]
		seE := seo - w[oG+s+x+1]
		pE := (nwG*seE + seG*nwE) / (nwG + seG)
		qE := (neG*swE + swG*neE) / (neG + swG)
		d := refined(w[oPQ+x], 0.25*(w[oPQ-s+x-1]+w[oPQ-s+x+1]+w[oPQ+s+x-1]+w[oPQ+s+x+1]))
		op[o+x] = clamp01(gc + blend(d, qE, pE))
	}
}
