package look

import (
	"fmt"
	"math"
	"sync"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/internal/par"
)

// WBFit is the result of FitWB.
type WBFit struct {
	// Gains are the white-balance multipliers for camera R, G, B relative
	// to green (Gains[1] = 1), dimensionless, applied to camera RGB before
	// the camera matrix (LibRaw's user_mul up to normalisation).
	Gains [3]float64
	// Residual is the root-mean-square chromaticity error left, in natural
	// log units of the R/G and B/G ratios (0.01 ≈ 1 %), over Cells cells.
	Residual float64
	Cells    int
}

// Range and steps of the gain search (log2 of the gain relative to green).
const (
	wbLogMin, wbLogMax = -2.0, 3.0 // gains 0.25 … 8
	wbMaxCells         = 2000      // cells kept for the search (evenly spaced)
	wbCostCap          = 0.25      // per-cell squared log error cap (robust to outliers)
	// MinWBCells is the fewest usable cells for FitWB to return a fit.
	MinWBCells = 32
)

// FitWB fits the two white-balance gains (R and B relative to G) that make
// the scene's colours match the preview's: camera is the camera-RGB grid
// (scene-linear, not white balanced, W×H×3), toSpace maps white-balanced
// camera RGB to the preview's linear space (for LibRaw: the preview space
// from sRGB times rgb_cam), c.Preview the preview grid, c.Clipped and
// c.Lum as for AnchorExposure (c.Scene is ignored). Over cells mid-tone in
// the preview and unclipped in the raw, it minimises the sum of squared
// differences of ln(R/G) and ln(B/G) between toSpace·diag(gains)·camera
// and the preview taken back through curve (InverseRGBTone), each cell's
// term capped at 0.25 (a 65 % ratio error) so that a few mismatched cells
// cannot pull the fit; exposure cancels in the ratios. The search is a
// coarse-to-fine grid over log2 gains in [−2, 3] (steps 0.2, 0.04, 0.008, 0.002; at most 2000 cells, evenly spaced).
// Errors: mismatched grids, fewer than MinWBCells usable cells.
func FitWB(camera Image, toSpace colour.Mat3, c Cells, curve Curve, mask []bool) (WBFit, error) {
	return fitWB(camera, toSpace, c, curve, mask, false)
}

// FitWBReference is FitWB evaluating every candidate on every cell
// directly (toSpace·diag(gains)·camera per cell and candidate, in order,
// no early stop): the reference of FitWB's search (tests;
// TestWBFitMatchesReference).
func FitWBReference(camera Image, toSpace colour.Mat3, c Cells, curve Curve, mask []bool) (WBFit, error) {
	return fitWB(camera, toSpace, c, curve, mask, true)
}

// wbCell is one cell of FitWB's search: its camera RGB and the preview's
// ln(R/G), ln(B/G) (pr[1] unused); col[k] = camera[k]·(column k of
// toSpace), so that toSpace·diag(gr, 1, gb)·camera = gr·col[0] + col[1] +
// gb·col[2].
type wbCell struct {
	cam, pr [3]float64
	col     [3][3]float64
}

// wbCellRatios returns cell k's camera RGB and its preview taken back
// through curve, and whether all six are positive (the cell can be fitted).
func wbCellRatios(camera Image, c Cells, curve Curve, k int) (cam, p [3]float64, ok bool) {
	cam = camera.cell(k)
	p = InverseRGBTone(curve, c.Preview.cell(k))
	ok = cam[0] > 0 && cam[1] > 0 && cam[2] > 0 && p[0] > 0 && p[1] > 0 && p[2] > 0
	return cam, p, ok
}

func fitWB(camera Image, toSpace colour.Mat3, c Cells, curve Curve, mask []bool, reference bool) (WBFit, error) {
	c.Scene = camera
	if err := c.check(); err != nil {
		return WBFit{}, err
	}
	// The usable cells' indices first (4 bytes a cell), then the cells
	// of the search (120 bytes each) for at most wbMaxCells of them: the
	// grid of a 256-cell-wide preview has tens of thousands.
	n := camera.W * camera.H
	usable := make([]int32, 0, n)
	for k := range n {
		if (mask != nil && !mask[k]) || !c.usable(k) {
			continue
		}
		if _, _, ok := wbCellRatios(camera, c, curve, k); ok {
			usable = append(usable, int32(k))
		}
	}
	if len(usable) < MinWBCells {
		return WBFit{Cells: len(usable)}, fmt.Errorf("look: white balance fit: %d usable cells, need %d", len(usable), MinWBCells)
	}
	if len(usable) > wbMaxCells {
		step := float64(len(usable)) / wbMaxCells
		for i := range wbMaxCells {
			usable[i] = usable[int(float64(i)*step)]
		}
		usable = usable[:wbMaxCells]
	}
	cells := make([]wbCell, len(usable))
	for i, k := range usable {
		cam, p, _ := wbCellRatios(camera, c, curve, int(k))
		cells[i] = wbCell{cam: cam, pr: [3]float64{math.Log(p[0] / p[1]), 0, math.Log(p[2] / p[1])}}
	}
	for i := range cells {
		for k := range 3 {
			for r := range 3 {
				cells[i].col[k][r] = cells[i].cam[k] * toSpace[r][k]
			}
		}
	}
	// cost is the capped sum of squared log-ratio errors at log2 gains
	// (lr, lb); +Inf once the partial sum exceeds bound (the terms are
	// non-negative: the total would too).
	cost := func(lr, lb, bound float64) float64 {
		gr, gb := math.Exp2(lr), math.Exp2(lb)
		var sum float64
		for i := range cells {
			cl := &cells[i]
			s0 := gr*cl.col[0][0] + cl.col[1][0] + gb*cl.col[2][0]
			s1 := gr*cl.col[0][1] + cl.col[1][1] + gb*cl.col[2][1]
			s2 := gr*cl.col[0][2] + cl.col[1][2] + gb*cl.col[2][2]
			e := wbCostCap
			if s0 > 0 && s1 > 0 && s2 > 0 {
				dr := math.Log(s0/s1) - cl.pr[0]
				db := math.Log(s2/s1) - cl.pr[2]
				e = min(dr*dr+db*db, wbCostCap)
			}
			sum += e
			if i&63 == 63 && sum > bound {
				return math.Inf(1)
			}
		}
		return sum
	}
	if reference {
		cost = func(lr, lb, _ float64) float64 {
			g := [3]float64{math.Exp2(lr), 1, math.Exp2(lb)}
			var sum float64
			for _, cl := range cells {
				s := toSpace.Apply([3]float64{cl.cam[0] * g[0], cl.cam[1], cl.cam[2] * g[2]})
				e := wbCostCap
				if s[0] > 0 && s[1] > 0 && s[2] > 0 {
					dr := math.Log(s[0]/s[1]) - cl.pr[0]
					db := math.Log(s[2]/s[1]) - cl.pr[2]
					e = min(dr*dr+db*db, wbCostCap)
				}
				sum += e
			}
			return sum
		}
	}
	bestR, bestB := 0.0, 0.0
	lo := [2]float64{wbLogMin, wbLogMin}
	hi := [2]float64{wbLogMax, wbLogMax}
	for _, step := range []float64{0.2, 0.04, 0.008, 0.002} {
		// The level's candidates in the search's order (lr outer, lb
		// inner, steps accumulated as the loops always have); the first
		// with the lowest cost wins.
		var cand [][2]float64
		for lr := lo[0]; lr <= hi[0]+1e-9; lr += step {
			for lb := lo[1]; lb <= hi[1]+1e-9; lb += step {
				cand = append(cand, [2]float64{lr, lb})
			}
		}
		v := evalCandidates(len(cand), c.Threads, func(i int, bound float64) float64 {
			return cost(cand[i][0], cand[i][1], bound)
		})
		best := math.Inf(1)
		for i, x := range v {
			if x < best {
				best, bestR, bestB = x, cand[i][0], cand[i][1]
			}
		}
		lo = [2]float64{bestR - 2*step, bestB - 2*step}
		hi = [2]float64{bestR + 2*step, bestB + 2*step}
	}
	return WBFit{
		Gains:    [3]float64{math.Exp2(bestR), 1, math.Exp2(bestB)},
		Residual: math.Sqrt(cost(bestR, bestB, math.Inf(1)) / float64(len(cells))),
		Cells:    len(cells),
	}, nil
}

// evalCandidates returns f(i, bound) for i in [0, n) on up to threads
// goroutines (≤ 0: GOMAXPROCS), where bound is the lowest value returned
// so far by any candidate: f may return +Inf once its value is sure to
// exceed bound strictly (never on equality), so that the first candidate
// with the lowest value is the same, with the same value, whatever the
// thread count and the order in which the candidates finish.
func evalCandidates(n, threads int, f func(i int, bound float64) float64) []float64 {
	out := make([]float64, n)
	var mu sync.Mutex
	bound := math.Inf(1)
	par.RangeOn(threads, n, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			mu.Lock()
			b := bound
			mu.Unlock()
			v := f(i, b)
			out[i] = v
			mu.Lock()
			bound = min(bound, v)
			mu.Unlock()
		}
	})
	return out
}
