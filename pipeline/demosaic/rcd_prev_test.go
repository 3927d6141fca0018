package demosaic

// The RCD kernel of rcd.go before its rows were pipelined (every step a
// pass over a square tile's window), kept as the reference the pipelined
// kernel must equal bit for bit (TestRCDMatchesPrevious), and its speed
// the baseline of BenchmarkRCDKernel.

import (
	"math"
	"sync"
	"sync/atomic"
)

// The steps, tiling and margin are rcd.go's (see RCD's comment); here each
// step is one pass over a square window of prevSpan² photosites.
const (
	prevTile   = 192
	prevMargin = 10
	// prevEps keeps the ratios and gradient weights finite on black areas;
	// prevEpsSq is its square, for the squared filter responses.
	prevEps   = 1e-5
	prevEpsSq = 1e-10
)

// prevRCD demosaics c into dst (W×H×3 float32, interleaved, at least 3·W·H
// values) by Ratio Corrected Demosaicing, in parallel over bands of prevTile
// rows, top to bottom (up to c.Threads or GOMAXPROCS goroutines, each with
// its own prevTileBytes of tile planes). Results do not depend on the number of goroutines.
// Images narrower or lower than 2 photosites are demosaiced bilinearly.
// Errors: an invalid CFA (ErrNotBayer, sizes).
func prevRCD(c CFA, dst []float32) error {
	if err := c.check(dst); err != nil {
		return err
	}
	if c.W < 2 || c.H < 2 {
		return Bilinear(c, dst)
	}
	tx, ty := (c.W+prevTile-1)/prevTile, (c.H+prevTile-1)/prevTile
	p := prevProgress{done: make([]bool, ty), f: c.Done}
	var stopped atomic.Bool
	// One set of prevTile planes per goroutine, taken for each band and
	// handed back after it: at most as many as bands run at once.
	free := make(chan *prevRcdTile, ty)
	rows(c.Threads, ty, func(lo, hi int) {
		var t *prevRcdTile
		select {
		case t = <-free:
		default:
			t = prevNewRCDTile()
		}
		defer func() { free <- t }()
		for by := lo; by < hi; by++ {
			if stopped.Load() || c.Stop != nil && c.Stop() {
				stopped.Store(true)
				return
			}
			for bx := range tx {
				t.run(&c, bx*prevTile, by*prevTile, dst)
			}
			p.finished(by, c.H)
		}
	})
	if stopped.Load() {
		return ErrStopped
	}
	return nil
}

// prevProgress tracks which bands of tiles are done, for CFA.Done: band b
// reads rows b·prevTile − prevMargin to (b+1)·prevTile + prevMargin, so when every band
// before b is done no row above b·prevTile − prevMargin is read again.
type prevProgress struct {
	mu       sync.Mutex
	done     []bool
	next     int // the first band not done
	released int
	f        func(y int)
}

func (p *prevProgress) finished(band, h int) {
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
		y = max(0, p.next*prevTile-prevMargin)
	}
	if y > p.released {
		p.released = y
		p.f(y)
	}
}

// prevSpan is the side of a prevTile's window, s its row stride; prevPlane the
// photosites of one window prevPlane.
const (
	prevSpan  = prevTile + 2*prevMargin
	prevPlane = prevSpan * prevSpan
)

// The planes of a prevTile, in the order they lie in prevRcdTile.buf: red, green
// and blue, the normalised CFA, the V/(V+H) and P/(P+Q) discriminations,
// the low-pass filter, and two planes for the squared filter responses
// (V and H in step 1, P and Q in step 4.1).
const (
	prevPlaneR = iota
	prevPlaneG
	prevPlaneB
	prevPlaneCFA
	prevPlaneVH
	prevPlanePQ
	prevPlaneLPF
	prevPlaneA
	prevPlaneB2
	prevTilePlanes
)

// prevTileBytes is the memory in bytes of one goroutine's prevTile planes
// (prevTilePlanes float32 planes of span² photosites and 8 padding rows); prevRCD
// allocates one set per goroutine and reuses it from prevTile to prevTile.
const prevTileBytes = (prevTilePlanes*prevPlane + 8*prevSpan) * 4

// A window row w (prevRcdTile.win) sees every prevPlane from 4 rows above a row y
// to 4 rows below it through one array: photosite (x, y + dy) of prevPlane k
// is w[k*prevPlane + (4+dy)*prevSpan + x]. The offsets o* below are those of row
// y, column 0, of each prevPlane. Indexing one fixed-size array with x plus
// a constant, x bounded by its loop, needs no bounds check, and the whole
// kernel addresses its planes from one base register.
const (
	prevWinLen = (prevTilePlanes-1)*prevPlane + 9*prevSpan
	prevOR     = prevPlaneR*prevPlane + 4*prevSpan
	prevOG     = prevPlaneG*prevPlane + 4*prevSpan
	prevOB     = prevPlaneB*prevPlane + 4*prevSpan
	prevOCFA   = prevPlaneCFA*prevPlane + 4*prevSpan
	prevOVH    = prevPlaneVH*prevPlane + 4*prevSpan
	prevOPQ    = prevPlanePQ*prevPlane + 4*prevSpan
	prevOLPF   = prevPlaneLPF*prevPlane + 4*prevSpan
	prevOA     = prevPlaneA*prevPlane + 4*prevSpan
	prevOB2    = prevPlaneB2*prevPlane + 4*prevSpan
)

// prevRcdTile holds one window's planes, prevSpan×prevSpan each. Every step writes
// each photosite it later reads within the same prevTile, so the planes need
// no clearing between tiles.
type prevRcdTile struct {
	// buf holds the planes in the order of prevPlaneR..planeB2, after 4
	// padding rows and followed by 4 more, so that every row's window
	// (win) lies inside it.
	buf    []float32
	rgb    [3][]float32
	cfa    []float32
	x0, y0 int // the image position of window (0, 0)

	// out, when set, stores the prevTile instead of run's dst (band.go).
	out func(t *prevRcdTile)
}

func prevNewRCDTile() *prevRcdTile {
	buf := make([]float32, prevTilePlanes*prevPlane+8*prevSpan)
	mk := func(k int) []float32 {
		return buf[4*prevSpan+k*prevPlane : 4*prevSpan+(k+1)*prevPlane : 4*prevSpan+(k+1)*prevPlane]
	}
	return &prevRcdTile{buf: buf, rgb: [3][]float32{mk(prevPlaneR), mk(prevPlaneG), mk(prevPlaneB)}, cfa: mk(prevPlaneCFA)}
}

// win returns the window of row y (see prevWinLen).
func (t *prevRcdTile) win(y int) *[prevWinLen]float32 {
	return (*[prevWinLen]float32)(t.buf[y*prevSpan : y*prevSpan+prevWinLen])
}

// prevWrow is one row of a window prevPlane.
type prevWrow = [prevSpan]float32

// prevRowOf returns row y of the window prevPlane p.
func prevRowOf(p []float32, y int) *prevWrow { return (*prevWrow)(p[y*prevSpan : (y+1)*prevSpan]) }

func prevSq(v float32) float32 { return v * v }

// prevAbs is |v| without a branch (a branch mispredicts on noisy data).
func prevAbs(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// prevBlend returns a·b + (1 − a)·c.
func prevBlend(a, b, c float32) float32 { return a*(b-c) + c }

// prevRefined returns the discrimination of a photosite: its own value c, or
// n, the mean of its four diagonal neighbours, when that lies further from
// ½ (more decided). Branchless: the magnitudes of non-negative floats
// order as their bits do.
func prevRefined(c, n float32) float32 {
	a := math.Float32bits(0.5-c) &^ (1 << 31)
	b := math.Float32bits(0.5-n) &^ (1 << 31)
	r := math.Float32bits(c)
	if a < b {
		r = math.Float32bits(n)
	}
	return math.Float32frombits(r)
}

// prevGreenFirst is 1 when window row y starts with a green photosite, else 0.
func prevGreenFirst(c *CFA, y int) int {
	if c.Colour[(y&1)*2] == 1 {
		return 1
	}
	return 0
}

// run demosaics the prevTile whose top-left output photosite is (ox, oy).
func (t *prevRcdTile) run(c *CFA, ox, oy int, dst []float32) {
	const s = prevSpan
	t.x0, t.y0 = ox-prevMargin, oy-prevMargin
	rgb := t.rgb
	// The window's CFA, mirrored at the image's edges, and each sample in
	// its own colour's prevPlane. prevMargin and prevTile are even, so window parity
	// equals image parity.
	for wy := range s {
		y := reflect(t.y0+wy, c.H)
		cr := prevRowOf(t.cfa, wy)
		prevNormRow(c, y, t.x0, cr[:])
		ph := (y & 1) * 2
		p0, p1 := prevRowOf(rgb[c.Colour[ph]], wy), prevRowOf(rgb[c.Colour[ph+1]], wy)
		for x := 0; x+1 < s; x += 2 {
			p0[x], p1[x+1] = cr[x], cr[x+1]
		}
	}

	// Step 1: vertical and horizontal discrimination (V in prevPlaneA, H in
	// prevPlaneB2); the V/(V+H) of row y − 1 as soon as the filter responses
	// of row y are there.
	for y := 3; y < s-3; y++ {
		w := t.win(y)
		for x := 3; x < s-3; x++ {
			w[prevOA+x] = prevSq(w[prevOCFA-3*s+x] - 3*w[prevOCFA-2*s+x] - w[prevOCFA-s+x] + 6*w[prevOCFA+x] - w[prevOCFA+s+x] - 3*w[prevOCFA+2*s+x] + w[prevOCFA+3*s+x])
			w[prevOB2+x] = prevSq(w[prevOCFA+x-3] - 3*w[prevOCFA+x-2] - w[prevOCFA+x-1] + 6*w[prevOCFA+x] - w[prevOCFA+x+1] - 3*w[prevOCFA+x+2] + w[prevOCFA+x+3])
		}
		if y-1 >= 4 {
			w := t.win(y - 1)
			for x := 4; x < s-4; x++ {
				vs := max(prevEpsSq, w[prevOA-s+x]+w[prevOA+x]+w[prevOA+s+x])
				hs := max(prevEpsSq, w[prevOB2+x-1]+w[prevOB2+x]+w[prevOB2+x+1])
				w[prevOVH+x] = vs / (vs + hs)
			}
		}
	}

	// Step 2: low-pass filter (needed at red and blue sites); and for
	// step 3's gradients, which sum differences of photosites two apart,
	// each such difference once: |CFA(x, y) − CFA(x, y + 2)| in prevPlaneA and
	// |CFA(x, y) − CFA(x + 2, y)| in prevPlaneB2 (V and H are no longer
	// needed).
	for y := 1; y < s-1; y++ {
		w := t.win(y)
		for x := 1 + (1^prevGreenFirst(c, y))&1; x < s-1; x += 2 {
			w[prevOLPF+x] = w[prevOCFA+x] + 0.5*(w[prevOCFA-s+x]+w[prevOCFA+s+x]+w[prevOCFA+x-1]+w[prevOCFA+x+1]) +
				0.25*(w[prevOCFA-s+x-1]+w[prevOCFA-s+x+1]+w[prevOCFA+s+x-1]+w[prevOCFA+s+x+1])
		}
		if y < s-3 {
			for x := 5; x < s-5; x++ {
				w[prevOA+x] = prevAbs(w[prevOCFA+x] - w[prevOCFA+2*s+x])
			}
		}
		if y >= 5 && y < s-5 {
			for x := 1; x < s-3; x++ {
				w[prevOB2+x] = prevAbs(w[prevOCFA+x] - w[prevOCFA+x+2])
			}
		}
	}

	// Step 3: green at red and blue sites.
	for y := 5; y < s-5; y++ {
		w := t.win(y)
		for x := 5 + (5^prevGreenFirst(c, y))&1; x < s-5; x += 2 {
			// |CFA(y − 1) − CFA(y + 1)|, |CFA(y) − CFA(y − 2)|, ... as
			// step 2 stored them (prevPlaneA vertical, prevPlaneB2 horizontal).
			vg := w[prevOA-s+x]
			hg := w[prevOB2+x-1]
			nG := prevEps + vg + w[prevOA-2*s+x] + w[prevOA-3*s+x] + w[prevOA-4*s+x]
			sG := prevEps + vg + w[prevOA+x] + w[prevOA+s+x] + w[prevOA+2*s+x]
			wG := prevEps + hg + w[prevOB2+x-2] + w[prevOB2+x-3] + w[prevOB2+x-4]
			eG := prevEps + hg + w[prevOB2+x] + w[prevOB2+x+1] + w[prevOB2+x+2]
			l := w[prevOLPF+x]
			ln, ls, lw, le := w[prevOLPF-2*s+x], w[prevOLPF+2*s+x], w[prevOLPF+x-2], w[prevOLPF+x+2]
			nE := w[prevOCFA-s+x] * (1 + (l-ln)/(prevEps+l+ln))
			sE := w[prevOCFA+s+x] * (1 + (l-ls)/(prevEps+l+ls))
			wE := w[prevOCFA+x-1] * (1 + (l-lw)/(prevEps+l+lw))
			eE := w[prevOCFA+x+1] * (1 + (l-le)/(prevEps+l+le))
			vE := (sG*nE + nG*sE) / (nG + sG)
			hE := (eG*wE + wG*eE) / (eG + wG)
			d := prevRefined(w[prevOVH+x], 0.25*(w[prevOVH-s+x-1]+w[prevOVH-s+x+1]+w[prevOVH+s+x-1]+w[prevOVH+s+x+1]))
			w[prevOG+x] = prevClamp01(prevBlend(d, hE, vE))
		}
	}

	// Step 4.1: diagonal discrimination, needed at red and blue sites
	// (whose diagonal neighbours are red and blue sites too), P in prevPlaneA
	// and Q in prevPlaneB2; P/(P+Q) of row y − 1 as soon as the responses of
	// row y are there.
	for y := 3; y < s-3; y++ {
		w := t.win(y)
		for x := 3 + (3^prevGreenFirst(c, y))&1; x < s-3; x += 2 {
			w[prevOA+x] = prevSq(w[prevOCFA-3*s+x-3] - 3*w[prevOCFA-2*s+x-2] - w[prevOCFA-s+x-1] + 6*w[prevOCFA+x] - w[prevOCFA+s+x+1] - 3*w[prevOCFA+2*s+x+2] + w[prevOCFA+3*s+x+3])
			w[prevOB2+x] = prevSq(w[prevOCFA-3*s+x+3] - 3*w[prevOCFA-2*s+x+2] - w[prevOCFA-s+x+1] + 6*w[prevOCFA+x] - w[prevOCFA+s+x-1] - 3*w[prevOCFA+2*s+x-2] + w[prevOCFA+3*s+x-3])
		}
		if yy := y - 1; yy >= 4 {
			w := t.win(yy)
			for x := 4 + (4^prevGreenFirst(c, yy))&1; x < s-4; x += 2 {
				ps := max(prevEpsSq, w[prevOA-s+x-1]+w[prevOA+x]+w[prevOA+s+x+1])
				qs := max(prevEpsSq, w[prevOB2-s+x+1]+w[prevOB2+x]+w[prevOB2+s+x-1])
				w[prevOPQ+x] = ps / (ps + qs)
			}
		}
	}

	// Step 4.2: red at blue and blue at red sites.
	for y := 7; y < s-7; y++ {
		w := t.win(y)
		x0 := 7 + (7^prevGreenFirst(c, y))&1
		o := prevOR // the colour to interpolate: the opposite of the site's
		if c.Colour[(y&1)*2+x0&1] == 0 {
			o = prevOB
		}
		prevRcdOpposite(w, (*[7 * s]float32)(w[o-3*s:o+4*s]), x0)
	}

	// Step 4.3: red and blue at green sites; only the prevTile's own
	// photosites are needed from here on. Its gradients sum differences of
	// red (blue) photosites two apart, each such difference computed once
	// here into planes no longer needed: |R(x, y) − R(x, y + 2)| in
	// prevPlaneCFA, |R(x, y) − R(x + 2, y)| in prevPlaneLPF, blue's in prevPlaneA and
	// prevPlaneB2.
	for y := prevMargin - 3; y <= s-prevMargin; y++ {
		w := t.win(y)
		for x := prevMargin; x < s-prevMargin; x++ {
			w[prevOCFA+x] = prevAbs(w[prevOR+x] - w[prevOR+2*s+x])
			w[prevOA+x] = prevAbs(w[prevOB+x] - w[prevOB+2*s+x])
		}
		if y >= prevMargin && y < s-prevMargin {
			for x := prevMargin - 3; x <= s-prevMargin; x++ {
				w[prevOLPF+x] = prevAbs(w[prevOR+x] - w[prevOR+x+2])
				w[prevOB2+x] = prevAbs(w[prevOB+x] - w[prevOB+x+2])
			}
		}
	}
	for y := prevMargin; y < s-prevMargin; y++ {
		w := t.win(y)
		for x := prevMargin + (prevMargin^prevGreenFirst(c, y)^1)&1; x < s-prevMargin; x += 2 {
			gc := w[prevOG+x]
			d := prevRefined(w[prevOVH+x], 0.25*(w[prevOVH-s+x-1]+w[prevOVH-s+x+1]+w[prevOVH+s+x-1]+w[prevOVH+s+x+1]))
			gn, gs, gw, ge := prevEps+prevAbs(gc-w[prevOG-2*s+x]), prevEps+prevAbs(gc-w[prevOG+2*s+x]), prevEps+prevAbs(gc-w[prevOG+x-2]), prevEps+prevAbs(gc-w[prevOG+x+2])
			gnE, gsE, gwE, geE := w[prevOG-s+x], w[prevOG+s+x], w[prevOG+x-1], w[prevOG+x+1]
			{
				on, os, ow, oe := w[prevOR-s+x], w[prevOR+s+x], w[prevOR+x-1], w[prevOR+x+1]
				vg, hg := w[prevOCFA-s+x], w[prevOLPF+x-1]
				nG := gn + vg + w[prevOCFA-3*s+x]
				sG := gs + vg + w[prevOCFA+s+x]
				wG := gw + hg + w[prevOLPF+x-3]
				eG := ge + hg + w[prevOLPF+x+1]
				nE, sE, wE, eE := on-gnE, os-gsE, ow-gwE, oe-geE
				vE := (nG*sE + sG*nE) / (nG + sG)
				hE := (eG*wE + wG*eE) / (eG + wG)
				w[prevOR+x] = prevClamp01(gc + prevBlend(d, hE, vE))
			}
			{
				on, os, ow, oe := w[prevOB-s+x], w[prevOB+s+x], w[prevOB+x-1], w[prevOB+x+1]
				vg, hg := w[prevOA-s+x], w[prevOB2+x-1]
				nG := gn + vg + w[prevOA-3*s+x]
				sG := gs + vg + w[prevOA+s+x]
				wG := gw + hg + w[prevOB2+x-3]
				eG := ge + hg + w[prevOB2+x+1]
				nE, sE, wE, eE := on-gnE, os-gsE, ow-gwE, oe-geE
				vE := (nG*sE + sG*nE) / (nG + sG)
				hE := (eG*wE + wG*eE) / (eG + wG)
				w[prevOB+x] = prevClamp01(gc + prevBlend(d, hE, vE))
			}
		}
	}

	// Out: the prevTile's photosites inside the image.
	if t.out != nil { // a band's own placement (band.go)
		t.out(t)
		return
	}
	R, G, B := rgb[0], rgb[1], rgb[2]
	for y := prevMargin; y < s-prevMargin; y++ {
		iy := t.y0 + y
		if iy >= c.H {
			break
		}
		n := min(prevTile, c.W-ox)
		r, g, b := prevRowOf(R, y), prevRowOf(G, y), prevRowOf(B, y)
		o := dst[(iy*c.W+ox)*3 : (iy*c.W+ox+n)*3]
		for x := 0; x < n && x+prevMargin < s; x++ {
			o[3*x], o[3*x+1], o[3*x+2] = r[x+prevMargin], g[x+prevMargin], b[x+prevMargin]
		}
	}
}

// prevRcdOpposite is step 4.2 on one window row w (red at blue sites, or blue
// at red), its red and blue sites from column x0 on: the colour
// differences of the four diagonal neighbours, weighted by the gradients
// toward each, blended by P/(P+Q). op holds the rows y − 3 to y + 3 of the
// colour's prevPlane (photosite (x, y + dy) at op[(3+dy)*prevSpan + x]).
func prevRcdOpposite(w *[prevWinLen]float32, op *[7 * prevSpan]float32, x0 int) {
	const s, o = prevSpan, 3 * prevSpan
	for x := max(x0, 7); x < s-7; x += 2 {
		gc := w[prevOG+x]
		nwo, neo, swo, seo := op[o-s+x-1], op[o-s+x+1], op[o+s+x-1], op[o+s+x+1]
		pg, qg := prevAbs(nwo-seo), prevAbs(neo-swo)
		nwG := prevEps + pg + prevAbs(nwo-op[o-3*s+x-3]) + prevAbs(gc-w[prevOG-2*s+x-2])
		neG := prevEps + qg + prevAbs(neo-op[o-3*s+x+3]) + prevAbs(gc-w[prevOG-2*s+x+2])
		swG := prevEps + qg + prevAbs(swo-op[o+3*s+x-3]) + prevAbs(gc-w[prevOG+2*s+x-2])
		seG := prevEps + pg + prevAbs(seo-op[o+3*s+x+3]) + prevAbs(gc-w[prevOG+2*s+x+2])
		nwE := nwo - w[prevOG-s+x-1]
		neE := neo - w[prevOG-s+x+1]
		swE := swo - w[prevOG+s+x-1]
		seE := seo - w[prevOG+s+x+1]
		pE := (nwG*seE + seG*nwE) / (nwG + seG)
		qE := (neG*swE + swG*neE) / (neG + swG)
		d := prevRefined(w[prevOPQ+x], 0.25*(w[prevOPQ-s+x-1]+w[prevOPQ-s+x+1]+w[prevOPQ+s+x-1]+w[prevOPQ+s+x+1]))
		op[o+x] = prevClamp01(gc + prevBlend(d, qE, pE))
	}
}

func prevNormRow(c *CFA, y, x0 int, out []float32) {
	row := c.Pix[y*c.Stride : y*c.Stride+c.W]
	ph := (y & 1) * 2
	if c.BlackPattern == nil && x0 >= 0 && x0+len(out) <= c.W {
		// Inside the image, one black level and scale per column parity.
		src := row[x0 : x0+len(out)]
		p := ph + x0&1
		b0, s0 := c.Black[p], c.Scale[p]
		b1, s1 := c.Black[p^1], c.Scale[p^1]
		i := 0
		for ; i+1 < len(src) && i+1 < len(out); i += 2 {
			out[i] = prevClamp01((float32(src[i]) - b0) * s0)
			out[i+1] = prevClamp01((float32(src[i+1]) - b1) * s1)
		}
		if i < len(src) && i < len(out) {
			out[i] = prevClamp01((float32(src[i]) - b0) * s0)
		}
		return
	}
	var pat []float32
	if c.BlackPattern != nil {
		r := y % c.PatternRows
		pat = c.BlackPattern[r*c.PatternCols : (r+1)*c.PatternCols]
	}
	for i := range out {
		x := reflect(x0+i, c.W)
		p := ph + x&1
		b := c.Black[p]
		if pat != nil {
			b += pat[x%c.PatternCols]
		}
		out[i] = prevClamp01((float32(row[x]) - b) * c.Scale[p])
	}
}

func prevClamp01(v float32) float32 {
	b := int32(math.Float32bits(v))
	b &^= b >> 31
	b = min(b, 0x3f800000)
	return math.Float32frombits(uint32(b))
}
