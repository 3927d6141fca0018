package demosaic

import (
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
// Each tile of tile×tile output photosites is computed from a window of
// (tile + 2·margin)² photosites: margin is how far the last step reaches
// through the earlier ones (step 4's second part needs step 4's first at
// ±3, which needs green at ±2, which needs the CFA at ±4 and VH at ±1,
// VH the CFA at ±4). Outside the image the window mirrors the CFA about
// its first and last rows and columns, which keeps the colour pattern, so
// borders are demosaiced by the same steps.
const (
	tile   = 192
	margin = 10
	// eps keeps the ratios and gradient weights finite on black areas;
	// epsSq is its square, for the squared filter responses.
	eps   = 1e-5
	epsSq = 1e-10
)

// RCD demosaics c into dst (W×H×3 float32, interleaved, at least 3·W·H
// values) by Ratio Corrected Demosaicing, in parallel over bands of tile
// rows, top to bottom (up to c.Threads or GOMAXPROCS goroutines, each with
// its own TileBytes of tile planes). Results do not depend on the number of goroutines.
// Images narrower or lower than 2 photosites are demosaiced bilinearly.
// Errors: an invalid CFA (ErrNotBayer, sizes).
func RCD(c CFA, dst []float32) error {
	if err := c.check(dst); err != nil {
		return err
	}
	if c.W < 2 || c.H < 2 {
		return Bilinear(c, dst)
	}
	tx, ty := (c.W+tile-1)/tile, (c.H+tile-1)/tile
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
				t.run(&c, bx*tile, by*tile, dst)
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
// reads rows b·tile − margin to (b+1)·tile + margin, so when every band
// before b is done no row above b·tile − margin is read again.
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
		y = max(0, p.next*tile-margin)
	}
	if y > p.released {
		p.released = y
		p.f(y)
	}
}

// span is the side of a tile's window, s its row stride; plane the
// photosites of one window plane.
const (
	span  = tile + 2*margin
	plane = span * span
)

// The planes of a tile, in the order they lie in rcdTile.buf: red, green
// and blue, the normalised CFA, the V/(V+H) and P/(P+Q) discriminations,
// the low-pass filter, and two planes for the squared filter responses
// (V and H in step 1, P and Q in step 4.1).
const (
	planeR = iota
	planeG
	planeB
	planeCFA
	planeVH
	planePQ
	planeLPF
	planeA
	planeB2
	tilePlanes
)

// TileBytes is the memory in bytes of one goroutine's tile planes
// (tilePlanes float32 planes of span² photosites and 8 padding rows); RCD
// allocates one set per goroutine and reuses it from tile to tile.
const TileBytes = (tilePlanes*plane + 8*span) * 4

// A window row w (rcdTile.win) sees every plane from 4 rows above a row y
// to 4 rows below it through one array: photosite (x, y + dy) of plane k
// is w[k*plane + (4+dy)*span + x]. The offsets o* below are those of row
// y, column 0, of each plane. Indexing one fixed-size array with x plus
// a constant, x bounded by its loop, needs no bounds check, and the whole
// kernel addresses its planes from one base register.
const (
	winLen = (tilePlanes-1)*plane + 9*span
	oR     = planeR*plane + 4*span
	oG     = planeG*plane + 4*span
	oB     = planeB*plane + 4*span
	oCFA   = planeCFA*plane + 4*span
	oVH    = planeVH*plane + 4*span
	oPQ    = planePQ*plane + 4*span
	oLPF   = planeLPF*plane + 4*span
	oA     = planeA*plane + 4*span
	oB2    = planeB2*plane + 4*span
)

// rcdTile holds one window's planes, span×span each. Every step writes
// each photosite it later reads within the same tile, so the planes need
// no clearing between tiles.
type rcdTile struct {
	// buf holds the planes in the order of planeR..planeB2, after 4
	// padding rows and followed by 4 more, so that every row's window
	// (win) lies inside it.
	buf    []float32
	rgb    [3][]float32
	cfa    []float32
	x0, y0 int // the image position of window (0, 0)

	// out, when set, stores the tile instead of run's dst (band.go).
	out func(t *rcdTile)
}

func newRCDTile() *rcdTile {
	buf := make([]float32, tilePlanes*plane+8*span)
	mk := func(k int) []float32 { return buf[4*span+k*plane : 4*span+(k+1)*plane : 4*span+(k+1)*plane] }
	return &rcdTile{buf: buf, rgb: [3][]float32{mk(planeR), mk(planeG), mk(planeB)}, cfa: mk(planeCFA)}
}

// win returns the window of row y (see winLen).
func (t *rcdTile) win(y int) *[winLen]float32 {
	return (*[winLen]float32)(t.buf[y*span : y*span+winLen])
}

// wrow is one row of a window plane.
type wrow = [span]float32

// rowOf returns row y of the window plane p.
func rowOf(p []float32, y int) *wrow { return (*wrow)(p[y*span : (y+1)*span]) }

func sq(v float32) float32 { return v * v }

// abs is |v| without a branch (a branch mispredicts on noisy data).
func abs(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// blend returns a·b + (1 − a)·c.
func blend(a, b, c float32) float32 { return a*(b-c) + c }

// refined returns the discrimination of a photosite: its own value c, or
// n, the mean of its four diagonal neighbours, when that lies further from
// ½ (more decided). Branchless: the magnitudes of non-negative floats
// order as their bits do.
func refined(c, n float32) float32 {
	a := math.Float32bits(0.5-c) &^ (1 << 31)
	b := math.Float32bits(0.5-n) &^ (1 << 31)
	r := math.Float32bits(c)
	if a < b {
		r = math.Float32bits(n)
	}
	return math.Float32frombits(r)
}

// greenFirst is 1 when window row y starts with a green photosite, else 0.
func greenFirst(c *CFA, y int) int {
	if c.Colour[(y&1)*2] == 1 {
		return 1
	}
	return 0
}

// run demosaics the tile whose top-left output photosite is (ox, oy).
func (t *rcdTile) run(c *CFA, ox, oy int, dst []float32) {
	const s = span
	t.x0, t.y0 = ox-margin, oy-margin
	rgb := t.rgb
	// The window's CFA, mirrored at the image's edges, and each sample in
	// its own colour's plane. margin and tile are even, so window parity
	// equals image parity.
	for wy := range s {
		y := reflect(t.y0+wy, c.H)
		cr := rowOf(t.cfa, wy)
		c.normRow(y, t.x0, cr[:])
		ph := (y & 1) * 2
		p0, p1 := rowOf(rgb[c.Colour[ph]], wy), rowOf(rgb[c.Colour[ph+1]], wy)
		for x := 0; x+1 < s; x += 2 {
			p0[x], p1[x+1] = cr[x], cr[x+1]
		}
	}

	// Step 1: vertical and horizontal discrimination (V in planeA, H in
	// planeB2); the V/(V+H) of row y − 1 as soon as the filter responses
	// of row y are there.
	for y := 3; y < s-3; y++ {
		w := t.win(y)
		for x := 3; x < s-3; x++ {
			w[oA+x] = sq(w[oCFA-3*s+x] - 3*w[oCFA-2*s+x] - w[oCFA-s+x] + 6*w[oCFA+x] - w[oCFA+s+x] - 3*w[oCFA+2*s+x] + w[oCFA+3*s+x])
			w[oB2+x] = sq(w[oCFA+x-3] - 3*w[oCFA+x-2] - w[oCFA+x-1] + 6*w[oCFA+x] - w[oCFA+x+1] - 3*w[oCFA+x+2] + w[oCFA+x+3])
		}
		if y-1 >= 4 {
			w := t.win(y - 1)
			for x := 4; x < s-4; x++ {
				vs := max(epsSq, w[oA-s+x]+w[oA+x]+w[oA+s+x])
				hs := max(epsSq, w[oB2+x-1]+w[oB2+x]+w[oB2+x+1])
				w[oVH+x] = vs / (vs + hs)
			}
		}
	}

	// Step 2: low-pass filter (needed at red and blue sites); and for
	// step 3's gradients, which sum differences of photosites two apart,
	// each such difference once: |CFA(x, y) − CFA(x, y + 2)| in planeA and
	// |CFA(x, y) − CFA(x + 2, y)| in planeB2 (V and H are no longer
	// needed).
	for y := 1; y < s-1; y++ {
		w := t.win(y)
		for x := 1 + (1^greenFirst(c, y))&1; x < s-1; x += 2 {
			w[oLPF+x] = w[oCFA+x] + 0.5*(w[oCFA-s+x]+w[oCFA+s+x]+w[oCFA+x-1]+w[oCFA+x+1]) +
				0.25*(w[oCFA-s+x-1]+w[oCFA-s+x+1]+w[oCFA+s+x-1]+w[oCFA+s+x+1])
		}
		if y < s-3 {
			for x := 5; x < s-5; x++ {
				w[oA+x] = abs(w[oCFA+x] - w[oCFA+2*s+x])
			}
		}
		if y >= 5 && y < s-5 {
			for x := 1; x < s-3; x++ {
				w[oB2+x] = abs(w[oCFA+x] - w[oCFA+x+2])
			}
		}
	}

	// Step 3: green at red and blue sites.
	for y := 5; y < s-5; y++ {
		w := t.win(y)
		for x := 5 + (5^greenFirst(c, y))&1; x < s-5; x += 2 {
			// |CFA(y − 1) − CFA(y + 1)|, |CFA(y) − CFA(y − 2)|, ... as
			// step 2 stored them (planeA vertical, planeB2 horizontal).
			vg := w[oA-s+x]
			hg := w[oB2+x-1]
			nG := eps + vg + w[oA-2*s+x] + w[oA-3*s+x] + w[oA-4*s+x]
			sG := eps + vg + w[oA+x] + w[oA+s+x] + w[oA+2*s+x]
			wG := eps + hg + w[oB2+x-2] + w[oB2+x-3] + w[oB2+x-4]
			eG := eps + hg + w[oB2+x] + w[oB2+x+1] + w[oB2+x+2]
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

	// Step 4.1: diagonal discrimination, needed at red and blue sites
	// (whose diagonal neighbours are red and blue sites too), P in planeA
	// and Q in planeB2; P/(P+Q) of row y − 1 as soon as the responses of
	// row y are there.
	for y := 3; y < s-3; y++ {
		w := t.win(y)
		for x := 3 + (3^greenFirst(c, y))&1; x < s-3; x += 2 {
			w[oA+x] = sq(w[oCFA-3*s+x-3] - 3*w[oCFA-2*s+x-2] - w[oCFA-s+x-1] + 6*w[oCFA+x] - w[oCFA+s+x+1] - 3*w[oCFA+2*s+x+2] + w[oCFA+3*s+x+3])
			w[oB2+x] = sq(w[oCFA-3*s+x+3] - 3*w[oCFA-2*s+x+2] - w[oCFA-s+x+1] + 6*w[oCFA+x] - w[oCFA+s+x-1] - 3*w[oCFA+2*s+x-2] + w[oCFA+3*s+x-3])
		}
		if yy := y - 1; yy >= 4 {
			w := t.win(yy)
			for x := 4 + (4^greenFirst(c, yy))&1; x < s-4; x += 2 {
				ps := max(epsSq, w[oA-s+x-1]+w[oA+x]+w[oA+s+x+1])
				qs := max(epsSq, w[oB2-s+x+1]+w[oB2+x]+w[oB2+s+x-1])
				w[oPQ+x] = ps / (ps + qs)
			}
		}
	}

	// Step 4.2: red at blue and blue at red sites.
	for y := 7; y < s-7; y++ {
		w := t.win(y)
		x0 := 7 + (7^greenFirst(c, y))&1
		o := oR // the colour to interpolate: the opposite of the site's
		if c.Colour[(y&1)*2+x0&1] == 0 {
			o = oB
		}
		rcdOpposite(w, (*[7 * s]float32)(w[o-3*s:o+4*s]), x0)
	}

	// Step 4.3: red and blue at green sites; only the tile's own
	// photosites are needed from here on. Its gradients sum differences of
	// red (blue) photosites two apart, each such difference computed once
	// here into planes no longer needed: |R(x, y) − R(x, y + 2)| in
	// planeCFA, |R(x, y) − R(x + 2, y)| in planeLPF, blue's in planeA and
	// planeB2.
	for y := margin - 3; y <= s-margin; y++ {
		w := t.win(y)
		for x := margin; x < s-margin; x++ {
			w[oCFA+x] = abs(w[oR+x] - w[oR+2*s+x])
			w[oA+x] = abs(w[oB+x] - w[oB+2*s+x])
		}
		if y >= margin && y < s-margin {
			for x := margin - 3; x <= s-margin; x++ {
				w[oLPF+x] = abs(w[oR+x] - w[oR+x+2])
				w[oB2+x] = abs(w[oB+x] - w[oB+x+2])
			}
		}
	}
	for y := margin; y < s-margin; y++ {
		w := t.win(y)
		for x := margin + (margin^greenFirst(c, y)^1)&1; x < s-margin; x += 2 {
			gc := w[oG+x]
			d := refined(w[oVH+x], 0.25*(w[oVH-s+x-1]+w[oVH-s+x+1]+w[oVH+s+x-1]+w[oVH+s+x+1]))
			gn, gs, gw, ge := eps+abs(gc-w[oG-2*s+x]), eps+abs(gc-w[oG+2*s+x]), eps+abs(gc-w[oG+x-2]), eps+abs(gc-w[oG+x+2])
			gnE, gsE, gwE, geE := w[oG-s+x], w[oG+s+x], w[oG+x-1], w[oG+x+1]
			{
				on, os, ow, oe := w[oR-s+x], w[oR+s+x], w[oR+x-1], w[oR+x+1]
				vg, hg := w[oCFA-s+x], w[oLPF+x-1]
				nG := gn + vg + w[oCFA-3*s+x]
				sG := gs + vg + w[oCFA+s+x]
				wG := gw + hg + w[oLPF+x-3]
				eG := ge + hg + w[oLPF+x+1]
				nE, sE, wE, eE := on-gnE, os-gsE, ow-gwE, oe-geE
				vE := (nG*sE + sG*nE) / (nG + sG)
				hE := (eG*wE + wG*eE) / (eG + wG)
				w[oR+x] = clamp01(gc + blend(d, hE, vE))
			}
			{
				on, os, ow, oe := w[oB-s+x], w[oB+s+x], w[oB+x-1], w[oB+x+1]
				vg, hg := w[oA-s+x], w[oB2+x-1]
				nG := gn + vg + w[oA-3*s+x]
				sG := gs + vg + w[oA+s+x]
				wG := gw + hg + w[oB2+x-3]
				eG := ge + hg + w[oB2+x+1]
				nE, sE, wE, eE := on-gnE, os-gsE, ow-gwE, oe-geE
				vE := (nG*sE + sG*nE) / (nG + sG)
				hE := (eG*wE + wG*eE) / (eG + wG)
				w[oB+x] = clamp01(gc + blend(d, hE, vE))
			}
		}
	}

	// Out: the tile's photosites inside the image.
	if t.out != nil { // a band's own placement (band.go)
		t.out(t)
		return
	}
	R, G, B := rgb[0], rgb[1], rgb[2]
	for y := margin; y < s-margin; y++ {
		iy := t.y0 + y
		if iy >= c.H {
			break
		}
		n := min(tile, c.W-ox)
		r, g, b := rowOf(R, y), rowOf(G, y), rowOf(B, y)
		o := dst[(iy*c.W+ox)*3 : (iy*c.W+ox+n)*3]
		for x := 0; x < n && x+margin < s; x++ {
			o[3*x], o[3*x+1], o[3*x+2] = r[x+margin], g[x+margin], b[x+margin]
		}
	}
}

// rcdOpposite is step 4.2 on one window row w (red at blue sites, or blue
// at red), its red and blue sites from column x0 on: the colour
// differences of the four diagonal neighbours, weighted by the gradients
// toward each, blended by P/(P+Q). op holds the rows y − 3 to y + 3 of the
// colour's plane (photosite (x, y + dy) at op[(3+dy)*span + x]).
func rcdOpposite(w *[winLen]float32, op *[7 * span]float32, x0 int) {
	const s, o = span, 3 * span
	for x := max(x0, 7); x < s-7; x += 2 {
		gc := w[oG+x]
		nwo, neo, swo, seo := op[o-s+x-1], op[o-s+x+1], op[o+s+x-1], op[o+s+x+1]
		pg, qg := abs(nwo-seo), abs(neo-swo)
		nwG := eps + pg + abs(nwo-op[o-3*s+x-3]) + abs(gc-w[oG-2*s+x-2])
		neG := eps + qg + abs(neo-op[o-3*s+x+3]) + abs(gc-w[oG-2*s+x+2])
		swG := eps + qg + abs(swo-op[o+3*s+x-3]) + abs(gc-w[oG+2*s+x-2])
		seG := eps + pg + abs(seo-op[o+3*s+x+3]) + abs(gc-w[oG+2*s+x+2])
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
