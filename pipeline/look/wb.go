package look

import (
	"fmt"
	"math"

	"github.com/rawbatch/rawbatch/pipeline/colour"
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
	c.Scene = camera
	if err := c.check(); err != nil {
		return WBFit{}, err
	}
	type cell struct{ cam, pr [3]float64 }
	var cells []cell
	n := camera.W * camera.H
	for k := range n {
		if (mask != nil && !mask[k]) || !c.usable(k) {
			continue
		}
		cam := camera.cell(k)
		p := InverseRGBTone(curve, c.Preview.cell(k))
		if cam[0] <= 0 || cam[1] <= 0 || cam[2] <= 0 || p[0] <= 0 || p[1] <= 0 || p[2] <= 0 {
			continue
		}
		cells = append(cells, cell{cam, [3]float64{math.Log(p[0] / p[1]), 0, math.Log(p[2] / p[1])}})
	}
	if len(cells) < MinWBCells {
		return WBFit{Cells: len(cells)}, fmt.Errorf("look: white balance fit: %d usable cells, need %d", len(cells), MinWBCells)
	}
	if len(cells) > wbMaxCells {
		step := float64(len(cells)) / wbMaxCells
		kept := make([]cell, 0, wbMaxCells)
		for i := 0; i < wbMaxCells; i++ {
			kept = append(kept, cells[int(float64(i)*step)])
		}
		cells = kept
	}
	cost := func(lr, lb float64) float64 {
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
	bestR, bestB := 0.0, 0.0
	lo := [2]float64{wbLogMin, wbLogMin}
	hi := [2]float64{wbLogMax, wbLogMax}
	for _, step := range []float64{0.2, 0.04, 0.008, 0.002} {
		best := math.Inf(1)
		for lr := lo[0]; lr <= hi[0]+1e-9; lr += step {
			for lb := lo[1]; lb <= hi[1]+1e-9; lb += step {
				if v := cost(lr, lb); v < best {
					best, bestR, bestB = v, lr, lb
				}
			}
		}
		lo = [2]float64{bestR - 2*step, bestB - 2*step}
		hi = [2]float64{bestR + 2*step, bestB + 2*step}
	}
	return WBFit{
		Gains:    [3]float64{math.Exp2(bestR), 1, math.Exp2(bestB)},
		Residual: math.Sqrt(cost(bestR, bestB) / float64(len(cells))),
		Cells:    len(cells),
	}, nil
}
