package pipeline

import (
	"fmt"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/look"
)

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

// lookCameraToWorking is CameraToWorking with the camera look's gains
// (diag(gains) on camera RGB, first) and colour matrix (last, in the
// working space) when --look camera fitted them.
func (j *job) lookCameraToWorking() [3][4]float64 {
	m := CameraToWorking(j.info.RGBCam)
	l := j.cameraLook
	if l == nil {
		return m
	}
	for i := range 3 {
		for k := range 3 {
			m[i][k] *= l.Gains[k]
		}
	}
	// The look's colour matrix, in the working space, after the rest.
	c := l.MatrixIn(WorkingSpace)
	var out [3][4]float64
	for i := range 3 {
		for k := range 4 {
			out[i][k] = c[i][0]*m[0][k] + c[i][1]*m[1][k] + c[i][2]*m[2][k]
		}
	}
	return out
}

// lookSaturateRow returns the kernel that scales pixels' chroma about
// their luminance by the camera look's saturation factor, in place, before
// the tone curve: s' = Y + k·(s − Y) with Y the working space's luminance;
// a linear map that is the same in every RGB space sharing white and
// luminance, so it equals the fit's (done in the preview's space). nil
// without a look or at factor 1.
func (j *job) lookSaturateRow() rowKernel {
	l := j.cameraLook
	if l == nil || l.Saturation == 1 {
		return nil
	}
	k := float32(l.Saturation)
	var lum [3]float32
	for c := range 3 {
		lum[c] = float32(WorkingSpace.ToXYZ[1][c])
	}
	return func(pix []float32) {
		for i := 0; i+2 < len(pix); i += 3 {
			y := lum[0]*pix[i] + lum[1]*pix[i+1] + lum[2]*pix[i+2]
			for c := range 3 {
				pix[i+c] = y + k*(pix[i+c]-y)
			}
		}
	}
}
