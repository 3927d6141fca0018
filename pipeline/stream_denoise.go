package pipeline

import (
	"context"
	"fmt"

	"github.com/rawbatch/rawbatch/pipeline/denoise"
)

// The noise reduction in a streamed conversion (docs/pipeline.md
// "Streaming", docs/denoise.md): the thresholds of every row are k·σ_j of
// the whole image, so the stream runs in two passes split at the denoise
// step. Pass 1 (demosaic and the band stages before denoise) stores the
// rows (stream_twopass.go) and measures the noise on them as on the whole
// image (denoise.NoiseMeter); pass 2 reads the stored rows through the
// shrinkage (denoise.Denoiser) and the band stages after it (lens,
// capture sharpening) into the fused pass, or, when the exposure anchor
// must measure the finished image, back into the stored rows for a third
// pass.

// denoiseBand is the denoise stage's band form (Stage.Band): idle for a
// file whose strength is 0 (its run, which records why); otherwise, at
// its turn, it records the strength, makes the stream two-pass with its
// split here, adds the meter as pass 1's last filter and the shrinkage as
// pass 2's first (thresholds set at the split, denoiseSplit).
func denoiseBand(j *job, s *stream) (bandPrepare, bool) {
	if denoiseIdle(j) {
		return idleBand(stageDenoise, denoiseIdle)(j, s)
	}
	return func(_ context.Context, s *stream) error {
		j := s.j
		iso := fileISO(FileInfo{Header: j.hdr}, j.info.ISO)
		st, why := denoiseStrength(j.settings, iso)
		j.denoiseUsed = DenoiseUsed{ISO: iso, Reason: Text(why)}
		if j.colors != 3 {
			j.denoiseUsed.Reason += Text(fmt.Sprintf("; not applied to a %d-channel image", j.colors))
			return nil
		}
		j.denoiseUsed.Strength = st
		// The rows are upright: the denoiser's grids laid as on the
		// sensor's image, which the whole-image path denoises (Turn).
		w, h := s.upright()
		turn := denoise.TurnOf(s.flip)
		m := denoise.NewNoiseMeter(w, h, turn)
		var d *denoise.Denoiser
		s.addFilter(0, func(_, y1 int, row func(y int) []float32) { m.Rows(y1, row) })
		if s.two == nil {
			s.two = &twoPass{anchor: -1}
		}
		s.two.split, s.two.splitStep = len(s.filters), s.cur
		s.two.atSplit = func() error {
			l, ok := m.Levels()
			if !ok {
				return fmt.Errorf("denoise: %d of %d rows measured", m.Next(), h)
			}
			n := l.Noise()
			d = denoise.NewDenoiser(w, h, st, l, turn)
			j.denoiseUsed.Sigma = n.LinearAt(0.18)
			j.denoiseUsed.Reason += Text(fmt.Sprintf("; σ %.4f at mid grey", j.denoiseUsed.Sigma))
			return nil
		}
		s.addFilter(denoise.StreamLookahead, func(_, y1 int, row func(y int) []float32) { d.Rows(y1, row) })
		return nil
	}, true
}

// denoiseStreamCost is denoiseCost's streamed form, for rows as long as
// the longer side of the step's image (streamBufferBytes' rule): from
// pass 2 to the encoder, the denoiser's rings (denoise.StreamScratchBytes)
// and its lookahead's rows of the window (12 bytes a pixel; pass 2 fills
// it in stored bands, fillRows).
func denoiseStreamCost(m memCtx) StepMemory {
	long := max(m.step.W, m.step.H)
	rows := (denoise.StreamLookahead + streamRows - 1) / streamRows * streamRows
	return StepMemory{Alloc: denoise.StreamScratchBytes(long) + 12*int64(rows)*int64(long)}
}

// denoiseMeterBytes is what a streamed denoise adds to pass 1 (the
// demosaic step's Scratch, streamCost): the noise meter's rings
// (denoise.MeterScratchBytes) for a file it applies to
// (denoisePredicted), 0 otherwise.
func denoiseMeterBytes(m memCtx) int64 {
	if !denoisePredicted(m.fi, m.s) {
		return 0
	}
	return denoise.MeterScratchBytes(max(m.step.W, m.step.H))
}

// denoisePredicted reports whether a file described by fi gets noise
// reduction with settings s, as far as its header's ISO tells (no header:
// it does): a streamed one then runs in two passes (twoPassPredicted).
func denoisePredicted(fi FileInfo, s Settings) bool {
	return denoiseCost(memCtx{fi: fi, s: s, step: Step{W: 1, H: 1}}) != StepMemory{}
}
