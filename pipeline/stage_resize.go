package pipeline

import (
	"context"
	"slices"

	"github.com/rawbatch/rawbatch/pipeline/resize"
)

// resizeStage scales the demosaiced camera image to a variant's size; the
// planner runs it only for variants whose size is not the decoded size.
var resizeStage = Stage{Name: "resize", Scope: PerVariant, Kind: Spatial, Linear: true, Cost: resizeCost, run: stageResize}

// stageResize makes a resized variant's own image: the decoded camera-RGB
// image (j.camera, before the camera matrix) scaled to the variant's size
// (Variant.Fit) in linear light with resize.Downscale (Lanczos-3, after a
// box reduction when it shrinks by 4× or more, as Pillow's thumbnail
// does). The planner puts the variant's own camera-matrix, exposure and
// tone steps after it (PlanVariants).
func stageResize(_ context.Context, j *job) error {
	v := j.cur
	w, h := j.img.W, j.img.H
	dw, dh := v.spec.Variant.Fit(w, h)
	if dw == w && dh == h { // an HDR variant's own copy (PlanVariants)
		v.camera = slices.Clone(j.camera)
	} else {
		v.camera = resize.Downscale(j.camera, w, h, j.colors, dw, dh)
	}
	v.img = Image{W: dw, H: dh}
	v.owned = true
	return nil
}

// resizeCost: the resized image (12 bytes per pixel of the variant's
// size), and while it runs resize.Downscale's intermediates: the box
// reduction (when it shrinks by 2·resize.ReducingGap or more) and the
// horizontal pass of Lanczos-3, both 12 bytes per pixel of their size. An
// HDR variant of the decoded size is a copy (stageResize): no
// intermediate.
func resizeCost(m memCtx) StepMemory {
	if m.streamed {
		return resizeStreamCost(m)
	}
	// The source is the decoded image; its size is the plan's, which the
	// step does not carry: recompute it.
	w, h := DecodedSize(m.fi, m.s)
	dw, dh := m.step.W, m.step.H
	if dw == w && dh == h {
		return StepMemory{Alloc: 12 * m.px()}
	}
	kx := max(1, int(float64(w)/float64(dw)/resize.ReducingGap))
	ky := max(1, int(float64(h)/float64(dh)/resize.ReducingGap))
	var scratch int64
	rw, rh := w, h
	if kx > 1 || ky > 1 {
		rw, rh = (w+kx-1)/kx, (h+ky-1)/ky
		scratch += 12 * int64(rw) * int64(rh)
	}
	scratch += 12 * int64(dw) * int64(rh)
	return StepMemory{Scratch: scratch, Alloc: 12 * m.px()}
}

// resizeStreamCost is resizeCost in a streamed conversion with several
// variants or a downscaled one (stream_variants.go): with a lead
// (leadEncoderBytes) or no full-size variant (smallOnlyPredicted) the
// image was made in pass 1, and the step turns it; else (made in the pass
// over the stored rows, counted as if at this step: an upper bound) the
// resized image (12 bytes per pixel of the variant's size), a band of
// decoded stored rows (sharedBand: streamRows rows of the decoded width,
// 12 bytes a pixel), the downscaler's rows (resize.Rows: a reduced row's box sums,
// 24 bytes a pixel of the reduced width, and the resampled rows its
// vertical kernel reads, 6·ReducingGap + a band's, 12 bytes a pixel of
// the variant's width) and the upright image turned back to the sensor's
// orientation (12 bytes per pixel of the variant's size).
func resizeStreamCost(m memCtx) StepMemory {
	w, h := DecodedSize(m.fi, m.s)
	if leadEncoderBytes(m) > 0 || smallOnlyPredicted(m, w, h) {
		// Downscaled in pass 1 (the image is in the demosaic step's
		// passOneBytes): its copy turned to the sensor's orientation.
		return StepMemory{Scratch: 12 * m.px()}
	}
	long := int64(max(w, h))
	dlong := int64(max(m.step.W, m.step.H))
	rows := int64(6*resize.ReducingGap + streamRows + 2)
	scratch := 12*streamRows*long + 24*long + 12*rows*dlong + 12*m.px()
	return StepMemory{Scratch: scratch, Alloc: 12 * m.px()}
}
