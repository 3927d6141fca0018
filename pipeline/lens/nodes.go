// Package lens is the pixel work of the lens correction (docs/lens.md),
// in pure Go: lensfun's source positions, computed on a grid of nodes
// (Nodes) and interpolated in between, resample the image through
// pipeline/warp's Keys bicubic; lensfun's vignetting gains, taken on the
// node rows and checked for plausibility (NodeGainsCompact), multiply it.
// Band does both on the upright rows of a streamed conversion, and
// Correct runs it over a whole image. lensfun itself is
// called by pipeline's lens stage, on the thread that owns its handles:
// the functions here take its results as functions or tables, so that
// the pixels can be worked on other goroutines.
//
// Images are interleaved float32 RGB, W×H×3, rows top to bottom;
// positions are in pixels of the uncorrected image.
package lens

import (
	"sync"
)

// Step is the spacing in pixels of the grid of nodes at which
// lensfun computes the source positions; the remap interpolates them
// bilinearly in between (Nodes.row). Distortion and TCA are smooth: the error of
// bilinear interpolation is at most step²/8 times the positions' second
// derivative, under 0.01 px for the profiles measured
// (TestLensNodePositions: 0.002 px on the EF 24-105, 0.009 px on the
// test profile's strong barrel), while lensfun's own per-pixel positions cost
// 36 ns a pixel (0.9 s on 24 MP, one thread: its handle is not shared).
const Step = 8

// nodeGains returns lensfun's vignetting gains (devignette:
// lensfun.Modifier.Devignette) of a w×h image on its node rows ys
// (nodeCoords: every Step-th row and the last), w×3 float32 a
// row, from a row of ones; an *ImplausibleVignetting when a gain is
// implausible (checkGains), lensfun's error otherwise.
func nodeGains(devignette func(pix []float32, y0, rows int) error, w, h int) ([]float32, []int, error) {
	ys := nodeCoords(h)
	gains := make([]float32, len(ys)*w*3)
	for k, y := range ys {
		row := gains[k*w*3 : (k+1)*w*3]
		for i := range row {
			row[i] = 1
		}
		if err := devignette(row, y, 1); err != nil {
			return nil, nil, err
		}
	}
	if err := checkGains(gains, ys, w, h); err != nil {
		return nil, nil, err
	}
	return gains, ys, nil
}

// Nodes is the grid of nodes of a w×h image: columns 0, step, 2·step,
// …, and w−1 (rows alike), with the source positions x, y of red, green
// and blue in the uncorrected image of each node from points
// (lensfun.Modifier.Points), held planar: plane 2·ch is channel ch's x of
// every node, plane 2·ch+1 its y, node row j at j·len(xs) (node).
type Nodes struct {
	xs, ys []int // the nodes' columns and rows
	pl     []float32
	// kx, tx: for each column, the node to its left (its right one is
	// kx+1) and the fraction of the way to the right one.
	kx      []int32
	tx      []float32
	scratch sync.Pool // *[]float32: a row of nodes interpolated in y
}

// node is the source position of channel ch at node k of node row j.
func (g *Nodes) node(j, k, ch int) (x, y float32) {
	n, i := len(g.xs)*len(g.ys), j*len(g.xs)+k
	return g.pl[2*ch*n+i], g.pl[(2*ch+1)*n+i]
}

// nodeCoords are the node coordinates along a side of n pixels: every
// Step-th pixel and the last.
func nodeCoords(n int) []int {
	var c []int
	for x := 0; x < n-1; x += Step {
		c = append(c, x)
	}
	return append(c, n-1)
}

// NewNodes computes the grid of nodes of a w×h image from points
// (lensfun.Modifier.Points: source positions x, y of red, green and blue
// for each x, y of xy), called once a node row, on the calling
// goroutine; points' error is returned as is.
func NewNodes(w, h int, points func(dst, xy []float32) error) (*Nodes, error) {
	g := &Nodes{xs: nodeCoords(w), ys: nodeCoords(h)}
	nx, ny := len(g.xs), len(g.ys)
	xy, pos := make([]float32, 2*nx), make([]float32, 6*nx)
	if nx == 1 {
		// A one-pixel-wide image: its one node twice.
		g.xs = append(g.xs, g.xs[0])
	}
	n := len(g.xs) * ny
	g.pl = make([]float32, 6*n)
	for j, y := range g.ys {
		for k, x := range g.xs[:nx] {
			xy[2*k], xy[2*k+1] = float32(x), float32(y)
		}
		if err := points(pos, xy); err != nil {
			return nil, err
		}
		m := len(g.xs)
		for c := range 6 {
			plane := g.pl[c*n+j*m : c*n+(j+1)*m]
			for k := range plane[:nx] {
				plane[k] = pos[6*k+c]
			}
			if m > nx {
				plane[nx] = plane[0] // the one node twice
			}
		}
	}
	nx = len(g.xs)
	g.kx, g.tx = make([]int32, w), make([]float32, w)
	for i := 0; i < w; i++ {
		k := min(i/Step, nx-2)
		g.kx[i] = int32(k)
		if g.xs[k+1] > g.xs[k] {
			g.tx[i] = float32(i-g.xs[k]) / float32(g.xs[k+1]-g.xs[k])
		}
	}
	g.scratch.New = func() any { b := make([]float32, 4*(nx+8)); return &b }
	return g, nil
}

// row fills sx, sy with the interpolated source positions of channel ch
// for output row y: the node rows above and below are interpolated in y
// once, into scratch (the nodes' x, y, and the differences to the next
// node's, planar: lerpRow, diffRow), then each pixel between its two
// nodes in x (precomputed columns: kx, tx).
func (g *Nodes) row(y, ch int, sx, sy []float32) {
	j := 0
	if len(g.ys) > 1 {
		j = min(y/Step, len(g.ys)-2)
	}
	j1 := min(j+1, len(g.ys)-1)
	ty := float32(0)
	if g.ys[j1] > g.ys[j] {
		ty = float32(y-g.ys[j]) / float32(g.ys[j1]-g.ys[j])
	}
	nx := len(g.xs)
	n := nx * len(g.ys)
	bp := g.scratch.Get().(*[]float32)
	defer g.scratch.Put(bp)
	if cap(*bp) < 4*(nx+8) {
		*bp = make([]float32, 4*(nx+8))
	}
	// lx, ly: the nodes' x and y on row y; dx, dy: the differences to
	// the next node's (0 at the last). Each is padded to nx+8 floats, for
	// vecRow's loads of eight.
	line := (*bp)[:4*(nx+8)]
	lx, ly := line[:nx+8], line[nx+8:2*(nx+8)]
	dx, dy := line[2*(nx+8):3*(nx+8)], line[3*(nx+8):]
	px, py := g.pl[2*ch*n:(2*ch+1)*n], g.pl[(2*ch+1)*n:(2*ch+2)*n]
	lerpRow(px[j*nx:(j+1)*nx], px[j1*nx:(j1+1)*nx], ty, lx[:nx])
	lerpRow(py[j*nx:(j+1)*nx], py[j1*nx:(j1+1)*nx], ty, ly[:nx])
	diffRow(lx[:nx], dx[:nx])
	diffRow(ly[:nx], dy[:nx])
	sy = sy[:len(sx)]
	tx := g.tx[:len(sx)]
	// The pixels between node k and node k+1 (columns xs[k] to
	// xs[k+1]−1, the last node's column with the node before it) take
	// that interval's node values, so the node is looked up once an
	// interval; the intervals of eight pixels before the last, eight at a
	// time where the build allows (vecRow).
	full := 0
	if nx > 2 {
		full = min(nx-2, len(sx)/Step)
	}
	for i := vecRow(lx, ly, dx, dy, sx, sy, full); i < len(sx); {
		k := int(g.kx[i])
		end := len(sx)
		if k+2 < nx {
			end = min(end, g.xs[k+1])
		}
		ax, ay, ex, ey := lx[k], ly[k], dx[k], dy[k]
		ts, px, py := tx[i:end], sx[i:end], sy[i:end]
		py = py[:len(px)]
		if len(px) == 8 && vecLerp8(ts, px, py, ax, ay, ex, ey) {
			i = end
			continue
		}
		for n, t := range ts[:len(px)] {
			px[n] = ax + t*ex
			py[n] = ay + t*ey
		}
		i = end
	}
}

// lerpRow sets l[k] = a[k] + t·(b[k] − a[k]): a node row interpolated in
// y, eight at a time where the build allows (vecLerpRow).
func lerpRow(a, b []float32, t float32, l []float32) {
	b, l = b[:len(a)], l[:len(a)]
	for k := vecLerpRow(a, b, t, l); k < len(a); k++ {
		l[k] = a[k] + t*(b[k]-a[k])
	}
}

// diffRow sets d[k] = l[k+1] − l[k], and 0 at the last: the differences
// of a row of nodes to the next, eight at a time where the build allows
// (vecDiffRow).
func diffRow(l, d []float32) {
	if len(l) == 0 {
		return
	}
	d = d[:len(l)]
	for k := vecDiffRow(l, d); k < len(l)-1; k++ {
		d[k] = l[k+1] - l[k]
	}
	d[len(l)-1] = 0
}
