package demosaic

import (
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
	tile   = 128
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
	rows(c.Threads, ty, func(lo, hi int) {
		t := newRCDTile()
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

// span is the side of a tile's window, s its row stride.
const span = tile + 2*margin

// TileBytes is the memory in bytes of one goroutine's tile planes (eight
// float32 planes of span² photosites); RCD allocates one set per band it
// runs.
const TileBytes = span * span * 8 * 4

// rcdTile holds one window's planes, span×span each.
type rcdTile struct {
	rgb    [3][]float32
	cfa    []float32
	vh, pq []float32
	lpf    []float32
	bufA   []float32
	bufB   []float32
	colour []uint8 // per window photosite
	x0, y0 int     // the image position of window (0, 0)

	// out, when set, stores the tile instead of run's dst (band.go).
	out func(t *rcdTile)
}

func newRCDTile() *rcdTile {
	n := span * span
	mk := func() []float32 { return make([]float32, n) }
	return &rcdTile{rgb: [3][]float32{mk(), mk(), mk()}, cfa: mk(), vh: mk(), pq: mk(), lpf: mk(), bufA: mk(), bufB: mk()}
}

func sq(v float32) float32 { return v * v }

func abs(v float32) float32 {
	if v < 0 {
		return -v
	}
	return v
}

// blend returns a·b + (1 − a)·c.
func blend(a, b, c float32) float32 { return a*(b-c) + c }

// firstNonGreen returns the first column ≥ lo of window row y whose
// photosite is red or blue (every second one from there).
func (t *rcdTile) firstNonGreen(c *CFA, y, lo int) int {
	p := 0
	if c.Colour[(y&1)*2] == 1 {
		p = 1
	}
	return lo + (lo^p)&1
}

// run demosaics the tile whose top-left output photosite is (ox, oy).
func (t *rcdTile) run(c *CFA, ox, oy int, dst []float32) {
	const s = span
	t.x0, t.y0 = ox-margin, oy-margin
	cfa, vh, pq, lpf := t.cfa, t.vh, t.pq, t.lpf
	R, G, B := t.rgb[0], t.rgb[1], t.rgb[2]
	rgb := t.rgb
	// The window's CFA, mirrored at the image's edges. margin is even, so
	// window parity equals image parity.
	for wy := range s {
		y := reflect(t.y0+wy, c.H)
		row := cfa[wy*s : (wy+1)*s]
		c.normRow(y, t.x0, row)
		ph := (y & 1) * 2
		for wx, v := range row {
			i := wy*s + wx
			R[i], G[i], B[i] = 0, 0, 0
			rgb[c.Colour[ph+wx&1]][i] = v
		}
	}

	// Step 1: vertical and horizontal discrimination.
	v, h := t.bufA, t.bufB
	for y := 3; y < s-3; y++ {
		for x := 3; x < s-3; x++ {
			i := y*s + x
			v[i] = sq(cfa[i-3*s] - 3*cfa[i-2*s] - cfa[i-s] + 6*cfa[i] - cfa[i+s] - 3*cfa[i+2*s] + cfa[i+3*s])
			h[i] = sq(cfa[i-3] - 3*cfa[i-2] - cfa[i-1] + 6*cfa[i] - cfa[i+1] - 3*cfa[i+2] + cfa[i+3])
		}
	}
	for y := 4; y < s-4; y++ {
		for x := 4; x < s-4; x++ {
			i := y*s + x
			vs := max(epsSq, v[i-s]+v[i]+v[i+s])
			hs := max(epsSq, h[i-1]+h[i]+h[i+1])
			vh[i] = vs / (vs + hs)
		}
	}

	// Step 2: low-pass filter (needed at red and blue sites).
	for y := 1; y < s-1; y++ {
		for x := t.firstNonGreen(c, y, 1); x < s-1; x += 2 {
			i := y*s + x
			lpf[i] = cfa[i] + 0.5*(cfa[i-s]+cfa[i+s]+cfa[i-1]+cfa[i+1]) + 0.25*(cfa[i-s-1]+cfa[i-s+1]+cfa[i+s-1]+cfa[i+s+1])
		}
	}

	// Step 3: green at red and blue sites.
	for y := 5; y < s-5; y++ {
		for x := t.firstNonGreen(c, y, 5); x < s-5; x += 2 {
			i := y*s + x
			c0 := cfa[i]
			nG := eps + abs(cfa[i-s]-cfa[i+s]) + abs(c0-cfa[i-2*s]) + abs(cfa[i-s]-cfa[i-3*s]) + abs(cfa[i-2*s]-cfa[i-4*s])
			sG := eps + abs(cfa[i-s]-cfa[i+s]) + abs(c0-cfa[i+2*s]) + abs(cfa[i+s]-cfa[i+3*s]) + abs(cfa[i+2*s]-cfa[i+4*s])
			wG := eps + abs(cfa[i-1]-cfa[i+1]) + abs(c0-cfa[i-2]) + abs(cfa[i-1]-cfa[i-3]) + abs(cfa[i-2]-cfa[i-4])
			eG := eps + abs(cfa[i-1]-cfa[i+1]) + abs(c0-cfa[i+2]) + abs(cfa[i+1]-cfa[i+3]) + abs(cfa[i+2]-cfa[i+4])
			l := lpf[i]
			nE := cfa[i-s] * (1 + (l-lpf[i-2*s])/(eps+l+lpf[i-2*s]))
			sE := cfa[i+s] * (1 + (l-lpf[i+2*s])/(eps+l+lpf[i+2*s]))
			wE := cfa[i-1] * (1 + (l-lpf[i-2])/(eps+l+lpf[i-2]))
			eE := cfa[i+1] * (1 + (l-lpf[i+2])/(eps+l+lpf[i+2]))
			vE := (sG*nE + nG*sE) / (nG + sG)
			hE := (eG*wE + wG*eE) / (eG + wG)
			d := refined(vh, i, s)
			G[i] = clamp01(blend(d, hE, vE))
		}
	}

	// Step 4.1: diagonal discrimination, needed at red and blue sites
	// (whose diagonal neighbours are red and blue sites too).
	p, q := t.bufA, t.bufB
	for y := 3; y < s-3; y++ {
		for x := t.firstNonGreen(c, y, 3); x < s-3; x += 2 {
			i := y*s + x
			p[i] = sq(cfa[i-3*s-3] - 3*cfa[i-2*s-2] - cfa[i-s-1] + 6*cfa[i] - cfa[i+s+1] - 3*cfa[i+2*s+2] + cfa[i+3*s+3])
			q[i] = sq(cfa[i-3*s+3] - 3*cfa[i-2*s+2] - cfa[i-s+1] + 6*cfa[i] - cfa[i+s-1] - 3*cfa[i+2*s-2] + cfa[i+3*s-3])
		}
	}
	for y := 4; y < s-4; y++ {
		for x := t.firstNonGreen(c, y, 4); x < s-4; x += 2 {
			i := y*s + x
			ps := max(epsSq, p[i-s-1]+p[i]+p[i+s+1])
			qs := max(epsSq, q[i-s+1]+q[i]+q[i+s-1])
			pq[i] = ps / (ps + qs)
		}
	}

	// Step 4.2: red at blue and blue at red sites.
	for y := 7; y < s-7; y++ {
		x0 := t.firstNonGreen(c, y, 7)
		o := rgb[2-c.Colour[(y&1)*2+x0&1]]
		for x := x0; x < s-7; x += 2 {
			i := y*s + x
			g0 := G[i]
			nwG := eps + abs(o[i-s-1]-o[i+s+1]) + abs(o[i-s-1]-o[i-3*s-3]) + abs(g0-G[i-2*s-2])
			neG := eps + abs(o[i-s+1]-o[i+s-1]) + abs(o[i-s+1]-o[i-3*s+3]) + abs(g0-G[i-2*s+2])
			swG := eps + abs(o[i-s+1]-o[i+s-1]) + abs(o[i+s-1]-o[i+3*s-3]) + abs(g0-G[i+2*s-2])
			seG := eps + abs(o[i-s-1]-o[i+s+1]) + abs(o[i+s+1]-o[i+3*s+3]) + abs(g0-G[i+2*s+2])
			nwE := o[i-s-1] - G[i-s-1]
			neE := o[i-s+1] - G[i-s+1]
			swE := o[i+s-1] - G[i+s-1]
			seE := o[i+s+1] - G[i+s+1]
			pE := (nwG*seE + seG*nwE) / (nwG + seG)
			qE := (neG*swE + swG*neE) / (neG + swG)
			d := refined(pq, i, s)
			o[i] = clamp01(g0 + blend(d, qE, pE))
		}
	}

	// Step 4.3: red and blue at green sites; only the tile's own
	// photosites are needed from here on.
	for y := margin; y < s-margin; y++ {
		for x := t.firstNonGreen(c, y, margin) ^ 1; x < s-margin; x += 2 {
			i := y*s + x
			g0 := G[i]
			d := refined(vh, i, s)
			for _, o := range [2][]float32{R, B} {
				nG := eps + abs(g0-G[i-2*s]) + abs(o[i-s]-o[i+s]) + abs(o[i-s]-o[i-3*s])
				sG := eps + abs(g0-G[i+2*s]) + abs(o[i+s]-o[i-s]) + abs(o[i+s]-o[i+3*s])
				wG := eps + abs(g0-G[i-2]) + abs(o[i-1]-o[i+1]) + abs(o[i-1]-o[i-3])
				eG := eps + abs(g0-G[i+2]) + abs(o[i+1]-o[i-1]) + abs(o[i+1]-o[i+3])
				nE := o[i-s] - G[i-s]
				sE := o[i+s] - G[i+s]
				wE := o[i-1] - G[i-1]
				eE := o[i+1] - G[i+1]
				vE := (nG*sE + sG*nE) / (nG + sG)
				hE := (eG*wE + wG*eE) / (eG + wG)
				o[i] = clamp01(g0 + blend(d, hE, vE))
			}
		}
	}

	// Out: the tile's photosites inside the image.
	if t.out != nil { // a band's own placement (band.go)
		t.out(t)
		return
	}
	for y := margin; y < s-margin; y++ {
		iy := t.y0 + y
		if iy >= c.H {
			break
		}
		for x := margin; x < s-margin; x++ {
			ix := t.x0 + x
			if ix >= c.W {
				break
			}
			i := y*s + x
			o := dst[(iy*c.W+ix)*3 : (iy*c.W+ix)*3+3]
			o[0], o[1], o[2] = R[i], G[i], B[i]
		}
	}
}

// refined returns the discrimination at i: its own value d, or the mean
// of its four diagonal neighbours when that lies further from ½ (more
// decided).
func refined(d []float32, i, s int) float32 {
	c := d[i]
	n := 0.25 * (d[i-s-1] + d[i-s+1] + d[i+s-1] + d[i+s+1])
	if abs(0.5-c) < abs(0.5-n) {
		return n
	}
	return c
}
