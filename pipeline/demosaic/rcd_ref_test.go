package demosaic

// The straightforward RCD kernel as first written,
// kept as the reference the optimised kernel of rcd.go is compared with
// (TestRCDMatchesReference): one plane per quantity, every step over the
// whole window, bounds-checked indexing, no reuse between tiles. The same
// steps and margin as rcd.go's, square tiles of 128; single goroutine.

// refRCD demosaics c into dst as RCD does, with the reference kernel.
func refRCD(c CFA, dst []float32) error {
	if err := c.check(dst); err != nil {
		return err
	}
	if c.W < 2 || c.H < 2 {
		return Bilinear(c, dst)
	}
	t := newRefTile()
	for oy := 0; oy < c.H; oy += refTileSize {
		for ox := 0; ox < c.W; ox += refTileSize {
			t.run(&c, ox, oy, dst)
		}
	}
	return nil
}

const (
	refTileSize = 128
	refMargin   = 10
	refSpan     = refTileSize + 2*refMargin
)

// refNormRow is the normalisation of one window row as first written.
func refNormRow(c *CFA, y, x0 int, out []float32) {
	row := c.Pix[y*c.Stride : y*c.Stride+c.W]
	var pat []float32
	if c.BlackPattern != nil {
		r := y % c.PatternRows
		pat = c.BlackPattern[r*c.PatternCols : (r+1)*c.PatternCols]
	}
	ph := (y & 1) * 2
	for i := range out {
		x := refReflect(x0+i, c.W)
		p := ph + x&1
		b := c.Black[p]
		if pat != nil {
			b += pat[x%c.PatternCols]
		}
		out[i] = refClamp01((float32(row[x]) - b) * c.Scale[p])
	}
}

func refReflect(i, n int) int {
	if i >= 0 && i < n {
		return i
	}
	p := 2 * (n - 1)
	i %= p
	if i < 0 {
		i += p
	}
	if i >= n {
		i = p - i
	}
	return i
}

func refClamp01(v float32) float32 {
	if v < 0 {
		return 0
	}
	if v > 1 {
		return 1
	}
	return v
}

// refTile holds one window's planes, refSpan×refSpan each.
type refTile struct {
	rgb    [3][]float32
	cfa    []float32
	vh, pq []float32
	lpf    []float32
	bufA   []float32
	bufB   []float32
	colour []uint8 // per window photosite
	x0, y0 int     // the image position of window (0, 0)
}

func newRefTile() *refTile {
	n := refSpan * refSpan
	mk := func() []float32 { return make([]float32, n) }
	return &refTile{rgb: [3][]float32{mk(), mk(), mk()}, cfa: mk(), vh: mk(), pq: mk(), lpf: mk(), bufA: mk(), bufB: mk()}
}

func refSq(v float32) float32 { return v * v }

func refAbs(v float32) float32 {
	if v < 0 {
		return -v
	}
	return v
}

// blend returns a·b + (1 − a)·c.
func refBlend(a, b, c float32) float32 { return a*(b-c) + c }

// firstNonGreen returns the first column ≥ lo of window row y whose
// photosite is red or blue (every second one from there).
func (t *refTile) firstNonGreen(c *CFA, y, lo int) int {
	p := 0
	if c.Colour[(y&1)*2] == 1 {
		p = 1
	}
	return lo + (lo^p)&1
}

// run demosaics the tile whose top-left output photosite is (ox, oy).
func (t *refTile) run(c *CFA, ox, oy int, dst []float32) {
	const s = refSpan
	t.x0, t.y0 = ox-refMargin, oy-refMargin
	cfa, vh, pq, lpf := t.cfa, t.vh, t.pq, t.lpf
	R, G, B := t.rgb[0], t.rgb[1], t.rgb[2]
	rgb := t.rgb
	// The window's CFA, mirrored at the image's edges. margin is even, so
	// window parity equals image parity.
	for wy := range s {
		y := refReflect(t.y0+wy, c.H)
		row := cfa[wy*s : (wy+1)*s]
		refNormRow(c, y, t.x0, row)
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
			v[i] = refSq(cfa[i-3*s] - 3*cfa[i-2*s] - cfa[i-s] + 6*cfa[i] - cfa[i+s] - 3*cfa[i+2*s] + cfa[i+3*s])
			h[i] = refSq(cfa[i-3] - 3*cfa[i-2] - cfa[i-1] + 6*cfa[i] - cfa[i+1] - 3*cfa[i+2] + cfa[i+3])
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
			nG := eps + refAbs(cfa[i-s]-cfa[i+s]) + refAbs(c0-cfa[i-2*s]) + refAbs(cfa[i-s]-cfa[i-3*s]) + refAbs(cfa[i-2*s]-cfa[i-4*s])
			sG := eps + refAbs(cfa[i-s]-cfa[i+s]) + refAbs(c0-cfa[i+2*s]) + refAbs(cfa[i+s]-cfa[i+3*s]) + refAbs(cfa[i+2*s]-cfa[i+4*s])
			wG := eps + refAbs(cfa[i-1]-cfa[i+1]) + refAbs(c0-cfa[i-2]) + refAbs(cfa[i-1]-cfa[i-3]) + refAbs(cfa[i-2]-cfa[i-4])
			eG := eps + refAbs(cfa[i-1]-cfa[i+1]) + refAbs(c0-cfa[i+2]) + refAbs(cfa[i+1]-cfa[i+3]) + refAbs(cfa[i+2]-cfa[i+4])
			l := lpf[i]
			nE := cfa[i-s] * (1 + (l-lpf[i-2*s])/(eps+l+lpf[i-2*s]))
			sE := cfa[i+s] * (1 + (l-lpf[i+2*s])/(eps+l+lpf[i+2*s]))
			wE := cfa[i-1] * (1 + (l-lpf[i-2])/(eps+l+lpf[i-2]))
			eE := cfa[i+1] * (1 + (l-lpf[i+2])/(eps+l+lpf[i+2]))
			vE := (sG*nE + nG*sE) / (nG + sG)
			hE := (eG*wE + wG*eE) / (eG + wG)
			d := refRefined(vh, i, s)
			G[i] = refClamp01(refBlend(d, hE, vE))
		}
	}

	// Step 4.1: diagonal discrimination, needed at red and blue sites
	// (whose diagonal neighbours are red and blue sites too).
	p, q := t.bufA, t.bufB
	for y := 3; y < s-3; y++ {
		for x := t.firstNonGreen(c, y, 3); x < s-3; x += 2 {
			i := y*s + x
			p[i] = refSq(cfa[i-3*s-3] - 3*cfa[i-2*s-2] - cfa[i-s-1] + 6*cfa[i] - cfa[i+s+1] - 3*cfa[i+2*s+2] + cfa[i+3*s+3])
			q[i] = refSq(cfa[i-3*s+3] - 3*cfa[i-2*s+2] - cfa[i-s+1] + 6*cfa[i] - cfa[i+s-1] - 3*cfa[i+2*s-2] + cfa[i+3*s-3])
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
			nwG := eps + refAbs(o[i-s-1]-o[i+s+1]) + refAbs(o[i-s-1]-o[i-3*s-3]) + refAbs(g0-G[i-2*s-2])
			neG := eps + refAbs(o[i-s+1]-o[i+s-1]) + refAbs(o[i-s+1]-o[i-3*s+3]) + refAbs(g0-G[i-2*s+2])
			swG := eps + refAbs(o[i-s+1]-o[i+s-1]) + refAbs(o[i+s-1]-o[i+3*s-3]) + refAbs(g0-G[i+2*s-2])
			seG := eps + refAbs(o[i-s-1]-o[i+s+1]) + refAbs(o[i+s+1]-o[i+3*s+3]) + refAbs(g0-G[i+2*s+2])
			nwE := o[i-s-1] - G[i-s-1]
			neE := o[i-s+1] - G[i-s+1]
			swE := o[i+s-1] - G[i+s-1]
			seE := o[i+s+1] - G[i+s+1]
			pE := (nwG*seE + seG*nwE) / (nwG + seG)
			qE := (neG*swE + swG*neE) / (neG + swG)
			d := refRefined(pq, i, s)
			o[i] = refClamp01(g0 + refBlend(d, qE, pE))
		}
	}

	// Step 4.3: red and blue at green sites; only the tile's own
	// photosites are needed from here on.
	for y := refMargin; y < s-refMargin; y++ {
		for x := t.firstNonGreen(c, y, refMargin) ^ 1; x < s-refMargin; x += 2 {
			i := y*s + x
			g0 := G[i]
			d := refRefined(vh, i, s)
			for _, o := range [2][]float32{R, B} {
				nG := eps + refAbs(g0-G[i-2*s]) + refAbs(o[i-s]-o[i+s]) + refAbs(o[i-s]-o[i-3*s])
				sG := eps + refAbs(g0-G[i+2*s]) + refAbs(o[i+s]-o[i-s]) + refAbs(o[i+s]-o[i+3*s])
				wG := eps + refAbs(g0-G[i-2]) + refAbs(o[i-1]-o[i+1]) + refAbs(o[i-1]-o[i-3])
				eG := eps + refAbs(g0-G[i+2]) + refAbs(o[i+1]-o[i-1]) + refAbs(o[i+1]-o[i+3])
				nE := o[i-s] - G[i-s]
				sE := o[i+s] - G[i+s]
				wE := o[i-1] - G[i-1]
				eE := o[i+1] - G[i+1]
				vE := (nG*sE + sG*nE) / (nG + sG)
				hE := (eG*wE + wG*eE) / (eG + wG)
				o[i] = refClamp01(g0 + refBlend(d, hE, vE))
			}
		}
	}

	// Out: the tile's photosites inside the image.
	for y := refMargin; y < s-refMargin; y++ {
		iy := t.y0 + y
		if iy >= c.H {
			break
		}
		for x := refMargin; x < s-refMargin; x++ {
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
func refRefined(d []float32, i, s int) float32 {
	c := d[i]
	n := 0.25 * (d[i-s-1] + d[i-s+1] + d[i+s-1] + d[i+s+1])
	if refAbs(0.5-c) < refAbs(0.5-n) {
		return n
	}
	return c
}
