package look

import "fmt"

// MaxSub is the most sub-cells per grid cell along each axis of a SubGrid
// (4×4 = 16 renders per cell; on the D30 CRW, 2176 pixels over 256 cells,
// a sub-cell is about 2×2 pixels).
const MaxSub = 4

// SubGrid is an image reduced to Sub×Sub sub-cells for each cell of a
// W×H grid (Reduce to Sub·W × Sub·H): Reduce's cell boundaries
// ⌊i·N/n⌋ make the sub-cells S·i … S·i+S−1 partition cell i exactly, so
// a cell's mean is the mean of its sub-cells weighted by their share of
// its pixels (Weight). The fits render each sub-cell and average the
// display-linear results per cell, as the look score reduces the
// conversion's output, instead of rendering the cell's mean: the tone
// curve of a mean is not the mean of the curve where a cell holds
// highlights and shadows (a cell with 10 % clipped pixels differed by up
// to 7 ΔE2000 from the full render on the D30; docs/look.md).
type SubGrid struct {
	Image Image // Sub·W × Sub·H sub-cells, values as the grid's
	W, H  int   // the grid
	Sub   int
	// wx[i], wy[j]: the share of sub-column i (sub-row j) in its cell's
	// width (height).
	wx, wy []float64
}

// ReduceSub reduces m to sub×sub sub-cells for each cell of a gw×gh grid
// (the largest sub ≤ maxSub with sub·gw ≤ m.W and sub·gh ≤ m.H, at least
// 1). Errors: as Reduce's.
func ReduceSub(m Image, gw, gh, maxSub int) (SubGrid, error) {
	if err := m.check(); err != nil {
		return SubGrid{}, err
	}
	return subGridOf(m.W, m.H, gw, gh, maxSub, func(sw, sh int) (Image, error) {
		img, _, err := Reduce(m, sw, sh, 0)
		return img, err
	})
}

// subGridOf is ReduceSub of a w×h image that reduce box-filters to sw×sh
// cells (Reduce, Reduce16).
func subGridOf(w, h, gw, gh, maxSub int, reduce func(sw, sh int) (Image, error)) (SubGrid, error) {
	if err := reducible(w, h, gw, gh); err != nil {
		return SubGrid{}, err
	}
	sub := SubCells(w, h, gw, gh, maxSub)
	img, err := reduce(sub*gw, sub*gh)
	if err != nil {
		return SubGrid{}, err
	}
	return SubGrid{Image: img, W: gw, H: gh, Sub: sub, wx: shares(w, gw, sub), wy: shares(h, gh, sub)}, nil
}

// shares returns, for the sub·n sub-intervals of Reduce's split of N
// pixels, each one's share of its cell's pixels.
func shares(N, n, sub int) []float64 {
	w := make([]float64, sub*n)
	for i := range n {
		c := float64((i+1)*N/n - i*N/n)
		for s := range sub {
			k := sub*i + s
			w[k] = float64((k+1)*N/(sub*n)-k*N/(sub*n)) / c
		}
	}
	return w
}

// each calls f for every sub-cell of grid cell k with the sub-cell's
// value and its weight in the cell (the weights of a cell sum to 1).
func (g SubGrid) each(k int, f func(v [3]float64, w float64)) {
	x, y := k%g.W, k/g.W
	sw := g.Sub * g.W
	for b := range g.Sub {
		sy := g.Sub*y + b
		for a := range g.Sub {
			sx := g.Sub*x + a
			f(g.Image.cell(sy*sw+sx), g.wx[sx]*g.wy[sy])
		}
	}
}

// ok reports whether g is a sub-grid of a w×h grid.
func (g SubGrid) ok(w, h int) bool {
	return g.Sub > 0 && g.W == w && g.H == h && len(g.Image.Pix) >= 3*g.Sub*g.Sub*w*h
}

// NewSubGrid is the SubGrid of an image of w×h pixels whose gw×gh grid
// was reduced, by a reducer of its own, to img: sub·gw × sub·gh sub-cells
// on Reduce's boundaries (the sub-cells' weights are their shares of the
// w×h pixels, as ReduceSub's). The exposure anchor's CFA reduction
// (pipeline) makes its sub-cells so.
func NewSubGrid(img Image, w, h, gw, gh, sub int) (SubGrid, error) {
	if err := reducible(w, h, gw, gh); err != nil {
		return SubGrid{}, err
	}
	if sub < 1 || img.W != sub*gw || img.H != sub*gh || len(img.Pix) < 3*img.W*img.H {
		return SubGrid{}, fmt.Errorf("look: sub-grid image %d×%d for %d×%d cells of %d×%d sub-cells", img.W, img.H, gw, gh, sub, sub)
	}
	return SubGrid{Image: img, W: gw, H: gh, Sub: sub, wx: shares(w, gw, sub), wy: shares(h, gh, sub)}, nil
}

// SubCells is the number of sub-cells a side per cell ReduceSub makes for
// a w×h image reduced to gw×gh cells with at most maxSub.
func SubCells(w, h, gw, gh, maxSub int) int { return max(1, min(maxSub, w/gw, h/gh)) }
