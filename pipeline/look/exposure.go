package look

import (
	"fmt"
	"math"
	"sort"

	"github.com/rawbatch/rawbatch/pipeline/colour"
)

// Thresholds of the preview-anchored exposure (docs/look.md gives their
// sources).
const (
	// MidToneLow and MidToneHigh bound the preview's display-linear
	// luminance of a usable cell (≈ sRGB code 0.25–0.80): darker cells are
	// dominated by the camera's toe and noise, brighter ones by its
	// shoulder, where the inverse curve is steep and uncertain.
	MidToneLow, MidToneHigh = 0.05, 0.60
	// MaxClippedFraction is the largest fraction of a cell's raw pixels
	// that may be clipped for the cell to count (none, up to rounding).
	MaxClippedFraction = 0.001
	// MinSceneLum is the smallest scene-linear luminance of a usable cell
	// (≈ −13 EV below clip, under the noise of any raw).
	MinSceneLum = 1e-4
	// MinAnchorCells is the fewest usable cells for a consistent estimate
	// (the sample files have thousands; 64 keeps a tiny preview usable).
	MinAnchorCells = 64
	// MaxAnchorSpread is the largest interquartile range of the per-cell
	// log ratios, in EV, for a consistent estimate: four real files
	// spread 0.05–0.25 EV; 0.5 EV means the preview and the raw
	// disagree by more than a global exposure (local tone mapping, a
	// different crop, or a different picture).
	MaxAnchorSpread = 0.5
	// MaxAnchorEV clamps the estimate (±1.5 EV).
	MaxAnchorEV = 1.5
	// MinApplyEV is the smallest estimate worth applying; smaller ones
	// are within the estimate's own noise.
	MinApplyEV = 0.05
)

// Exposure is the result of AnchorExposure.
type Exposure struct {
	// EV is the exposure correction, clamped to ±MaxAnchorEV: scale the
	// scene-linear image by 2^EV before the tone curve. Raw is the median
	// before the clamp.
	EV, Raw float64
	// Spread is the interquartile range of the per-cell estimates in EV.
	Spread float64
	// Cells is the number of cells used.
	Cells int
	// Score is the mean ΔE2000 at Raw over the cells scored
	// (AnchorExposureDeltaE; 0 from AnchorExposure).
	Score float64
	// Consistent is Cells ≥ MinAnchorCells and Spread ≤ MaxAnchorSpread:
	// only then should a stage apply EV (and only when |EV| ≥ MinApplyEV).
	Consistent bool
}

func (e Exposure) String() string {
	return fmt.Sprintf("%+.2f EV (median %+.2f, IQR %.2f EV, %d cells, consistent %v)", e.EV, e.Raw, e.Spread, e.Cells, e.Consistent)
}

// Cells pairs the grids that the preview-anchored estimates compare, all of
// the same size W×H cells (Reduce to one GridSize).
type Cells struct {
	// Scene is the scene-linear image reduced to the grid, in the
	// preview's colour space (linear, before any tone curve, white
	// balanced).
	Scene Image
	// Preview is the preview reduced to the grid, display-linear in the
	// same space.
	Preview Image
	// Clipped is the fraction of each cell's raw pixels that are clipped
	// (len W×H, from Reduce's clip output on the raw-scaled image); nil
	// when no pixel is clipped.
	Clipped []float32
	// Lum is the space's luminance row (Y of its RGB→XYZ matrix).
	Lum [3]float64
	// ToneSpace is the linear space in which the rendering applies the
	// tone curve by RGBTone (the pipeline's working space); nil: the
	// preview's space. AnchorExposureDeltaE and FitCamera score their
	// fits through it, so that they score what the conversion writes.
	ToneSpace *colour.Space
	// Threads is how many goroutines the fits may use (≤ 0: GOMAXPROCS);
	// their results do not depend on it.
	Threads int
}

func (c Cells) check() error {
	if err := c.Scene.check(); err != nil {
		return err
	}
	if err := c.Preview.check(); err != nil {
		return err
	}
	if c.Scene.W != c.Preview.W || c.Scene.H != c.Preview.H {
		return fmt.Errorf("look: scene grid %d×%d and preview grid %d×%d differ", c.Scene.W, c.Scene.H, c.Preview.W, c.Preview.H)
	}
	if c.Clipped != nil && len(c.Clipped) < c.Scene.W*c.Scene.H {
		return fmt.Errorf("look: %d clipped fractions for %d cells", len(c.Clipped), c.Scene.W*c.Scene.H)
	}
	return nil
}

// usable reports whether cell k is mid-tone in the preview and unclipped
// in the raw.
func (c Cells) usable(k int) bool {
	if c.Clipped != nil && c.Clipped[k] > MaxClippedFraction {
		return false
	}
	p := [3]float64{float64(c.Preview.Pix[3*k]), float64(c.Preview.Pix[3*k+1]), float64(c.Preview.Pix[3*k+2])}
	yp := luminance(p, c.Lum)
	if yp < MidToneLow || yp > MidToneHigh || max(p[0], p[1], p[2]) >= 0.98 {
		return false
	}
	s := [3]float64{float64(c.Scene.Pix[3*k]), float64(c.Scene.Pix[3*k+1]), float64(c.Scene.Pix[3*k+2])}
	return luminance(s, c.Lum) >= MinSceneLum
}

// AnchorExposure estimates the exposure that makes the scene, rendered
// through curve, as bright as the preview: the median over usable cells
// (mid-tone in the preview, unclipped in the raw; see the constants) of
// log2(Yp / Ys), with Yp the luminance of the preview cell taken back
// through the curve (InverseRGBTone, which for a neutral cell is
// curve.Inverse of its luminance, and exact for any colour rendered with
// RGBTone) and Ys the scene cell's luminance. A cell subset may be chosen with
// mask (len W×H, true = may be used; nil = all). Errors: mismatched grids.
// With no usable cell the result has Cells = 0 and is not consistent.
func AnchorExposure(c Cells, curve Curve, mask []bool) (Exposure, error) {
	if err := c.check(); err != nil {
		return Exposure{}, err
	}
	n := c.Scene.W * c.Scene.H
	var r []float64
	for k := range n {
		if (mask != nil && !mask[k]) || !c.usable(k) {
			continue
		}
		yp := luminance(InverseRGBTone(curve, c.Preview.cell(k)), c.Lum)
		ys := luminance([3]float64{float64(c.Scene.Pix[3*k]), float64(c.Scene.Pix[3*k+1]), float64(c.Scene.Pix[3*k+2])}, c.Lum)
		r = append(r, math.Log2(yp/ys))
	}
	e := Exposure{Cells: len(r)}
	if len(r) == 0 {
		return e, nil
	}
	sort.Float64s(r)
	e.Raw = quantile(r, 0.5)
	e.Spread = quantile(r, 0.75) - quantile(r, 0.25)
	e.EV = min(max(e.Raw, -MaxAnchorEV), MaxAnchorEV)
	e.Consistent = e.Cells >= MinAnchorCells && e.Spread <= MaxAnchorSpread
	return e, nil
}

// quantile returns the q-quantile of sorted s by linear interpolation
// between order statistics.
func quantile(s []float64, q float64) float64 {
	p := q * float64(len(s)-1)
	i := int(p)
	if i >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[i] + (p-float64(i))*(s[i+1]-s[i])
}
