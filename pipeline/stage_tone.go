package pipeline

import "context"

// toneStage applies the camera look's saturation (job.lookSaturateRow)
// and the tone curve (job.toneCurve) hue-preservingly, in place; not
// linear.
var toneStage = Stage{Name: "tone", Scope: PerFile, Kind: Pointwise, Cost: noBuffers, run: stageTone, Row: toneRow}

func stageTone(_ context.Context, j *job) error {
	if k, _ := toneRow(j, nil); k != nil {
		j.image().parallel(k)
	}
	return nil
}

// toneRow is the stage's kernel (Stage.Row): the look's saturation, then
// the tone curve by applyTone's method; nil when neither applies.
func toneRow(j *job, _ *fusePass) (rowKernel, bool) {
	sat := j.lookSaturateRow()
	c := j.toneCurve()
	if c == nil {
		return sat, true
	}
	lut := toneLUT(c)
	if sat == nil {
		return func(px []float32) { toneRows(lut, px) }, true
	}
	return func(px []float32) {
		sat(px)
		toneRows(lut, px)
	}, true
}
