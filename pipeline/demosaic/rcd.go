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
	free := make(chan *rcdTile, ty)
	rows(c.Threads, ty, func(lo, hi int) {
		var t *rcdTile
		select {
		case t = <-free:
		default:
			t = newRCDTile()
		}
		defer func() { free <- t }()
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

// tilePlanes is the number of float32 planes of span² photosites a tile
// holds (rcdTile).
const tilePlanes = 9

// TileBytes is the memory in bytes of one goroutine's tile planes
// (tilePlanes float32 planes of span² photosites); RCD allocates one set
// per goroutine and reuses it from tile to tile.
const TileBytes = span * span * tilePlanes * 4

// wrow is one row of a window plane. The kernel reads and writes planes
// through *wrow, so that an index proven below span needs no bounds check.
type wrow = [span]float32

// rowOf returns row y of the window plane p.
func rowOf(p []float32, y int) *wrow { return (*wrow)(p[y*span : (y+1)*span]) }

// rcdTile holds one window's planes, span×span each. Every step writes
// each photosite it later reads within the same tile, so the planes need
// no clearing between tiles.
type rcdTile struct {
	rgb    [3][]float32
	cfa    []float32
	vh, pq []float32
	lpf    []float32
	bufA   []float32
	bufB   []float32
	x0, y0 int // the image position of window (0, 0)
}

func newRCDTile() *rcdTile {
	n := span * span
	buf := make([]float32, tilePlanes*n)
	mk := func(k int) []float32 { return buf[k*n : (k+1)*n : (k+1)*n] }
	return &rcdTile{rgb: [3][]float32{mk(0), mk(1), mk(2)}, cfa: mk(3), vh: mk(4), pq: mk(5), lpf: mk(6), bufA: mk(7), bufB: mk(8)}
}

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

// diagMean is the mean of the four diagonal neighbours of column x of
// row c, from the rows above (u) and below (d).
func diagMean(u, d *wrow, x int) float32 { return 0.25 * (u[x-1] + u[x+1] + d[x-1] + d[x+1]) }

// nonGreen returns the first column ≥ lo of window row y whose photosite
// is red or blue (every second one from there): lo or lo + 1.
func nonGreen(c *CFA, y, lo int) int {
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
	// The window's CFA, mirrored at the image's edges, and each sample in
	// its own colour's plane. margin and tile are even, so window parity
	// equals image parity.
	for wy := range s {
		y := reflect(t.y0+wy, c.H)
		cr := rowOf(cfa, wy)
		c.normRow(y, t.x0, cr[:])
		ph := (y & 1) * 2
		p0, p1 := rowOf(rgb[c.Colour[ph]], wy), rowOf(rgb[c.Colour[ph+1]], wy)
		for x := 0; x+1 < s; x += 2 {
			p0[x], p1[x+1] = cr[x], cr[x+1]
		}
	}

	// Step 1: vertical and horizontal discrimination; the V/(V+H) of row
	// y − 1 as soon as the filter responses of row y are there.
	v, h := t.bufA, t.bufB
	for y := 3; y < s-3; y++ {
		c3u, c2u, c1u, c0 := rowOf(cfa, y-3), rowOf(cfa, y-2), rowOf(cfa, y-1), rowOf(cfa, y)
		c1d, c2d, c3d := rowOf(cfa, y+1), rowOf(cfa, y+2), rowOf(cfa, y+3)
		vr, hr := rowOf(v, y), rowOf(h, y)
		for x := 3; x < s-3; x++ {
			vr[x] = sq(c3u[x] - 3*c2u[x] - c1u[x] + 6*c0[x] - c1d[x] - 3*c2d[x] + c3d[x])
			hr[x] = sq(c0[x-3] - 3*c0[x-2] - c0[x-1] + 6*c0[x] - c0[x+1] - 3*c0[x+2] + c0[x+3])
		}
		if yy := y - 1; yy >= 4 {
			vu, vc, vd, hc, o := rowOf(v, yy-1), rowOf(v, yy), vr, rowOf(h, yy), rowOf(vh, yy)
			for x := 4; x < s-4; x++ {
				vs := max(epsSq, vu[x]+vc[x]+vd[x])
				hs := max(epsSq, hc[x-1]+hc[x]+hc[x+1])
				o[x] = vs / (vs + hs)
			}
		}
	}

	// Step 2: low-pass filter (needed at red and blue sites).
	for y := 1; y < s-1; y++ {
		u, c0, d, l := rowOf(cfa, y-1), rowOf(cfa, y), rowOf(cfa, y+1), rowOf(lpf, y)
		for x := nonGreen(c, y, 1); x < s-1; x += 2 {
			l[x] = c0[x] + 0.5*(u[x]+d[x]+c0[x-1]+c0[x+1]) + 0.25*(u[x-1]+u[x+1]+d[x-1]+d[x+1])
		}
	}

	// Step 3: green at red and blue sites.
	for y := 5; y < s-5; y++ {
		c4u, c3u, c2u, c1u, c0 := rowOf(cfa, y-4), rowOf(cfa, y-3), rowOf(cfa, y-2), rowOf(cfa, y-1), rowOf(cfa, y)
		c1d, c2d, c3d, c4d := rowOf(cfa, y+1), rowOf(cfa, y+2), rowOf(cfa, y+3), rowOf(cfa, y+4)
		l2u, l0, l2d := rowOf(lpf, y-2), rowOf(lpf, y), rowOf(lpf, y+2)
		du, dc, dd := rowOf(vh, y-1), rowOf(vh, y), rowOf(vh, y+1)
		g := rowOf(G, y)
		for x := nonGreen(c, y, 5); x < s-5; x += 2 {
			cc := c0[x]
			vg := abs(c1u[x] - c1d[x])
			hg := abs(c0[x-1] - c0[x+1])
			nG := eps + vg + abs(cc-c2u[x]) + abs(c1u[x]-c3u[x]) + abs(c2u[x]-c4u[x])
			sG := eps + vg + abs(cc-c2d[x]) + abs(c1d[x]-c3d[x]) + abs(c2d[x]-c4d[x])
			wG := eps + hg + abs(cc-c0[x-2]) + abs(c0[x-1]-c0[x-3]) + abs(c0[x-2]-c0[x-4])
			eG := eps + hg + abs(cc-c0[x+2]) + abs(c0[x+1]-c0[x+3]) + abs(c0[x+2]-c0[x+4])
			l := l0[x]
			nE := c1u[x] * (1 + (l-l2u[x])/(eps+l+l2u[x]))
			sE := c1d[x] * (1 + (l-l2d[x])/(eps+l+l2d[x]))
			wE := c0[x-1] * (1 + (l-l0[x-2])/(eps+l+l0[x-2]))
			eE := c0[x+1] * (1 + (l-l0[x+2])/(eps+l+l0[x+2]))
			vE := (sG*nE + nG*sE) / (nG + sG)
			hE := (eG*wE + wG*eE) / (eG + wG)
			d := refined(dc[x], diagMean(du, dd, x))
			g[x] = clamp01(blend(d, hE, vE))
		}
	}

	// Step 4.1: diagonal discrimination, needed at red and blue sites
	// (whose diagonal neighbours are red and blue sites too); P/(P+Q) of
	// row y − 1 as soon as the responses of row y are there.
	p, q := t.bufA, t.bufB
	for y := 3; y < s-3; y++ {
		c3u, c2u, c1u, c0 := rowOf(cfa, y-3), rowOf(cfa, y-2), rowOf(cfa, y-1), rowOf(cfa, y)
		c1d, c2d, c3d := rowOf(cfa, y+1), rowOf(cfa, y+2), rowOf(cfa, y+3)
		pr, qr := rowOf(p, y), rowOf(q, y)
		for x := nonGreen(c, y, 3); x < s-3; x += 2 {
			pr[x] = sq(c3u[x-3] - 3*c2u[x-2] - c1u[x-1] + 6*c0[x] - c1d[x+1] - 3*c2d[x+2] + c3d[x+3])
			qr[x] = sq(c3u[x+3] - 3*c2u[x+2] - c1u[x+1] + 6*c0[x] - c1d[x-1] - 3*c2d[x-2] + c3d[x-3])
		}
		if yy := y - 1; yy >= 4 {
			pu, pc, pd := rowOf(p, yy-1), rowOf(p, yy), pr
			qu, qc, qd := rowOf(q, yy-1), rowOf(q, yy), qr
			o := rowOf(pq, yy)
			for x := nonGreen(c, yy, 4); x < s-4; x += 2 {
				ps := max(epsSq, pu[x-1]+pc[x]+pd[x+1])
				qs := max(epsSq, qu[x+1]+qc[x]+qd[x-1])
				o[x] = ps / (ps + qs)
			}
		}
	}

	// Step 4.2: red at blue and blue at red sites.
	for y := 7; y < s-7; y++ {
		x0 := nonGreen(c, y, 7)
		op := rgb[2-c.Colour[(y&1)*2+x0&1]]
		o3u, o1u, oc, o1d, o3d := rowOf(op, y-3), rowOf(op, y-1), rowOf(op, y), rowOf(op, y+1), rowOf(op, y+3)
		g2u, g1u, g0, g1d, g2d := rowOf(G, y-2), rowOf(G, y-1), rowOf(G, y), rowOf(G, y+1), rowOf(G, y+2)
		du, dc, dd := rowOf(pq, y-1), rowOf(pq, y), rowOf(pq, y+1)
		for x := x0; x < s-7; x += 2 {
			gc := g0[x]
			nwo, neo, swo, seo := o1u[x-1], o1u[x+1], o1d[x-1], o1d[x+1]
			pg, qg := abs(nwo-seo), abs(neo-swo)
			nwG := eps + pg + abs(nwo-o3u[x-3]) + abs(gc-g2u[x-2])
			neG := eps + qg + abs(neo-o3u[x+3]) + abs(gc-g2u[x+2])
			swG := eps + qg + abs(swo-o3d[x-3]) + abs(gc-g2d[x-2])
			seG := eps + pg + abs(seo-o3d[x+3]) + abs(gc-g2d[x+2])
			nwE := nwo - g1u[x-1]
			neE := neo - g1u[x+1]
			swE := swo - g1d[x-1]
			seE := seo - g1d[x+1]
			pE := (nwG*seE + seG*nwE) / (nwG + seG)
			qE := (neG*swE + swG*neE) / (neG + swG)
			d := refined(dc[x], diagMean(du, dd, x))
			oc[x] = clamp01(gc + blend(d, qE, pE))
		}
	}

	// Step 4.3: red and blue at green sites; only the tile's own
	// photosites are needed from here on.
	for y := margin; y < s-margin; y++ {
		g2u, g1u, g0, g1d, g2d := rowOf(G, y-2), rowOf(G, y-1), rowOf(G, y), rowOf(G, y+1), rowOf(G, y+2)
		du, dc, dd := rowOf(vh, y-1), rowOf(vh, y), rowOf(vh, y+1)
		for x := nonGreen(c, y, margin) ^ 1; x < s-margin; x += 2 {
			gc := g0[x]
			d := refined(dc[x], diagMean(du, dd, x))
			gn, gs, gw, ge := eps+abs(gc-g2u[x]), eps+abs(gc-g2d[x]), eps+abs(gc-g0[x-2]), eps+abs(gc-g0[x+2])
			for k := 0; k < 3; k += 2 {
				op := rgb[k]
				o3u, o1u, oc, o1d, o3d := rowOf(op, y-3), rowOf(op, y-1), rowOf(op, y), rowOf(op, y+1), rowOf(op, y+3)
				on, os, ow, oe := o1u[x], o1d[x], oc[x-1], oc[x+1]
				vg, hg := abs(on-os), abs(ow-oe)
				nG := gn + vg + abs(on-o3u[x])
				sG := gs + vg + abs(os-o3d[x])
				wG := gw + hg + abs(ow-oc[x-3])
				eG := ge + hg + abs(oe-oc[x+3])
				nE := on - g1u[x]
				sE := os - g1d[x]
				wE := ow - g0[x-1]
				eE := oe - g0[x+1]
				vE := (nG*sE + sG*nE) / (nG + sG)
				hE := (eG*wE + wG*eE) / (eG + wG)
				oc[x] = clamp01(gc + blend(d, hE, vE))
			}
		}
	}

	// Out: the tile's photosites inside the image.
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
