package pipeline

import (
	"context"

	"github.com/rawbatch/rawbatch/pipeline/highlight"
	"github.com/rawbatch/rawbatch/pipeline/internal/par"
)

// highlightsStage is the highlight mode (--highlights) on the demosaiced,
// white-balanced camera RGB, where LibRaw (highlight mode 0) clipped every
// channel at 1: clip (neutral white, highlight.Clip) or reconstruct
// (colour from the unclipped neighbours, highlight.Reconstruct). Then the
// image goes to the stage cache (its key has the mode); a cached image has
// had it already. Images with other than 3 channels are left alone.
// Version 1: reconstruct fades in below the threshold and keeps the ratio
// of a pixel's unclipped channels (no isolated pixels at the threshold).
// Version 2: reconstruct's shoulder (the colour of a clipped area moves
// towards white with its scene peak estimated above the clip).
// Version 3: a pixel near the clip with at most one such neighbour (a hot
// photosite) is kept as clip keeps it.
var highlightsStage = Stage{Name: "highlights", Scope: PerFile, Kind: Spatial, Version: 3, Cost: highlightsCost, run: stageHighlights, Band: highlightsBand}

// highlightsBand is the stage's band form (Stage.Band): clip row by row
// (margin 0, in parallel), or reconstruct row by row
// (highlight.Reconstructor, margin its Lookahead: twice the radius, at
// most 64 rows). The stream never stores a cache entry (demosaicBand).
func highlightsBand(j *job, _ *stream) (bandPrepare, bool) {
	return func(_ context.Context, s *stream) error {
		w, h := s.upright()
		switch j.settings.highlights() {
		case HighlightsClip:
			s.addFilter(0, func(y0, y1 int, row func(y int) []float32) {
				par.Rows(y1-y0, func(lo, hi int) {
					for y := y0 + lo; y < y0+hi; y++ {
						highlight.Clip(row(y), w, 1, highlight.DefaultThreshold)
					}
				})
			})
		case HighlightsReconstruct:
			rc := highlight.NewReconstructor(w, h, highlight.DefaultThreshold)
			s.addFilter(rc.Lookahead(), func(_, y1 int, row func(y int) []float32) { rc.Rows(y1, row) })
		}
		return nil
	}, true
}

// highlightsCost: reconstruct's flags, box sums and two rows as the
// demosaic made them (highlight.ReconstructorBytes: about 16·(2r+5)·W
// bytes, r = highlight.ReconstructRadius); clip works in place.
func highlightsCost(m memCtx) StepMemory {
	if m.s.highlights() != HighlightsReconstruct {
		return noBuffers(m)
	}
	return StepMemory{Scratch: highlight.ReconstructorBytes(m.step.W, m.step.H)}
}

func stageHighlights(_ context.Context, j *job) error {
	if j.fromCache {
		return nil
	}
	if j.colors == 3 {
		switch j.settings.highlights() {
		case HighlightsClip:
			highlight.Clip(j.camera, j.img.W, j.img.H, highlight.DefaultThreshold)
		case HighlightsReconstruct:
			highlight.Reconstruct(j.camera, j.img.W, j.img.H, highlight.DefaultThreshold)
		}
	}
	return nil
}
