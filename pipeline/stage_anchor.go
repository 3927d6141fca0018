package pipeline

import (
	"context"
	"fmt"
	"math"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/highlight"
	"github.com/rawbatch/rawbatch/pipeline/look"
)

// anchorStage measures, once per file, the exposure correction that
// makes the rendering as bright as the embedded preview
// (look.AnchorExposure), on the camera image reduced to the preview's
// grid: from the CFA data before demosaic (anchor_reduce.go), else the
// demosaiced image. It comes after demosaic and before the camera matrix so that the
// planner never moves it after a variant's resize (it is not pointwise):
// every variant's exposure step applies the same EV. It writes no pixels.
// Version 1: the fits compare the look score's grid (Preview.Cells), the
// camera look renders sub-cells and fits a colour matrix. Version 2: the
// cells measured from the CFA data before demosaic where it gives what
// the anchor sees (anchor_reduce.go; within 0.05 EV of the demosaiced
// image's on the corpus). Version 4: with a sidecar's white balance the
// cells are measured with the as-shot one (anchorWBGains).
var anchorStage = Stage{Name: "exposure-anchor", Scope: PerFile, Kind: Spatial, Version: 5, Cost: anchorCost, Active: Settings.needsPreview, run: stageExposureAnchor,
	Band: anchorBand} // stream_twopass.go

// anchorClip is the camera value (1 = the white level after white
// balance) at or above which a photosite counts as clipped for the
// anchor's per-cell clipped fraction.
const anchorClip = 0.999

// anchorCost: the grids (camera, scene, preview: three 256-wide float
// images and the clipped fractions, under 2 MiB; with --look camera also
// its sub-grid of look.MaxSub² sub-cells a cell, 192 bytes a cell) while
// it runs; the kept preview is released when it ends.
func anchorCost(m memCtx) StepMemory {
	if !m.s.needsPreview() {
		return StepMemory{}
	}
	w, h := m.fi.Width, m.fi.Height
	if w <= 0 || h <= 0 {
		w, h = m.fi.RawWidth, m.fi.RawHeight
	}
	gh := int64(look.GridWidth)
	if w > 0 {
		gh = max(1, int64(look.GridWidth)*int64(h)/int64(w))
	}
	perCell := int64(40)
	if m.s.Look == LookCamera {
		perCell += 12 * look.MaxSub * look.MaxSub // the camera look's sub-grid (cameraSubGrid)
	}
	return StepMemory{Scratch: perCell * look.GridWidth * gh, Free: previewKeptBytes(w, h)}
}

// ExposureResult is the exposure a conversion applied (Result.Exposure).
type ExposureResult struct {
	// EV is the total exposure change in EV (linear gain 2^EV): --exposure,
	// BaselineExposure and BaselineExposureOffset of a DNG, and the
	// preview-anchored correction.
	EV float64
	// Source lists those terms, e.g. "--exposure +0.00, BaselineExposure
	// +0.25, preview anchor +0.31 (…)", or says why the preview anchor was
	// not applied ("no preview anchor: no embedded preview").
	Source string `json:",omitempty"`
}

// exposureState is the exposure the exposure stage applies (embedded in
// lookJob).
type exposureState struct {
	// anchorEV is the preview-anchored correction applied (0 when none);
	// exposureSource says how the EV applied was made up (Result).
	anchorEV       float64
	exposureSource string
	// cameraLook is the --look camera fit applied (nil: the default look,
	// also when the fit fell back).
	cameraLook *look.CameraLook
	// cfaGrid, when not nil, is the CFA data reduced for the anchor
	// (anchor_reduce.go), measured instead of the demosaiced image;
	// vignette, when not nil, the lens correction's vignetting gains,
	// applied to it before it is measured.
	cfaGrid  *anchorCFA
	vignette *anchorVignette
}

// exposureEV is the EV the exposure stage applies: ExposureEV (--exposure
// and BaselineExposure), the DNG BaselineExposureOffset of the profile
// when BaselineExposure is used, and the preview-anchored correction.
func (j *job) exposureEV() float64 {
	return ExposureEV(j.settings, j.info) + j.settings.Edit.Exposure + j.baselineOffset() + j.anchorEV
}

// baselineOffset is the DNG BaselineExposureOffset (tag 51109, EV) when
// BaselineExposure applies.
func (j *job) baselineOffset() float64 {
	if !j.settings.BaselineExposure || j.info.DNGVersion == 0 || j.hdr == nil {
		return 0
	}
	return j.hdr.BaselineExposureOffset
}

func stageExposureAnchor(_ context.Context, j *job) error {
	base := j.exposureBase()
	if j.cfaGrid != nil && j.vignette != nil {
		j.cfaGrid.devignette(j.vignette)
	}
	j.vignette = nil
	var note string
	if j.settings.Look == LookCamera {
		note = j.fitCameraLook()
	} else {
		note = j.anchor()
	}
	j.preview, j.cfaGrid = nil, nil                                                                // not read after this stage
	if err := nonFinite("the exposure anchored on the embedded preview", j.anchorEV); err != nil { // nonfinite.go
		return err
	}
	j.exposureSource = base
	switch {
	case j.cameraLook != nil:
		j.exposureSource += fmt.Sprintf(", camera look %+.2f (%s)", j.anchorEV, note)
	case j.anchorEV != 0:
		j.exposureSource += fmt.Sprintf(", preview anchor %+.2f (%s)", j.anchorEV, note)
	case note != "":
		j.exposureSource += ", no preview anchor: " + note
	}
	return nil
}

// anchor sets j.anchorEV from the preview when the settings ask for it,
// the preview is usable and the estimate consistent and at least
// minAnchorEV; it returns what it found (the estimate, or why there is
// none; "" when not asked).
func (j *job) anchor() string {
	if j.settings.ExposureAnchor != AnchorPreview || j.settings.Look == LookNeutral {
		return ""
	}
	if j.preview == nil {
		return j.previewNote
	}
	curve := j.toneCurve()
	if curve == nil {
		return "--tone none"
	}
	cells, err := j.anchorCells(j.preview)
	if err != nil {
		return err.Error()
	}
	e, err := look.AnchorExposureDeltaE(cells, curve, j.preview.Space, nil)
	if err != nil {
		return err.Error()
	}
	switch {
	case !e.Consistent:
		return "estimate not consistent: " + e.String()
	case math.Abs(e.EV) < minAnchorEV:
		return "estimate below 0.1 EV: " + e.String()
	}
	j.anchorEV = e.EV
	return e.String()
}

// minAnchorEV is the smallest correction applied (skipped when
// tiny; look.MinApplyEV is the estimate's noise, this the visible step).
const minAnchorEV = 0.1

// anchorCells builds the anchor's grids from the demosaiced camera image
// (j.camera, W×H×3, white balanced, 1 = clip) and the preview p: both
// reduced to look.GridSize of the preview, the camera grid taken to the
// preview's linear space and scaled by the EV of the baseline
// (BaselineExposure and its offset) but not of --exposure: the anchor
// matches the camera's brightness, and the photographer's --exposure
// is applied on top of it, never measured away; with the clipped
// fraction of each cell; the fits render through the working space
// (ToneSpace), where the tone stage applies the curve.
func (j *job) anchorCells(p *look.Preview) (look.Cells, error) {
	if j.colors != 3 {
		return look.Cells{}, fmt.Errorf("camera image has %d channels", j.colors)
	}
	// The grid of the look score (Preview.Cells, look.ScoreGridSize),
	// so that the fits score the cells the conversion is scored on.
	prev := p.Cells
	if prev.W == 0 {
		var err error
		if prev, err = p.Grid(look.GridSize(p.Image.W, p.Image.H, look.GridWidth)); err != nil {
			return look.Cells{}, err
		}
	}
	gw, gh := prev.W, prev.H
	if j.settings.HalfSize && j.cfaGrid == nil && gw > 1 && gh > 1 && (j.img.W < minCFACell*gw || j.img.H < minCFACell*gh) {
		// A half-size image measured whole: cells under four pixels a
		// side snap to two or three pixels and match the preview's less
		// well than the full decode's; the grid is halved, so that they
		// hold as many pixels as the full decode's.
		gw, gh = gw/2, gh/2
		var err error
		if prev, err = p.Grid(gw, gh); err != nil {
			return look.Cells{}, err
		}
	}
	scene, clipped, err := j.reduceCamera(gw, gh, anchorClip)
	if err != nil {
		return look.Cells{}, err
	}
	m := j.cameraToSpace(p.Space)
	g := math.Exp2(ExposureEV(j.settings, j.info) - j.settings.Exposure + j.baselineOffset())
	wb := j.anchorWBGains()
	for i := 0; i+2 < len(scene.Pix); i += 3 {
		v := m.Apply([3]float64{float64(scene.Pix[i]) * wb[0], float64(scene.Pix[i+1]) * wb[1], float64(scene.Pix[i+2]) * wb[2]})
		for c := range 3 {
			scene.Pix[i+c] = float32(v[c] * g)
		}
	}
	return look.Cells{Scene: scene, Preview: prev, Clipped: clipped, Lum: p.Space.ToXYZ[1], ToneSpace: WorkingSpace, Threads: j.threadsNow()}, nil
}

// anchorWBGains are the gains (camera R, G, B) that take the camera grid
// from the file's own white balance (a sidecar's Temperature and Tint) to
// the as-shot one, which the camera's preview shows: the anchor measures
// the exposure with the camera's white balance, so that the file's white
// balance changes the colours but not the brightness (green, the
// multipliers being relative to it, stays as the as-shot conversion has
// it), as in Camera Raw. (1, 1, 1) for any other white balance, or when
// the as-shot multipliers are not usable.
func (j *job) anchorWBGains() [3]float64 {
	one := [3]float64{1, 1, 1}
	m, a := j.wb.Multipliers, j.info.CamMul
	if j.wb.Source != "sidecar" || !(m[0] > 0 && m[1] > 0 && m[2] > 0) {
		return one
	}
	if ok, _ := highlight.AsShotUsable(a); !ok {
		return one
	}
	return [3]float64{a[0] / a[1] / (m[0] / m[1]), 1, a[2] / a[1] / (m[2] / m[1])}
}

// cameraToSpace is the 3×3 matrix from white-balanced camera RGB (three
// channels) to linear RGB in space, through the working space as the
// camera-matrix and output-space stages go.
func (j *job) cameraToSpace(space *colour.Space) colour.Mat3 {
	cw := CameraToWorking(j.info.RGBCam)
	var m3 colour.Mat3
	for i := range 3 {
		for k := range 3 {
			m3[i][k] = cw[i][k]
		}
	}
	return colour.ConvertMatrix(WorkingSpace, space).Mul(m3)
}

// anchorIdle: the exposure anchor and the camera look measure nothing: no
// usable embedded preview was kept.
func anchorIdle(j *job) bool { return j.preview == nil }

// maxCameraLookEV clamps the exposure of a camera-look fit (the fit is
// unclamped; twice the anchor's limit keeps a wild fit from blowing out
// the picture, and such a fit has a high residual anyway).
const maxCameraLookEV = 3

// fitCameraLook fits --look camera to the preview (look.FitCamera on the
// anchor's grids: gains on top of the white balance applied (1 when
// --wb chose it), exposure on top of the baseline (--exposure is added
// after), a monotone curve, one saturation
// factor) and keeps it in j.cameraLook when its cross-validated residual
// is acceptable (look.MaxCameraResidual); else, or without a usable
// preview, it falls back to the default look with a warning. It returns
// the note for Result.Exposure.
func (j *job) fitCameraLook() string {
	fallback := func(why string) string {
		j.warnings = append(j.warnings, "--look camera: used the default look: "+why)
		return j.anchor() // the default look's preview anchor, if any
	}
	if j.preview == nil {
		return fallback(j.previewNote)
	}
	if j.settings.Tone == ToneNone {
		return fallback("--tone none")
	}
	in, err := j.cameraFitInputs()
	if err != nil {
		return fallback(err.Error())
	}
	l, err := look.FitCamera(in.camera, in.toSpace, j.preview.Space, in.cells, in.opts)
	if err != nil {
		return fallback(err.Error())
	}
	if !l.Acceptable() {
		return fallback(fmt.Sprintf("the fit to the preview is poor (cross-validated mean ΔE2000 %.2f > %d)", l.Residual, look.MaxCameraResidual))
	}
	l.EV = min(max(l.EV, -maxCameraLookEV), maxCameraLookEV)
	j.cameraLook = &l
	j.anchorEV = l.EV
	return fmt.Sprintf("gains %.3f/%.3f/%.3f, saturation %.2f, curve weight %.1f, matrix weight %.1f, cross-validated mean ΔE2000 %.2f on %d cells", l.Gains[0], l.Gains[1], l.Gains[2], l.Saturation, l.CurveWeight, l.MatrixWeight, l.Residual, l.Cells)
}

// cameraFit are look.FitCamera's inputs (fitCameraLook).
type cameraFit struct {
	camera  look.Image
	toSpace colour.Mat3
	cells   look.Cells
	opts    look.FitOptions
}

// cameraFitInputs builds FitCamera's grids from the camera image and the
// preview: the anchor's cells, the white-balanced camera grid on which
// the gains are fitted (they correct the white balance applied: 1, 1, 1
// when it was right), its sub-grid, and the gains fixed at 1 when the
// photographer chose the white balance (--wb other than camera).
func (j *job) cameraFitInputs() (cameraFit, error) {
	cells, err := j.anchorCells(j.preview)
	if err != nil {
		return cameraFit{}, err
	}
	camGrid, err := j.cameraGrid(cells.Scene.W, cells.Scene.H)
	if err != nil {
		return cameraFit{}, err
	}
	var opts look.FitOptions
	if j.settings.WhiteBalance.Mode != "camera" {
		opts.Gains = [3]float64{1, 1, 1}
	}
	if opts.Sub, err = j.cameraSubGrid(cells.Scene.W, cells.Scene.H); err != nil {
		return cameraFit{}, err
	}
	return cameraFit{camera: camGrid, toSpace: j.cameraToSpace(j.preview.Space), cells: cells, opts: opts}, nil
}

// cameraGrid is the camera image (white balanced, 1 = clip) reduced to
// gw×gh and scaled by the EV of the baseline (not --exposure, which is
// applied on top of the fit), as anchorCells' scene before its matrix.
func (j *job) cameraGrid(gw, gh int) (look.Image, error) {
	g, _, err := j.reduceCamera(gw, gh, 0)
	if err != nil {
		return look.Image{}, err
	}
	k := float32(exposureGain(ExposureEV(j.settings, j.info) - j.settings.Exposure + j.baselineOffset()))
	for i := range g.Pix {
		g.Pix[i] *= k
	}
	return g, nil
}

// cameraSubGrid is cameraGrid's image reduced to look.MaxSub² sub-cells
// per cell (look.ReduceSub), at the same scale: what the camera look's
// fit renders, as the conversion renders every pixel.
func (j *job) cameraSubGrid(gw, gh int) (look.SubGrid, error) {
	g, err := j.reduceCameraSub(gw, gh, look.MaxSub)
	if err != nil {
		return look.SubGrid{}, err
	}
	k := float32(exposureGain(ExposureEV(j.settings, j.info) - j.settings.Exposure + j.baselineOffset()))
	for i := range g.Image.Pix {
		g.Image.Pix[i] *= k
	}
	return g, nil
}
