package look

import (
	"fmt"

	"github.com/rawbatch/rawbatch/pipeline/colour"
)

// MeanDeltaE2000 is the mean CIEDE2000 difference between grids a and b
// (same W×H, display-linear RGB in spaces sa and sb; CIELAB relative to
// each space's own white, which is D65 for all but ProPhoto), over the
// cells where mask is true (nil: all). Errors: different sizes, no cell.
func MeanDeltaE2000(a Image, sa *colour.Space, b Image, sb *colour.Space, mask []bool) (float64, error) {
	if err := a.check(); err != nil {
		return 0, err
	}
	if err := b.check(); err != nil {
		return 0, err
	}
	if a.W != b.W || a.H != b.H {
		return 0, fmt.Errorf("look: grids %d×%d and %d×%d differ", a.W, a.H, b.W, b.H)
	}
	var sum float64
	n := 0
	for k := range a.W * a.H {
		if mask != nil && !mask[k] {
			continue
		}
		sum += colour.DeltaE2000(sa.LinearToLab(clampCube(a.cell(k))), sb.LinearToLab(clampCube(b.cell(k))))
		n++
	}
	if n == 0 {
		return 0, fmt.Errorf("look: no cell to compare")
	}
	return sum / float64(n), nil
}

func clampCube(v [3]float64) [3]float64 {
	return [3]float64{clamp01(v[0]), clamp01(v[1]), clamp01(v[2])}
}

// ScorePreview is the look score of `make bench` (docs/look.md): the mean
// ΔE2000 between a rendered output image (display-linear, W×H×3, in
// outSpace) and the preview (display-linear in prevSpace, any size), after
// centre-cropping the preview to the output's aspect ratio and reducing
// both to GridWidth cells wide (box filter in linear light; the grid of
// the output's aspect). Values are clipped to [0, 1] before CIELAB.
// Errors: empty images, a preview smaller than the grid.
func ScorePreview(out Image, outSpace *colour.Space, preview Image, prevSpace *colour.Space) (float64, error) {
	if err := out.check(); err != nil {
		return 0, err
	}
	if err := preview.check(); err != nil {
		return 0, err
	}
	gw, gh := GridSize(out.W, out.H, GridWidth)
	p := CropToAspect(preview, out.W, out.H)
	gw, gh = min(gw, p.W), min(gh, p.H)
	og, _, err := Reduce(out, gw, gh, 0)
	if err != nil {
		return 0, err
	}
	pg, _, err := Reduce(p, gw, gh, 0)
	if err != nil {
		return 0, err
	}
	return MeanDeltaE2000(og, outSpace, pg, prevSpace, nil)
}
