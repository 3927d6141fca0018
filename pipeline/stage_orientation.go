package pipeline

import "context"

// orientationStage sets up the upright view of the variant's image (no
// buffer: quantise reads it row by row).
var orientationStage = Stage{Name: "orientation", Scope: PerVariant, Kind: Spatial, Linear: true, Cost: noBuffers, run: stageOrientation, Row: orientationRow}

// stageOrientation sets up the upright view of the variant's image; the
// quantise stage reads it row by row, so no second full-size buffer is
// needed.
func stageOrientation(_ context.Context, j *job) error {
	v := j.cur
	v.upright = NewOriented(v.img, j.info.Flip)
	return nil
}

// orientationRow is the stage's fused form (Stage.Row): the upright view,
// through which quantise's kernel gathers the rows of a fused pass (the
// earlier kernels are pointwise, so they commute with the view's
// permutation of pixels); no kernel of its own.
func orientationRow(j *job, _ *fusePass) (rowKernel, bool) {
	v := j.cur
	v.upright = NewOriented(v.img, j.info.Flip)
	return nil, true
}
