package look

import (
	"math"

	"github.com/rawbatch/rawbatch/pipeline/colour"
)

// Search of AnchorExposureDeltaE: EVs within anchorSearchEV of the median
// estimate by anchorCoarseEV, scored on about anchorCoarseCells of the
// cells; then, on about anchorFineCells of them, steps of anchorFineEV
// from the coarse best while the score falls, short of its coarse
// neighbours (which it beat).
const (
	anchorSearchEV = 1.0
	anchorCoarseEV = 0.1
	anchorFineEV   = 0.02
	// anchorCoarseCells is about how many cells the coarse grid scores:
	// every k-th of the scored cells, evenly spread over the picture (a
	// 256-cell grid has up to 43 520). Its mean ΔE2000 follows the whole
	// grid's closely enough to place the best coarse EV where all the
	// cells would (the EVs chosen on the real and realistic files are
	// the same as with every cell scored), and the fine search, on
	// anchorFineCells, takes it from there (TestAnchorSearchMatchesGrid).
	anchorCoarseCells = 2048
	// anchorFineCells is about how many cells the fine steps score: every
	// k-th of the scored cells when there are more. The mean over a
	// spread sample of n cells differs from the whole grid's by about
	// σ/√n (σ the cells' ΔE2000 spread, a few units), a few hundredths
	// at 8192, where one 0.02 EV step moves the mean by about as much
	// near the minimum: so the sample's best EV is the grid's or one
	// step beside it, whose look differs by under 0.1 ΔE2000 on
	// average, while scoring all of a 256-px grid's cells cost several
	// times what the rest of the anchor does
	// (TestAnchorSampleNearGrid).
	anchorFineCells = 8192
)

// AnchorExposureDeltaE is AnchorExposure with the exposure chosen to
// minimise the mean CIEDE2000, over the same usable cells, between the
// scene rendered through curve as the conversion does (2^EV, RGBTone in
// c.ToneSpace, into the cube by IntoCube) and the preview, both in space (the preview's;
// c.Lum its luminance row). The median of AnchorExposure is where the
// search starts (±1 EV by 0.1 EV on a spread subset of the cells, then by
// 0.02 EV on a larger one, anchorFineCells, while the score falls) and what decides Consistent
// and Spread; EV is the minimiser clamped to ±MaxAnchorEV, Raw the
// unclamped minimiser. Why: when the camera's curve differs in shape from
// ours, the EV at which mid-tones match in luminance on the median is not
// the one at which the picture as a whole matches best (docs/look.md: on
// the 6D DNG the median made the score worse). Errors as AnchorExposure's.
func AnchorExposureDeltaE(c Cells, curve Curve, space *colour.Space, mask []bool) (Exposure, error) {
	return anchorExposureDeltaE(c, curve, space, mask, false)
}

// AnchorExposureDeltaEReference is AnchorExposureDeltaE rendering every
// cell directly (renderModel.render, colour.DeltaE2000) at every exposure
// searched, with no early stop: the reference that the prepared render
// (evRender) must match (tests; TestAnchorFitsMatchReference).
func AnchorExposureDeltaEReference(c Cells, curve Curve, space *colour.Space, mask []bool) (Exposure, error) {
	return anchorExposureDeltaE(c, curve, space, mask, true)
}

func anchorExposureDeltaE(c Cells, curve Curve, space *colour.Space, mask []bool, reference bool) (Exposure, error) {
	e, err := AnchorExposure(c, curve, mask)
	if err != nil || e.Cells == 0 {
		return e, err
	}
	var cells []int
	for k := range c.Scene.W * c.Scene.H {
		if (mask == nil || mask[k]) && c.scored(k) {
			cells = append(cells, k)
		}
	}
	cells = everyKth(cells, anchorFineCells)
	k := max(1, len(cells)/anchorCoarseCells)
	sub := everyKth(cells, anchorCoarseCells)
	model := newRenderModel(space, c.ToneSpace, c.Lum)
	var coarse, fine func(ev, bound float64) float64
	if reference {
		coarse, fine = referenceEVScore(c, sub, curve, space, model), referenceEVScore(c, cells, curve, space, model)
	} else {
		r := newEVRender(c.Scene, c.Preview, cells, curve, space, model, c.Threads)
		coarse = func(ev, bound float64) float64 { return r.scoreEvery(ev, bound, k) }
		fine = r.score
	}
	best, bestScore := e.Raw, coarse(e.Raw, math.Inf(1))
	for i := -anchorSteps(anchorSearchEV, anchorCoarseEV); i <= anchorSteps(anchorSearchEV, anchorCoarseEV); i++ {
		if i == 0 { // the start, scored above
			continue
		}
		ev := e.Raw + float64(i)*anchorCoarseEV
		anchorScoreHook(ev)
		if s := coarse(ev, bestScore); s < bestScore {
			best, bestScore = ev, s
		}
	}
	// The fine steps, on the fine sample, from the coarse best: up while the
	// score falls, else down. The mean ΔE2000 is smooth in EV, so within
	// a coarse step of its best it has one minimum, which the steps reach
	// scoring two to four EVs where a grid would score eight.
	if k > 1 {
		bestScore = fine(best, math.Inf(1))
	}
	from := best
	for _, dir := range [2]float64{1, -1} {
		for i := 1; i < anchorSteps(anchorCoarseEV, anchorFineEV); i++ {
			ev := from + dir*float64(i)*anchorFineEV
			anchorScoreHook(ev)
			s := fine(ev, bestScore)
			if s >= bestScore {
				break
			}
			best, bestScore = ev, s
		}
		if best != from {
			break
		}
	}
	e.Raw, e.Score = best, bestScore
	e.EV = min(max(best, -MaxAnchorEV), MaxAnchorEV)
	return e, nil
}

// everyKth is cells when it holds fewer than 2n, else every k-th of them
// (the 0th, k-th, 2k-th …; k = len/n), about n evenly spread over the
// picture when cells are in raster order.
func everyKth(cells []int, n int) []int {
	k := len(cells) / n
	if k < 2 {
		return cells
	}
	sub := make([]int, 0, len(cells)/k+1)
	for i := 0; i < len(cells); i += k {
		sub = append(sub, cells[i])
	}
	return sub
}

// anchorSteps is how many steps of step fit in span (both in EV).
func anchorSteps(span, step float64) int { return int(math.Round(span / step)) }

// anchorScoreHook is called with each EV that the search scores after the
// start (tests).
var anchorScoreHook = func(float64) {}

// scored reports whether cell k counts in AnchorExposureDeltaE's score:
// unclipped in the raw and above the noise (MinSceneLum), at any preview
// brightness. The median that starts the search and decides Consistent
// keeps to mid-tones (usable), where curves agree and the estimate is
// robust; the score is the picture's ΔE2000 against the preview, so it
// takes the shadows and highlights too, as ScorePreview does (only raw
// clipped cells are left out: what they show is the highlight stage's).
func (c Cells) scored(k int) bool {
	if c.Clipped != nil && c.Clipped[k] > MaxClippedFraction {
		return false
	}
	return luminance(c.Scene.cell(k), c.Lum) >= MinSceneLum
}
