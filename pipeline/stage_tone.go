package pipeline

import "context"

// toneStage applies the tone curve (job.toneCurve) hue-preservingly, in
// place; not linear.
var toneStage = Stage{Name: "tone", Scope: PerFile, Kind: Pointwise, Cost: noBuffers, run: stageTone}

func stageTone(_ context.Context, j *job) error {
	j.lookSaturate(j.image())
	applyTone(j.image(), j.toneCurve())
	return nil
}
