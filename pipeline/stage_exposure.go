package pipeline

import (
	"context"
	"fmt"
	"math"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
)

// exposureStage multiplies by 2^EV, in place: EV = --exposure +
// BaselineExposure (+ BaselineExposureOffset) + the preview anchor
// (job.exposureEV).
var exposureStage = Stage{Name: "exposure", Scope: PerFile, Kind: Pointwise, Linear: true, Cost: noBuffers, run: stageExposure, Row: exposureRow}

// ExposureEV returns the exposure change applied to a file: the --exposure
// value plus, when enabled, the DNG BaselineExposure (LibRaw reports -999
// when the tag is absent).
func ExposureEV(s Settings, in libraw.Info) float64 {
	ev := s.Exposure
	if s.BaselineExposure && in.DNGVersion != 0 && in.BaselineExposure > -100 && in.BaselineExposure < 100 {
		ev += in.BaselineExposure
	}
	return ev
}

func stageExposure(_ context.Context, j *job) error {
	if k, _ := exposureRow(j, nil); k != nil {
		j.image().parallel(k)
	}
	return nil
}

// exposureRow is the stage's kernel (Stage.Row): a multiplication by the
// exposure gain 2^j.exposureEV(); nil for 0 EV.
func exposureRow(j *job, _ *fusePass) (rowKernel, bool) {
	ev := j.exposureEV()
	if ev == 0 {
		return nil, true
	}
	g := exposureGain(ev)
	return func(px []float32) { colour.ScaleRows(px, g) }, true
}

// exposureGain returns 2^ev, the linear gain of an exposure change of ev EV.
func exposureGain(ev float64) float32 { return float32(math.Exp2(ev)) }

// exposureBase is the start of Result.Exposure.Source: the terms of the
// exposure applied before any preview anchor, "--exposure +0.00" then
// ", BaselineExposure +0.25" and ", BaselineExposureOffset -0.10" when not 0
// (EV).
func (j *job) exposureBase() string {
	base := fmt.Sprintf("--exposure %+.2f", j.settings.Exposure)
	if b := ExposureEV(j.settings, j.info) - j.settings.Exposure; b != 0 {
		base += fmt.Sprintf(", BaselineExposure %+.2f", b)
	}
	if o := j.baselineOffset(); o != 0 {
		base += fmt.Sprintf(", BaselineExposureOffset %+.2f", o)
	}
	if e := j.settings.Edit.Exposure; e != 0 {
		base += fmt.Sprintf(", sidecar exposure %+.2f", e)
	}
	return base
}

// exposureWithoutAnchor sets the exposure's source when the exposure-anchor
// stage was not planned (Settings.needsPreview false): the terms applied
// and why no preview anchor was, from the setting that turned it off:
// "--tone none" (it matches the preview through the tone curve),
// "--look neutral" or "--exposure-anchor none". With --look camera and
// --tone none it also warns that the default look was used, and why. It
// does nothing when the stage ran.
func (j *job) exposureWithoutAnchor() {
	s := j.settings
	if s.needsPreview() || j.exposureSource != "" {
		return
	}
	var why string
	switch {
	case s.Tone == ToneNone && s.Look == LookCamera:
		why = "--tone none"
		j.warnings = append(j.warnings, "--look camera: used the default look: --tone none (the camera look fits a tone curve)")
	case s.Tone == ToneNone && s.ExposureAnchor == AnchorPreview && s.Look != LookNeutral:
		why = "--tone none"
	case s.Look == LookNeutral && s.ExposureAnchor == AnchorPreview:
		why = "--look neutral"
	case s.ExposureAnchor == AnchorNone:
		why = "--exposure-anchor none"
	}
	j.exposureSource = j.exposureBase()
	if why != "" {
		j.exposureSource += ", no preview anchor: " + why
	}
}
