package look

import "github.com/rawbatch/rawbatch/pipeline/colour"

// renderModel is how the develop stages render a scene-linear colour in
// the preview's space, so that the anchor's and the camera look's fits
// score what the conversion will write: the tone curve by RGBTone in the
// tone space (the pipeline's working space, Cells.ToneSpace; the
// preview's own space when nil), back to the preview's space, then into
// the cube as the output-space stage's gamut step does (IntoCube).
type renderModel struct {
	toTone, fromTone colour.Mat3
	convert          bool
	lum              [3]float64
}

// newRenderModel is the model for the preview's space (space, luminance
// row lum) and the tone space tone (nil or the same space: no conversion).
func newRenderModel(space, tone *colour.Space, lum [3]float64) renderModel {
	m := renderModel{lum: lum}
	if tone != nil && space != nil && tone != space {
		m.toTone = colour.ConvertMatrix(space, tone)
		m.fromTone = colour.ConvertMatrix(tone, space)
		m.convert = true
	}
	return m
}

// render takes s (scene-linear, the preview's space) through curve and
// returns display-linear RGB in [0, 1]³ in the preview's space.
func (m renderModel) render(curve Curve, s [3]float64) [3]float64 {
	if !m.convert {
		t := RGBTone(curve, s)
		return IntoCube(t, m.lum)
	}
	t := m.fromTone.Apply(RGBTone(curve, m.toTone.Apply(s)))
	return IntoCube(t, m.lum)
}

// IntoCube brings one display-linear RGB triple into [0, 1]³ the way the
// output-space stage does after a tone curve: channels below 0 (beyond
// the space's primaries) are clipped to 0, then a colour brighter than
// white in some channel moves toward its own luminance Y = lum·p,
// p' = Y + t·(p − Y) with the largest t in [0, 1] that puts every channel
// at or below 1; Y ≥ 1 gives white. lum is the space's luminance row.
// (CompressGamut desaturates the negative side too; the conversion does
// not: docs/look.md, Gamut.)
func IntoCube(p [3]float64, lum [3]float64) [3]float64 {
	for i := range p {
		if !(p[i] > 0) {
			p[i] = 0
		}
	}
	y := luminance(p, lum)
	if y >= 1 {
		return [3]float64{1, 1, 1}
	}
	t := 1.0
	for _, c := range p {
		if c > 1 {
			t = min(t, (1-y)/(c-y))
		}
	}
	for i, c := range p {
		p[i] = min(y+t*(c-y), 1)
	}
	return p
}
