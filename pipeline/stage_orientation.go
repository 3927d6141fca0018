package pipeline

import "context"

// orientationStage sets up the upright view of the variant's image (no
// buffer: quantise reads it row by row).
var orientationStage = Stage{Name: "orientation", Scope: PerVariant, Kind: Spatial, Linear: true, Cost: noBuffers, run: stageOrientation}

// stageOrientation sets up the upright view of the variant's image; the
// quantise stage reads it row by row, so no second full-size buffer is
// needed.
func stageOrientation(_ context.Context, j *job) error {
	v := j.cur
	v.upright = NewOriented(v.img, j.info.Flip)
	return nil
}
