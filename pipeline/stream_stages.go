package pipeline

import (
	"context"
	"image"
)

// idleBand is the band form (Stage.Band) of a stage that a streamed
// conversion passes through only when idle(j) says it has nothing to do
// for the file: its run, at its turn, which then touches no pixel and
// records why (the opcode, denoise and lens stages declare theirs so).
func idleBand(run func(context.Context, *job) error, idle func(j *job) bool) func(*job, *stream) (bandPrepare, bool) {
	return func(j *job, _ *stream) (bandPrepare, bool) {
		if !idle(j) {
			return nil, false
		}
		return func(ctx context.Context, s *stream) error { return run(ctx, s.j) }, true
	}
}

// cropBand, the crop stage's band form: the crop (stageCrop's decision)
// as the stream's region, no copy.
func cropBand(j *job, s *stream) (bandPrepare, bool) {
	if c, ok := scaledCrop(j.hdr, j.settings, s.cfa.W, s.cfa.H); ok {
		s.region = image.Rect(c.X, c.Y, c.X+c.W, c.Y+c.H)
	}
	return func(ctx context.Context, s *stream) error {
		return stageCrop(ctx, s.j) // j.camera nil: records the crop, moves no pixels
	}, true
}
