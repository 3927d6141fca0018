package look

import (
	"math"

	"github.com/rawbatch/rawbatch/pipeline/colour"
)

// Search of AnchorExposureDeltaE: EVs within anchorSearchEV of the median
// estimate, first by anchorCoarseEV, then by anchorFineEV around the best.
const (
	anchorSearchEV = 1.0
	anchorCoarseEV = 0.1
	anchorFineEV   = 0.02
)

// AnchorExposureDeltaE is AnchorExposure with the exposure chosen to
// minimise the mean CIEDE2000, over the same usable cells, between the
// scene rendered through curve as the conversion does (2^EV, RGBTone in
// c.ToneSpace, into the cube by IntoCube) and the preview, both in space (the preview's;
// c.Lum its luminance row). The median of AnchorExposure is where the
// search starts (±1 EV, by 0.1 then 0.02 EV) and what decides Consistent
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
	model := newRenderModel(space, c.ToneSpace, c.Lum)
	score := newEVRender(c.Scene, c.Preview, cells, curve, space, model, c.Threads).score
	if reference {
		score = referenceEVScore(c, cells, curve, space, model)
	}
	best, bestScore := e.Raw, score(e.Raw, math.Inf(1))
	// The EVs scored so far (anchorEVKey): the coarse grid takes in the
	// start and the fine grid the coarse best and its two neighbours; an
	// EV scored again could only tie with its own earlier score, which
	// did not win or is the best, so the prepared search skips it (the
	// reference scores it again).
	scored := map[int64]bool{anchorEVKey(e.Raw, e.Raw): true}
	search := func(lo, hi, step float64) {
		for ev := lo; ev <= hi+1e-9; ev += step {
			if !reference {
				k := anchorEVKey(ev, e.Raw)
				if scored[k] {
					continue
				}
				scored[k] = true
			}
			anchorScoreHook(ev)
			if s := score(ev, bestScore); s < bestScore {
				best, bestScore = ev, s
			}
		}
	}
	search(e.Raw-anchorSearchEV, e.Raw+anchorSearchEV, anchorCoarseEV)
	search(best-anchorCoarseEV, best+anchorCoarseEV, anchorFineEV)
	e.Raw, e.Score = best, bestScore
	e.EV = min(max(best, -MaxAnchorEV), MaxAnchorEV)
	return e, nil
}

// anchorEVKey identifies an EV of the search by its offset from the
// start in steps of 1e-6 EV: far below the fine step (anchorFineEV), far
// above the rounding that adding the steps accumulates.
func anchorEVKey(ev, start float64) int64 {
	return int64(math.Round((ev - start) / 1e-6))
}

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
