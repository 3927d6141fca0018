package lens

import (
	"math"
	"sync"

	"github.com/rawbatch/rawbatch/pipeline/internal/par"
	"github.com/rawbatch/rawbatch/pipeline/internal/thp"
	"github.com/rawbatch/rawbatch/pipeline/warp"
)

// The lens correction's band form (docs/pipeline.md "Streaming"): the
// devignetting and the remap on a streamed conversion's upright rows, or
// on a whole image's rows (Correct, orientation 1). Everything lensfun
// computes (its handles belong to the job's thread, the rows are finished
// on others) is computed before the rows are, in the sensor's frame: the
// vignetting gains of the node rows and the grid of nodes' source
// positions. A row's sensor pixels are found through the flip (the
// inverse of demosaic.Bands' placing), their gains interpolated between
// the node rows and their source positions taken from the grid
// (Nodes.row), and the positions turned upright again; the bicubic samples
// the filter's own planar copy of the upright rows it reads
// (warp.Window), made as each row arrives, before the rows above are
// overwritten by their correction.

// ShiftBound is the largest vertical displacement, in upright rows, of a
// correction that streams for an image whose longer side is long pixels:
// a 48th of the longer side (about 2 %), at least 32
// rows (125 rows of a 6000-pixel side). Rectilinear lenses stay within
// it (on 6000×4000: the EF 24-105 f/4L at 24 mm 59 rows, 88 on a
// portrait frame; the EF 16-35 f/2.8L at 16 mm 53; the EF 8-15 fisheye
// at 8 mm 435 goes whole). The filter's copy holds about twice that many
// rows (above the row it writes and below), 12 bytes a pixel each: at
// most 21 MB at 6000 pixels, against the whole-image path's second
// full-size image (288 MB).
func ShiftBound(long int) int { return max(32, long/48) }

// bandChunk is how many rows the band form remaps at a time (in
// parallel): its copy of the input holds that many rows beyond the
// displacement's above and below.
const bandChunk = 32

// Band is the lens correction of a streamed conversion's upright
// rows (w×h; the sensor's frame sw×sh, the flip between them).
type Band struct {
	w, h, sw, sh, flip int
	// gains: the vignetting gains of the node rows ys (nodeGains),
	// gc values a pixel (1 when lensfun's three are equal, 3 otherwise);
	// nil without vignetting.
	gains []float32
	gc    int
	ys    []int
	// g: the grid of nodes (nil without distortion and TCA); d the rows
	// a source position lies at most above or below its output row
	// (ShiftRows).
	g *Nodes
	d int
	// ring holds the input rows copied (copied so far), planar
	// (warp.Deinterleave3), ringRows of them (row y at y mod ringRows):
	// every row a chunk's remap reads, devignetted (copyRow); vig: the
	// rows devignetted so far in place (without a grid).
	ring     []float32
	ringRows int
	copied   int
	vig      int
	// tab: the rows a chunk reads (warp.Window.Rows), reused.
	tab [][]float32
	// ky, ty: for each sensor row, the node row above it and the
	// fraction of the way to the next (as Nodes.row computes them).
	ky      []int32
	ty      []float32
	scratch sync.Pool // *bandScratch
}

// NewBand returns the band form for upright rows of w×h pixels whose
// sensor frame is turned by flip (the header's flip: bit 1 mirrors x,
// bit 2 mirrors y, bit 4 transposes). It corrects nothing until SetGains
// or SetGrid give it the vignetting or the remap.
func NewBand(w, h, flip int) *Band {
	sw, sh := w, h
	if flip&4 != 0 {
		sw, sh = h, w
	}
	return &Band{w: w, h: h, sw: sw, sh: sh, flip: flip}
}

// SetGains sets the vignetting gains of the node rows ys of the sensor
// frame (NodeGainsCompact: gc values a pixel).
func (b *Band) SetGains(gains []float32, gc int, ys []int) { b.gains, b.gc, b.ys = gains, gc, ys }

// SetGrid sets the grid of nodes of the remap (of the sensor frame) and
// returns its displacement in upright rows (ShiftRows); ok false when a
// position is not finite.
func (b *Band) SetGrid(g *Nodes) (shift int, ok bool) {
	b.g = g
	b.d, ok = ShiftRows(g, b.flip&4 != 0)
	return b.d, ok
}

// Empty reports whether b corrects nothing (neither gains nor a grid).
func (b *Band) Empty() bool { return b.gains == nil && b.g == nil }

// bandScratch is one goroutine's positions: upright (3 channels of w)
// and in the sensor's frame (max(sw, sh)), a column of nodes, and the
// sampler's scratch.
type bandScratch struct {
	sx, sy, tx, ty, cx, cy []float32
	row                    warp.RowBuf
}

// Lookahead is the rows below a row the filter reads.
func (b *Band) Lookahead() int {
	if b.g == nil {
		return 0
	}
	return b.d + 2
}

// ShiftRows is the number of rows d such that every source position
// of the grid g (of an sw×sh image; upright transposed when the flip has
// bit 2) lies within d rows of its output row in the upright image: the
// largest displacement over the nodes (a pixel's is interpolated
// bilinearly between its four nodes', so none is larger), rounded up,
// plus one for the rounding of the interpolation. ok false when a
// position is not finite.
func ShiftRows(g *Nodes, transposed bool) (int, bool) {
	worst := 0.0
	for j, y := range g.ys {
		for k, x := range g.xs {
			for ch := 0; ch < 3; ch++ {
				nx, ny := g.node(j, k, ch)
				d := float64(ny) - float64(y)
				if transposed {
					d = float64(nx) - float64(x)
				}
				worst = max(worst, math.Abs(d))
			}
		}
	}
	if math.IsNaN(worst) || math.IsInf(worst, 0) || worst > float64(1<<30) {
		return 0, false
	}
	return int(math.Ceil(worst)) + 1, true
}

// NodeGainsCompact is nodeGains with one gain a pixel (gc 1)
// when lensfun gives the three channels the same gain everywhere (its
// vignetting models are of brightness), computed row by row so that the
// three channels' gains are never held whole; gc 3 (nodeGains)
// otherwise.
func NodeGainsCompact(devignette func(pix []float32, y0, rows int) error, w, h int) (gains []float32, gc int, ys []int, err error) {
	ys = nodeCoords(h)
	gains = make([]float32, len(ys)*w)
	row := make([]float32, w*3)
	for k, y := range ys {
		fillOnes(row)
		if err := devignette(row, y, 1); err != nil {
			return nil, 0, nil, err
		}
		one := gains[k*w : (k+1)*w]
		for x := vecOneGain(one, row); x < w; x++ {
			p := row[3*x : 3*x+3 : 3*x+3]
			if p[0] != p[1] || p[0] != p[2] {
				g, ys, err := nodeGains(devignette, w, h)
				return g, 3, ys, err
			}
			one[x] = p[0]
		}
	}
	if err := checkGainsN(gains, 1, ys, w, h); err != nil {
		return nil, 0, nil, err
	}
	return gains, 1, ys, nil
}

// fillOnes sets every value of row to 1 (by doubling copies).
func fillOnes(row []float32) {
	if len(row) == 0 {
		return
	}
	row[0] = 1
	for i := 1; i < len(row); i *= 2 {
		copy(row[i:], row[:i])
	}
}

// Start makes the filter's buffers.
func (b *Band) Start() {
	b.ky, b.ty = make([]int32, b.sh), make([]float32, b.sh)
	ys := nodeCoords(b.sh) // the node rows of the gains and of the grid
	for y := 0; y < b.sh; y++ {
		k, _, t := nodeRowOf(ys, y)
		b.ky[y], b.ty[y] = int32(k), t
	}
	if b.g == nil {
		return
	}
	b.ringRows = 2*b.d + 3 + bandChunk
	b.ring = thp.Floats(b.ringRows * b.w * 3)
	b.tab = make([][]float32, 0, bandChunk+2*b.d+3)
	n := max(b.sw, b.sh)
	nys := len(b.g.ys)
	b.scratch.New = func() any {
		return &bandScratch{sx: make([]float32, 3*b.w), sy: make([]float32, 3*b.w),
			tx: make([]float32, n), ty: make([]float32, n), cx: make([]float32, nys), cy: make([]float32, nys)}
	}
}

// nodeRowOf is the node row k above row y of the node rows ys, the next
// one k1 and the fraction t of the way to it, as Nodes.row computes them
// too.
func nodeRowOf(ys []int, y int) (k, k1 int, t float32) {
	if len(ys) > 1 {
		k = min(y/Step, len(ys)-2)
	}
	k1 = min(k+1, len(ys)-1)
	if ys[k1] > ys[k] {
		t = float32(y-ys[k]) / float32(ys[k1]-ys[k])
	}
	return k, k1, t
}

// GainAt is the gain of each channel (R, G, B) at pixel (x, y) of the
// w×h image whose node gains NodeGainsCompact returned (gains of gc
// channels a pixel of each node row ys), interpolated between the node
// rows as the filter interpolates them; x and y are clamped to the image.
func GainAt(gains []float32, gc int, ys []int, w, h, x, y int) [3]float32 {
	x, y = min(max(x, 0), w-1), min(max(y, 0), h-1)
	k, k1, t := nodeRowOf(ys, y)
	var g [3]float32
	for c := range 3 {
		i := x*gc + min(c, gc-1)
		a, b := gains[k*w*gc+i], gains[k1*w*gc+i]
		g[c] = a + t*(b-a)
	}
	return g
}

// ringRow is the filter's copy of input row y.
func (b *Band) ringRow(y int) []float32 {
	i := y % b.ringRows * b.w * 3
	return b.ring[i : i+b.w*3 : i+b.w*3]
}

// Rows is the filter (the stream's bandFilter.rows): rows y0 to y1−1
// finished in place. Without a grid they are devignetted in place; with
// one, bandChunk rows are
// remapped at a time from the planar copy of the rows they read (copied,
// devignetted, before any of them is written).
func (b *Band) Rows(y0, y1 int, row func(y int) []float32) {
	avail := min(b.h, y1+b.Lookahead())
	if b.gains != nil && b.g == nil && b.vig < avail {
		v0 := b.vig
		par.Rows(avail-v0, func(lo, hi int) {
			for y := v0 + lo; y < v0+hi; y++ {
				b.devignetteRow(y, row(y))
			}
		})
		b.vig = avail
	}
	if b.g == nil {
		return
	}
	for a := y0; a < y1; a += bandChunk {
		e := min(y1, a+bandChunk)
		lo, hi := max(0, a-b.d-1), min(b.h, e+b.d+2)
		if c0 := b.copied; c0 < hi {
			par.Rows(hi-c0, func(l, h int) {
				for y := c0 + l; y < c0+h; y++ {
					b.copyRow(y, row(y))
				}
			})
			b.copied = hi
		}
		tab := b.tab[:0]
		for y := lo; y < hi; y++ {
			tab = append(tab, b.ringRow(y))
		}
		win := warp.Window{W: b.w, H: b.h, Lo: lo, Rows: tab}
		par.Rows(e-a, func(l, h int) {
			sc := b.scratch.Get().(*bandScratch)
			defer b.scratch.Put(sc)
			for y := a + l; y < a+h; y++ {
				for ch := 0; ch < 3; ch++ {
					b.positions(y, ch, sc.sx[ch*b.w:(ch+1)*b.w], sc.sy[ch*b.w:(ch+1)*b.w], sc)
				}
				win.SampleRow3Buf(sc.sx, sc.sy, row(y), &sc.row)
			}
		})
	}
}

// copyRow makes the filter's planar copy of upright row uy (row, which
// only the remap reads and then overwrites), devignetted: with one gain
// a pixel along an unmirrored sensor row, each gain computed once and
// multiplied into the copy (the values of devignetteRow's in-place
// products); otherwise row devignetted in place, then copied.
func (b *Band) copyRow(uy int, row []float32) {
	dst := b.ringRow(uy)
	if b.gains == nil {
		warp.Deinterleave3(dst, row)
		return
	}
	if b.gc != 1 || b.flip&5 != 0 {
		b.devignetteRow(uy, row)
		warp.Deinterleave3(dst, row)
		return
	}
	line, _ := b.sensorLine(uy)
	k, k1 := int(b.ky[line]), min(int(b.ky[line])+1, len(b.ys)-1)
	t, w := b.ty[line], b.w
	g0, g1 := b.gains[k*b.sw:k*b.sw+w], b.gains[k1*b.sw:k1*b.sw+w]
	r, g, bl := dst[:w], dst[w:2*w], dst[2*w:3*w]
	row = row[:3*w]
	for x := vecGainsPlanar(r, g, bl, row, g0, g1, t); x < w; x++ {
		a := g0[x]
		gx := a + t*(g1[x]-a)
		p := row[3*x : 3*x+3 : 3*x+3]
		r[x], g[x], bl[x] = p[0]*gx, p[1]*gx, p[2]*gx
	}
}

// sensorLine returns, for upright row uy, the sensor row it is (transposed
// false) or the sensor column (transposed true).
func (b *Band) sensorLine(uy int) (int, bool) {
	if b.flip&4 == 0 {
		if b.flip&2 != 0 {
			return b.sh - 1 - uy, false
		}
		return uy, false
	}
	if b.flip&1 != 0 {
		return b.sw - 1 - uy, true
	}
	return uy, true
}

// devignetteRow multiplies upright row uy (in place) by its pixels' gains,
// interpolated linearly between the node rows.
func (b *Band) devignetteRow(uy int, row []float32) {
	line, transposed := b.sensorLine(uy)
	gc, rw := b.gc, b.sw*b.gc
	if !transposed {
		k, k1 := int(b.ky[line]), min(int(b.ky[line])+1, len(b.ys)-1)
		t := b.ty[line]
		g0, g1 := b.gains[k*rw:(k+1)*rw], b.gains[k1*rw:(k1+1)*rw]
		if b.flip&1 == 0 && gc == 3 {
			for i := range row {
				row[i] *= g0[i] + t*(g1[i]-g0[i])
			}
			return
		}
		row = row[:3*b.w]
		if gc == 1 {
			// One gain a pixel, computed once for its three values.
			g0, g1 = g0[:b.sw], g1[:b.sw]
			if b.flip&1 == 0 {
				v := vecGains(row, g0[:b.w], g1[:b.w], t)
				for x := v; x < b.w; x++ {
					a := g0[x]
					g := a + t*(g1[x]-a)
					p := row[3*x : 3*x+3 : 3*x+3]
					p[0] *= g
					p[1] *= g
					p[2] *= g
				}
				return
			}
			for ux := 0; ux < b.w; ux++ {
				x := b.sw - 1 - ux
				g := g0[x] + t*(g1[x]-g0[x])
				p := row[3*ux : 3*ux+3 : 3*ux+3]
				p[0] *= g
				p[1] *= g
				p[2] *= g
			}
			return
		}
		for ux := 0; ux < b.w; ux++ {
			x := ux
			if b.flip&1 != 0 {
				x = b.sw - 1 - ux
			}
			p := row[3*ux : 3*ux+3 : 3*ux+3]
			q0, q1 := g0[3*x:3*x+3:3*x+3], g1[3*x:3*x+3:3*x+3]
			p[0] *= q0[0] + t*(q1[0]-q0[0])
			p[1] *= q0[1] + t*(q1[1]-q0[1])
			p[2] *= q0[2] + t*(q1[2]-q0[2])
		}
		return
	}
	// A sensor column: each pixel between the node rows of its own
	// sensor row; gc is 1 or 3, and c·(gc−1)/2 is the channel's offset
	// (0 for one gain, c for three) without a division.
	x := line
	half := (gc - 1) / 2
	for ux := 0; ux < b.w; ux++ {
		y := ux
		if b.flip&2 != 0 {
			y = b.sh - 1 - ux
		}
		k, k1 := int(b.ky[y]), min(int(b.ky[y])+1, len(b.ys)-1)
		t := b.ty[y]
		g0, g1 := b.gains[k*rw:(k+1)*rw], b.gains[k1*rw:(k1+1)*rw]
		p := row[3*ux : 3*ux+3 : 3*ux+3]
		for c := range p {
			i := x*gc + c*half
			p[c] *= g0[i] + t*(g1[i]-g0[i])
		}
	}
}

// positions fills usx, usy (w each) with the upright source positions of
// channel ch for upright row uy: the sensor pixels' positions from the
// grid (Nodes.row along a sensor row, Nodes.col along a column),
// turned upright.
func (b *Band) positions(uy, ch int, usx, usy []float32, sc *bandScratch) {
	line, transposed := b.sensorLine(uy)
	fw, fh := float32(b.sw-1), float32(b.sh-1)
	mx, my := b.flip&1 != 0, b.flip&2 != 0
	if !transposed {
		if !mx && !my {
			b.g.row(line, ch, usx, usy)
			return
		}
		tx, ty := sc.tx[:b.sw], sc.ty[:b.sw]
		b.g.row(line, ch, tx, ty)
		for ux := range usx {
			x := ux
			if mx {
				x = b.sw - 1 - ux
			}
			qx, qy := tx[x], ty[x]
			if mx {
				qx = fw - qx
			}
			if my {
				qy = fh - qy
			}
			usx[ux], usy[ux] = qx, qy
		}
		return
	}
	tx, ty := sc.tx[:b.sh], sc.ty[:b.sh]
	b.col(line, ch, tx, ty, sc)
	for ux := range usx {
		y := ux
		if my {
			y = b.sh - 1 - ux
		}
		qx, qy := tx[y], ty[y]
		if mx {
			qx = fw - qx
		}
		if my {
			qy = fh - qy
		}
		usx[ux], usy[ux] = qy, qx
	}
}

// col fills sx, sy (sh each) with the interpolated source positions of
// channel ch for sensor column x: the grid's node rows interpolated in x
// at x (into sc.cx, sc.cy), then each row between its two node rows.
func (b *Band) col(x, ch int, sx, sy []float32, sc *bandScratch) {
	g := b.g
	k, t := int(g.kx[x]), g.tx[x]
	cx, cy := sc.cx[:len(g.ys)], sc.cy[:len(g.ys)]
	for j := range g.ys {
		ax, ay := g.node(j, k, ch)
		cx0, cy0 := g.node(j, k+1, ch)
		cx[j] = ax + t*(cx0-ax)
		cy[j] = ay + t*(cy0-ay)
	}
	last := len(g.ys) - 1
	sy = sy[:len(sx)]
	ky, tys := b.ky[:len(sx)], b.ty[:len(sx)]
	// The rows between two node rows (the same ky) share their nodes'
	// values, taken once a run.
	for y := 0; y < len(sx); {
		k := ky[y]
		end := y + 1
		for end < len(ky) && ky[end] == k {
			end++
		}
		j := int(k)
		j1 := min(j+1, last)
		ax, dx, ay, dy := cx[j], cx[j1]-cx[j], cy[j], cy[j1]-cy[j]
		ts, px, py := tys[y:end], sx[y:end], sy[y:end]
		py = py[:len(px)]
		for n, t := range ts[:len(px)] {
			px[n] = ax + t*dx
			py[n] = ay + t*dy
		}
		y = end
	}
}

// RingBytes is the part of StreamBytes that is the band form's copy of
// the rows it reads, for rows of a w×h step: 2·ShiftBound + 3 + bandChunk
// rows of the longer side, 12 bytes a pixel. ShiftBound bounds the
// displacement of any lens the stream takes; a lens that moves pixels
// less reads (and touches) fewer rows.
func RingBytes(w, h int) int64 {
	long := int64(max(w, h))
	return int64(2*ShiftBound(max(w, h))+3+bandChunk) * long * 12
}

// StreamBytes is what the band form holds while a file streams, beyond
// the stream window's rows, for a step of w×h pixels (the sensor's
// orientation; rows counted as long as the longer side L) on threads
// goroutines: its copy of the rows it reads (2·ShiftBound + 3 + bandChunk
// rows, 12 bytes a pixel), the grid of nodes (24 bytes a node, Step
// apart, and 8 bytes a column), the node rows' gains (4 bytes a pixel of
// every Step-th row: lensfun's vignetting is one gain for the three
// channels), each sensor row's node and fraction (8 bytes a row) and each
// goroutine's positions (8 float32 a pixel of a row), and the row
// NodeGainsCompact devignettes to read the gains (12 bytes a pixel of a
// row, while the filter is set up). lensfun's database is not counted.
func StreamBytes(w, h, threads int) int64 {
	long := int64(max(w, h))
	ring := RingBytes(w, h)
	nodeRows := int64(h/Step + 2)
	nodes := int64(w/Step+2)*nodeRows*24 + 8*int64(w)
	gains := nodeRows * int64(w) * 4
	scratch := int64(max(1, threads)) * 8 * long * 4
	return ring + nodes + gains + 8*int64(h) + scratch + 12*long
}
