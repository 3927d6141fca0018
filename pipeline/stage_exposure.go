package pipeline

import (
	"context"
	"math"

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
	return func(px []float32) {
		for i := range px {
			px[i] *= g
		}
	}, true
}

// exposureGain returns 2^ev, the linear gain of an exposure change of ev EV.
func exposureGain(ev float64) float32 { return float32(math.Exp2(ev)) }
