package pipeline

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rawbatch/rawbatch/pipeline/internal/par"
	"github.com/rawbatch/rawbatch/pipeline/internal/thp"
	"github.com/rawbatch/rawbatch/pipeline/resize"
)

// A streamed conversion with several variants (docs/pipeline.md
// "Streaming"). One pass makes them all, driven by the encoder of the
// lead variant (variantPasses.lead, a full-size one): as each band of
// rows is final, it is copied once, fed to the downscaled variants'
// band-wise downscalers (resize.Rows: the whole-image path's Downscale,
// holding only its kernel's rows), put once through the shared pass's
// kernels (camera matrix, exposure, tone: sharedBand), and every
// full-size variant quantises it through its own kernels, the lead for
// its encoder, the others into bands kept for theirs. When nothing
// measures the camera rows before the variants' passes (no anchor on a
// preview, no denoise split, no stage cache entry to write) that pass is
// pass 1, and no row is stored. Else pass 1 stores the finished
// camera-RGB rows (upright, 16 bits: twoPass.img) as a two-pass stream
// does, and the lead's pass reads them, letting each band go once read.
// Without a full-size variant, the downscalers are fed in pass 1
// (variantPasses.smallOnly), or from the stored rows in one pass. A
// downscaled variant's image is turned back to the sensor's orientation,
// and its steps run on it as on the whole-image path.

// variantRun is one variant's steps after the band stages of a streamed
// conversion with several variants (indices into the plan's steps).
type variantRun struct {
	v int // the variant's index in the variants planned
	// resize is its resize step, -1 for a full-size variant; pass to
	// enc−1 its fused pass, ended by quantise (for a full-size variant it
	// may begin with the shared steps, when it is the only one after
	// them); enc its encode step.
	resize, pass, enc int
}

// variantTail is the steps of a streamed conversion with several
// variants after its band stages: the shared fused pass (camera matrix,
// exposure, tone) the full-size variants' passes begin with, shared[0]
// to shared[1]−1 (none when shared[1] is 0), and each variant's steps in
// the plan's order.
type variantTail struct {
	shared [2]int
	runs   []variantRun
}

// parseVariantTail splits the plan's steps from k (the first after the
// band stages) into a variantTail (several variants, or one downscaled
// variant): ok false when they are not a sequence
// of a downscaled variant's resize, fused pass and encode, a shared fused
// pass, and a full-size variant's fused pass and encode (a variant that
// sharpens has an unfused output-space step: no stream).
func parseVariantTail(steps []Step, k int) (t variantTail, ok bool) {
	full := false
	for i := k; i < len(steps); {
		r := variantRun{v: -1, resize: -1}
		if steps[i].Stage == resizeStage.Name && !steps[i].Shared() {
			r.resize = i
			i++
		}
		if i == len(steps) || steps[i].Pass == 0 {
			return t, false
		}
		r.pass = i
		for p := steps[i].Pass; i < len(steps) && steps[i].Pass == p; i++ {
			switch v := steps[i].v; {
			case v >= 0 && (r.v < 0 || r.v == v):
				r.v = v
			case v >= 0 || r.v >= 0:
				return t, false // two variants, or a shared step after a variant's
			}
		}
		if r.v < 0 {
			if r.resize >= 0 || t.shared[1] > 0 || full {
				return t, false
			}
			t.shared = [2]int{r.pass, i}
			continue
		}
		if r.resize >= 0 && steps[r.resize].v != r.v || steps[i-1].Stage != quantiseStage.Name ||
			i == len(steps) || steps[i].Stage != encodeStage.Name || steps[i].v != r.v {
			return t, false
		}
		full = full || r.resize < 0
		r.enc = i
		i++
		t.runs = append(t.runs, r)
	}
	return t, len(t.runs) > 1 || len(t.runs) == 1 && t.runs[0].resize >= 0
}

// multiStreamable reports whether the steps of plan p after its band
// stages (from k) may stream for the variants vs: a variantTail whose
// full-size variants are written row by row (JPEG, TIFF16) and whose
// downscaled ones are not enlarged on either side.
func (p *StagePlan) multiStreamable(vs []Variant, k int) bool {
	t, ok := parseVariantTail(p.Steps, k)
	if !ok {
		return false
	}
	for _, r := range t.runs {
		st := p.Steps[r.enc]
		if r.resize < 0 && (!streamedRows(memCtx{v: vs[r.v]}) || st.W != p.W || st.H != p.H) {
			return false
		}
		if r.resize >= 0 && (st.W > p.W || st.H > p.H) {
			return false
		}
	}
	return true
}

// variantPasses is the state of the variants' passes of a streamed
// conversion with several variants (runVariants).
type variantPasses struct {
	steps []Step
	tail  variantTail
	asked []*variantJob
	// shared holds the shared pass's kernels once prepared (sharedTims
	// their steps' timings).
	shared     []rowKernel
	sharedTims []StageTiming
	prepared   bool
	// lead is the index in tail.runs of the full-size variant whose
	// encoder drives the pass that makes every variant (-1: none),
	// leadTims its steps' timings; stored: that pass reads the rows
	// stored by pass 1 (it runs after it), else it is pass 1.
	lead     int
	leadTims []StageTiming
	stored   bool
	// In the lead's pass the other variants are made too, from the same
	// bands of float rows: a downscaled one's downscaler is fed the rows
	// (small, by index in tail.runs), a full-size one's quantised bands
	// are made and kept for its encoder (quant), its pass prepared before
	// the lead's (runTims its timings). band holds the rows through the
	// shared kernels, sharedDur the time they took.
	small     map[int]*smallSink
	band      *sharedBand
	sharedDur time.Duration
	quant     map[int]*quantSink
	runTims   map[int][]StageTiming
	// smallOnly: every variant is downscaled: one pass (pass 1, storing
	// no row, or the pass over the stored rows) feeds every band of rows
	// to their downscalers (runSmall).
	smallOnly bool
}

// smallSink is a downscaled variant's band-wise downscale of the upright
// rows (resize.Rows into img, udw×udh upright; dw×dh in the sensor's
// orientation), dur the time it took.
type smallSink struct {
	rs               *resize.Rows
	img              []float32
	udw, udh, dw, dh int
	dur              time.Duration
}

// newSmallSink returns the downscale of stream s's upright rows to
// variant v's size (Variant.Fit of the sensor-oriented size).
func newSmallSink(s *stream, v *variantJob) *smallSink {
	uw, uh := s.w, s.h
	sw, sh := uw, uh
	if s.flip&4 != 0 {
		sw, sh = uh, uw
	}
	k := &smallSink{}
	k.dw, k.dh = v.spec.Variant.Fit(sw, sh)
	k.udw, k.udh = k.dw, k.dh
	if s.flip&4 != 0 {
		k.udw, k.udh = k.dh, k.dw
	}
	k.img = thp.Floats(k.udw * k.udh * 3)
	rl := 3 * k.udw
	k.rs = resize.NewRows(uw, uh, 3, k.udw, k.udh, func(y int) []float32 { return k.img[y*rl : (y+1)*rl] })
	return k
}

// finish gives v its own camera image from the downscale (turned back
// to the sensor's orientation for its orientation step).
func (k *smallSink) finish(v *variantJob, flip int) error {
	if !k.rs.Done() {
		return fmt.Errorf("stream: the downscale to %d×%d did not get every row", k.dw, k.dh)
	}
	v.camera = unorient(k.img, k.udw, k.udh, flip)
	v.img = Image{W: k.dw, H: k.dh}
	v.owned = true
	k.img = nil
	return nil
}

// quantSink holds a full-size variant's quantised bands made in pass 1
// (fill: its quantiser's band maker, reading the window's rows) until its
// encoder takes them (take, each band let go once copied).
type quantSink struct {
	fill     func(y0 int, dst []byte)
	rowBytes int
	bands    [][]byte
}

// take is the variant's encoder's band maker once pass 1 is done.
func (q *quantSink) take(y0 int, dst []byte) {
	k := y0 / streamRows
	copy(dst, q.bands[k])
	q.bands[k] = nil
}

// newVariantPasses returns the passes' state of tail, choosing the lead:
// the first full-size TIFF16, else JPEG. A TIFF16 leads when there is
// one: its encoder holds little, and its quantised rows would be 6 bytes
// a pixel where a JPEG's are 3; a JPEG's coefficients (6 bytes a pixel
// at 4:4:4) then grow only after the lead's pass. The lead's pass is
// pass 1 unless something measures the stored rows first (an anchor on
// them, a denoise split) or the stage cache keeps them as its entry
// (job.cacheStores): then it reads them (variantPasses.stored).
func newVariantPasses(s *stream, steps []Step, tail variantTail, asked []*variantJob) *variantPasses {
	vp := &variantPasses{steps: steps, tail: tail, asked: asked, lead: -1, prepared: tail.shared[1] == 0}
	vp.stored = s.two.run != nil || s.two.split > 0 || s.j.cacheStores()
	for _, f := range []string{"tiff16", "jpeg"} {
		for i, r := range tail.runs {
			if r.resize < 0 && asked[r.v].spec.Variant.Format == f && vp.lead < 0 {
				vp.lead = i
			}
		}
	}
	vp.smallOnly = vp.lead < 0
	return vp
}

// sharedBand is a band of rows y0 to y1−1 of a stream (3·w float32 each,
// upright), made once for every variant of the lead's pass
// (variantPasses.runLead): copied from the window or decoded from the
// stored rows, fed to the downscalers, then put through the shared
// pass's kernels, which the full-size variants' passes then leave out.
type sharedBand struct {
	y0, y1, n int
	rows      []float32
	// missed is set when a row outside the band was asked for (an
	// error: the lead's and the kept variants' bands are the same).
	missed atomic.Bool
}

// read copies row y of the band into lin.
func (b *sharedBand) read(y int, lin []float32) {
	if y < b.y0 || y >= b.y1 {
		b.missed.Store(true)
		return
	}
	copy(lin, b.rows[(y-b.y0)*b.n:(y-b.y0+1)*b.n])
}

// fillBand makes the band of rows y0 to y1−1 of stream s: the window's
// final rows, or the stored rows decoded, fed to the downscalers (their
// time in theirs), then through the shared kernels (vp.sharedDur).
func (vp *variantPasses) fillBand(s *stream, y0, y1 int) {
	b := vp.band
	b.y0, b.y1 = y0, y1
	n := b.n
	rows := b.rows[:(y1-y0)*n]
	stored := s.two != nil && s.two.final
	par.Rows(y1-y0, func(lo, hi int) {
		for y := y0 + lo; y < y0+hi; y++ {
			dst := rows[(y-y0)*n : (y-y0+1)*n]
			if stored {
				s.two.row16(y, dst)
			} else {
				copy(dst, s.row(y))
			}
		}
	})
	for _, k := range vp.small {
		t0 := time.Now()
		k.rs.Push(rows)
		k.dur += time.Since(t0)
	}
	if len(vp.shared) == 0 {
		return
	}
	t0 := time.Now()
	par.Rows(y1-y0, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			for _, k := range vp.shared {
				k(rows[r*n : (r+1)*n])
			}
		}
	})
	vp.sharedDur += time.Since(t0)
}

// newBand gives vp a band of streamRows rows of stream s.
func (vp *variantPasses) newBand(s *stream) {
	vp.band = &sharedBand{n: 3 * s.w, rows: make([]float32, 3*streamRows*s.w)}
}

// runSmall is the pass of a stream whose variants are all downscaled
// (variantPasses.smallOnly): each band of rows, once final (pass 1's
// window, or the stored rows, each band let go once read), goes to every
// variant's band-wise downscaler, so the full-size image is never made
// (it returns no bands).
func (vp *variantPasses) runSmall(ctx context.Context, j *job) ([][]uint16, error) {
	s := j.stream
	vp.small = map[int]*smallSink{}
	for n, r := range vp.tail.runs {
		vp.small[n] = newSmallSink(s, vp.asked[r.v])
	}
	vp.newBand(s)
	defer func() { vp.band = nil }()
	for y0 := 0; y0 < s.h; y0 += streamRows {
		y1 := min(s.h, y0+streamRows)
		s.ensure(y0, y1)
		if s.err != nil {
			return nil, s.err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		vp.fillBand(s, y0, y1)
	}
	vp.releaseStored(s)
	for n, k := range vp.small {
		if err := k.finish(vp.asked[vp.tail.runs[n].v], s.flip); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// releaseStored lets go of the stored rows once the pass that reads them
// last has read every band.
func (vp *variantPasses) releaseStored(s *stream) {
	if vp.stored && !s.two.keep {
		s.two.release(len(s.two.img.Rows) * s.two.img.Band)
	}
}

// prepareShared prepares the shared pass's steps once (Stage.Row, on the
// shared image: no pixel touched), keeping their kernels.
func (vp *variantPasses) prepareShared(j *job) error {
	if vp.prepared {
		return nil
	}
	vp.prepared = true
	steps := vp.steps[vp.tail.shared[0]:vp.tail.shared[1]]
	p := &fusePass{writes: true, id: steps[0].Pass}
	for _, st := range steps {
		j.cur = nil
		t0 := time.Now()
		k, ok := st.stage.Row(j, p)
		if !ok {
			return fmt.Errorf("stage %s cannot run inside its streamed pass", st.Name)
		}
		if k != nil {
			vp.shared = append(vp.shared, k)
		}
		vp.sharedTims = append(vp.sharedTims, StageTiming{Stage: st.Name, Duration: time.Since(t0), Pass: st.Pass})
	}
	return nil
}

// runLead runs the lead variant's pass and encoder, which makes every
// variant (the package comment above): its encoder asks for its bands as
// a single variant's stream does, and before each is made the band of
// rows is made once (fillBand) for the downscalers (variantPasses.small),
// the other full-size variants' quantisers (quant) and the lead's. As
// pass 1 it stores no camera row (it returns no bands). The demosaic and
// band stages' work, and the other variants', are left out of the lead's
// pass timing (runStream puts the former in their own steps').
func (vp *variantPasses) runLead(ctx context.Context, j *job) ([][]uint16, error) {
	s := j.stream
	r := vp.tail.runs[vp.lead]
	v := vp.asked[r.v]
	if err := vp.prepareShared(j); err != nil {
		return nil, err
	}
	vp.small, vp.quant, vp.runTims = map[int]*smallSink{}, map[int]*quantSink{}, map[int][]StageTiming{}
	vp.newBand(s)
	s.shared = vp.band
	defer func() { vp.band, s.shared = nil, nil }()
	for n, o := range vp.tail.runs {
		if n == vp.lead {
			continue
		}
		if o.resize >= 0 {
			vp.small[n] = newSmallSink(s, vp.asked[o.v])
			continue
		}
		q, err := vp.keepQuantised(ctx, j, n, o)
		if err != nil {
			return nil, err
		}
		vp.quant[n] = q
	}
	work := func() time.Duration {
		d := s.srcDur
		for _, f := range s.filters {
			d += f.dur
		}
		return d
	}
	w0 := work()
	var side time.Duration
	tims, err := j.runPassWith(ctx, vp.steps[r.pass:r.enc], vp.asked, nil)
	vp.leadTims = tims
	if err != nil {
		return nil, err
	}
	ensure := v.prepare
	v.prepare = func(y0, y1 int) {
		ensure(y0, y1)
		if s.err != nil {
			return
		}
		t0 := time.Now()
		vp.fillBand(s, y0, y1)
		for _, q := range vp.quant {
			b := make([]byte, (y1-y0)*q.rowBytes)
			q.fill(y0, b)
			q.bands = append(q.bands, b)
		}
		if y1*8/s.h != y0*8/s.h {
			// The bands' garbage collected and given back an eighth
			// of the image at a time: with the kept bands the live
			// heap is large, and the collector would let it double.
			j.giveBack()
		}
		side += time.Since(t0)
	}
	enc := vp.steps[r.enc]
	j.cur = v
	t0 := time.Now()
	err = enc.stage.run(ctx, j)
	vp.leadTims = append(vp.leadTims, StageTiming{Stage: enc.Name, Duration: time.Since(t0)})
	j.movePassTime(vp.leadTims)
	v.prepare = nil
	if err == nil {
		err = s.err
	}
	if err == nil && vp.band.missed.Load() {
		err = fmt.Errorf("stream: a variant asked for a row outside the band being made")
	}
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	vp.releaseStored(s)
	for n, k := range vp.small {
		if err := k.finish(vp.asked[vp.tail.runs[n].v], s.flip); err != nil {
			return nil, err
		}
	}
	for _, q := range vp.quant {
		if len(q.bands) != (s.h+streamRows-1)/streamRows {
			return nil, fmt.Errorf("stream: the lead variant did not read every row")
		}
	}
	for i := range vp.leadTims {
		if vp.leadTims[i].Pass == v.pass && vp.leadTims[i].Stage == vp.steps[r.enc-1].Name {
			vp.leadTims[i].Duration = max(0, vp.leadTims[i].Duration-(work()-w0)-side)
		}
	}
	if n := len(vp.sharedTims); n > 0 {
		vp.sharedTims[n-1].Duration += vp.sharedDur
	}
	return nil, nil
}

// keepQuantised prepares run o's pass (the n-th of the tail, a full-size
// variant other than the lead) to quantise the lead's bands as they are
// made, kept until its encoder takes them.
func (vp *variantPasses) keepQuantised(ctx context.Context, j *job, n int, o variantRun) (*quantSink, error) {
	ov := vp.asked[o.v]
	tims, err := j.runPassWith(ctx, vp.steps[o.pass:o.enc], vp.asked, nil)
	vp.runTims[n] = tims
	if err != nil {
		return nil, err
	}
	q := &quantSink{}
	switch {
	case ov.rows8.Bands.Fill != nil:
		q.fill, q.rowBytes, ov.rows8.Bands.Fill = ov.rows8.Bands.Fill, 3*ov.upright.W, q.take
	case ov.rows.Bands.Fill != nil:
		q.fill, q.rowBytes, ov.rows.Bands.Fill = ov.rows.Bands.Fill, 6*ov.upright.W, q.take
	default:
		return nil, fmt.Errorf("stream: variant %s is not written row by row", ov.spec.Variant.Name)
	}
	ov.prepare = nil // the band is made before fill runs
	return q, nil
}

// runVariants finishes the variants of a streamed conversion with
// several variants once the pass that makes them all has run (pass 1, or
// here the pass over the stored rows: the package comment above), in the
// plan's order, and returns their timings, named as the plan names the
// steps: the shared pass's steps (their kernels prepared once, the time
// they took on the bands in the last) before the first full-size
// variant, the lead's at its place, each other full-size variant's pass
// (the time it took on the bands) and encode, each downscaled variant's
// resize (the band-wise downscale's time) and its steps on its own small
// image, as on the whole-image path.
func (j *job) runVariants(ctx context.Context, vp *variantPasses) (tims []StageTiming, err error) {
	s := j.stream
	defer func() { j.stream = s }()
	steps, tail, asked := vp.steps, vp.tail, vp.asked
	if vp.stored {
		// One pass over the stored rows makes every variant, letting
		// each band go once read.
		s.two.keep = false
		run := vp.runLead
		if vp.lead < 0 {
			run = vp.runSmall
		}
		if _, err := run(ctx, j); err != nil {
			return nil, err
		}
	}
	sharedDone := tail.shared[1] == 0
	for n, r := range tail.runs {
		first := r.pass
		if r.resize >= 0 {
			first = r.resize
		}
		if !sharedDone && tail.shared[0] < first {
			sharedDone = true
			if err := vp.prepareShared(j); err != nil {
				return tims, err
			}
			tims = append(tims, vp.sharedTims...)
		}
		if n == vp.lead {
			tims = append(tims, vp.leadTims...)
			continue
		}
		if err := ctx.Err(); err != nil {
			return tims, err
		}
		v := asked[r.v]
		if q := vp.quant[n]; q != nil {
			// Quantised in the pass: its pass's timing gets that time,
			// its encoder takes the bands.
			pt := vp.runTims[n]
			for i := range pt {
				if pt[i].Pass == v.pass && pt[i].Stage == steps[r.enc-1].Name {
					pt[i].Duration += v.passTime
				}
			}
			v.passTime = 0
			tims = append(tims, pt...)
			enc := steps[r.enc]
			j.cur = v
			t0 := time.Now()
			err := enc.stage.run(ctx, j)
			tims = append(tims, StageTiming{Stage: enc.Name, Duration: time.Since(t0)})
			vp.quant[n] = nil
			if err != nil {
				return tims, err
			}
			continue
		}
		k := vp.small[n]
		if k == nil {
			return tims, fmt.Errorf("stream: variant %s was not made in the pass", v.spec.Variant.Name)
		}
		tims = append(tims, StageTiming{Stage: steps[r.resize].Name, Duration: k.dur})
		// Its steps run on its own small image, as on the whole-image
		// path.
		j.stream = nil
		ptims, err := j.runPassWith(ctx, steps[r.pass:r.enc], asked, nil)
		tims = append(tims, ptims...)
		if err != nil {
			return tims, err
		}
		enc := steps[r.enc]
		j.cur = v
		t0 := time.Now()
		err = enc.stage.run(ctx, j)
		tims = append(tims, StageTiming{Stage: enc.Name, Duration: time.Since(t0)})
		j.movePassTime(tims)
		j.stream = s
		if err != nil {
			return tims, err
		}
		if n < len(tail.runs)-1 {
			releaseVariant()
		}
	}
	if !sharedDone {
		err = vp.prepareShared(j)
		tims = append(tims, vp.sharedTims...)
	}
	return tims, err
}

// unorient returns the image whose upright view for flip (NewOriented)
// is u (interleaved uw×uh×3 float32): u itself for flip 0, else a new
// image in the sensor's orientation (uh×uw when flip&4).
func unorient(u []float32, uw, uh, flip int) []float32 {
	flip &= 7
	if flip == 0 {
		return u
	}
	sw, sh := uw, uh
	if flip&4 != 0 {
		sw, sh = uh, uw
	}
	out := thp.Floats(len(u))
	par.Rows(uh, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			for c := range uw {
				sc, sr := sensorOf(flip, sw, sh, c, r)
				copy(out[(sr*sw+sc)*3:(sr*sw+sc)*3+3], u[(r*uw+c)*3:(r*uw+c)*3+3])
			}
		}
	})
	return out
}
