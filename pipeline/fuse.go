package pipeline

import (
	"context"
	"fmt"
	"time"
)

// rowKernel is a pointwise stage's work on pixels: it changes px, whole
// pixels of interleaved RGB float32 (a row or a run of rows), in place,
// each pixel from itself alone.
type rowKernel func(px []float32)

// fusePass is the state of one fused pass while its steps are prepared
// (Stage.Row): the kernels so far, in stage-list order.
type fusePass struct {
	// writes: the pass ends before quantise, so its result is written
	// back into the image it reads; otherwise quantise ends it and the
	// image is only read.
	writes  bool
	kernels []rowKernel
	// id is the pass's number in the plan (Step.Pass).
	id int
}

// apply runs the kernels in order on each row of px (rows of rowLen
// samples), one row at a time so that a row stays in cache through all of
// them.
func (p *fusePass) apply(px []float32, rowLen int) {
	for lo := 0; lo < len(px); lo += rowLen {
		row := px[lo:min(lo+rowLen, len(px))]
		for _, k := range p.kernels {
			k(row)
		}
	}
}

// fusable reports whether step st may join a fused pass: its stage has a
// kernel (Stage.Row) and does not refuse the settings (Stage.fuses).
func fusable(st Step, vs []Variant, s Settings) bool {
	if st.stage == nil || st.stage.Row == nil {
		return false
	}
	if st.stage.fuses == nil {
		return true
	}
	var v Variant
	if st.v >= 0 {
		v = vs[st.v]
	}
	return st.stage.fuses(s, v)
}

// markPasses groups the plan's steps into fused passes (Step.Pass): a
// maximal run of consecutive fusable steps of one image, ended by
// quantise. The run may go on from the shared steps into a variant's own
// steps when that variant is the only one left (a single full-size
// variant), since nothing else reads the shared image then. It also marks
// the steps of variants whose render is fused (Step.renderFused: their
// output-space step is in a pass) and those of the last full-size
// variant (Step.lastFull).
func (p *StagePlan) markPasses(vs []Variant, s Settings) {
	only := func(n int) bool { // no step from n on belongs to another variant
		for _, st := range p.Steps[n:] {
			if st.v >= 0 && st.v != p.Steps[n].v {
				return false
			}
		}
		return true
	}
	pass := 0
	for i := 0; i < len(p.Steps); {
		if !fusable(p.Steps[i], vs, s) {
			i++
			continue
		}
		pass++
		k := i
		for {
			p.Steps[k].Pass = pass
			next := k + 1
			if p.Steps[k].Stage == quantiseStage.Name || next == len(p.Steps) || !fusable(p.Steps[next], vs, s) {
				break
			}
			a, b := p.Steps[k], p.Steps[next]
			if a.v != b.v && !(a.Shared() && only(next)) {
				break
			}
			k = next
		}
		i = k + 1
	}
	fused := map[int]bool{}
	lastFull := -1
	for _, st := range p.Steps {
		if st.Stage == outputSpaceStage.Name && st.Pass > 0 {
			fused[st.v] = true
		}
		if st.v >= 0 && st.W == p.W && st.H == p.H && st.Stage != previewSourceStage.Name && !p.fromPreview(st.v) {
			lastFull = st.v
		}
	}
	for i := range p.Steps {
		st := &p.Steps[i]
		if st.v >= 0 {
			st.renderFused, st.lastFull = fused[st.v], st.v == lastFull
		}
	}
}

// floatFreed reports whether the variant's quantise (or, streamed, its
// encode) lets go of a full float image (12 bytes per pixel): unfused,
// unless a later variant of its rendition shares it; fused, its own
// resized image, or the shared image when it is the last full-size
// variant to read it.
func floatFreed(m memCtx) bool {
	if !m.step.renderFused {
		return !m.step.keep
	}
	return m.resized || m.step.lastFull
}

// streamedRows reports whether the step's variant hands its quantised
// rows to its encoder as they are made (no quantised image): TIFF16, and
// JPEG (its quantise always ends a fused pass, quantiseRow).
func streamedRows(m memCtx) bool {
	return m.v.Format == "tiff16" || m.v.Format == "jpeg"
}

// runPass runs the steps of one fused pass (consecutive steps with the
// same Step.Pass) on j: each step's stage prepares its step (Stage.Row:
// what its run would do beside the pixels) and hands over its kernel;
// then a pass that ends before quantise applies the kernels, row by row,
// in place, to the image they work on, and one ended by quantise leaves
// the work to quantise's kernel, which reads the image once through the
// orientation view and hands quantised rows to the encoder. A step whose
// stage refuses to fuse for j (Row's ok false, only ever the first step
// of a pass) runs alone by its run function, and the pass goes on with
// the next step. It returns a timing per step, named as the plan names
// it, with Pass set for the fused ones; an in-place pass's pixel work is
// in its last step's timing.
func (j *job) runPass(ctx context.Context, steps []Step, asked []*variantJob) ([]StageTiming, error) {
	return j.runPassWith(ctx, steps, asked, nil)
}

// runPassWith is runPass with the kernels prefix (of earlier steps,
// prepared already) before the pass's own: a streamed full-size variant's
// pass begins with the shared pass's kernels (runVariants).
func (j *job) runPassWith(ctx context.Context, steps []Step, asked []*variantJob, prefix []rowKernel) ([]StageTiming, error) {
	last := steps[len(steps)-1]
	p := &fusePass{writes: last.Stage != quantiseStage.Name, id: last.Pass, kernels: append([]rowKernel(nil), prefix...)}
	var tims []StageTiming
	for i, st := range steps {
		j.cur = nil
		if st.v >= 0 {
			j.cur = asked[st.v]
		}
		t0 := time.Now()
		k, ok := st.stage.Row(j, p)
		if !ok {
			if i > 0 {
				return tims, fmt.Errorf("stage %s cannot run inside its fused pass", st.Name)
			}
			err := st.stage.run(ctx, j)
			tims = append(tims, StageTiming{Stage: st.Name, Duration: time.Since(t0)})
			if err != nil {
				return tims, err
			}
			continue
		}
		if k != nil {
			p.kernels = append(p.kernels, k)
		}
		tims = append(tims, StageTiming{Stage: st.Name, Duration: time.Since(t0), Pass: st.Pass})
	}
	if p.writes && len(p.kernels) > 0 {
		t0 := time.Now()
		img := j.image()
		img.parallel(func(px []float32) { p.apply(px, 3*img.W) })
		tims[len(tims)-1].Duration += time.Since(t0)
	}
	return tims, nil
}

// movePassTime moves the time spent making the current variant's
// streamed rows (the fused pass, computed band by band beside the
// encoder) from the encode step's timing, the last of tims, to the timing
// of the pass's quantise step, so that encode is what the encoder took
// beyond it.
func (j *job) movePassTime(tims []StageTiming) {
	v := j.cur
	if v == nil || v.passTime == 0 || v.pass == 0 || len(tims) == 0 {
		return
	}
	for i := len(tims) - 2; i >= 0; i-- {
		if tims[i].Pass == v.pass {
			tims[i].Duration += v.passTime
			tims[len(tims)-1].Duration -= v.passTime
			break
		}
	}
	v.passTime = 0
}
