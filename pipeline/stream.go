package pipeline

import (
	"context"
	"errors"
	"fmt"
	"image"
	"time"

	"github.com/rawbatch/rawbatch/internal/fault"
	"github.com/rawbatch/rawbatch/pipeline/demosaic"
	"github.com/rawbatch/rawbatch/pipeline/highlight"
	"github.com/rawbatch/rawbatch/pipeline/internal/thp"
)

// The streamed conversion (docs/pipeline.md "Streaming"): a file with one
// full-size JPEG or TIFF16 output (or several variants:
// stream_variants.go) whose
// demosaic is our RCD and whose steps between demosaic and the fused pass
// can all run on row bands (Stage.Band) is never held as a full-size float
// image. The demosaic makes upright rows (crop and orientation applied as
// it places its tiles, demosaic.Bands) into a window of a few hundred rows;
// the band stages (highlights, capture sharpening) finish them in place as
// soon as the rows below them they need are there; the fused pass's
// kernels and quantise read the finished rows as the encoder asks for
// them. Only LibRaw's raw data (2 bytes a pixel, released as RCD passes
// it when the orientation keeps its row order) and the encoder's own
// buffers are full size.

// streamBand is how many rows the demosaic makes at a time in a streamed
// conversion: one row of RCD's tiles (tests try others).
var streamBand = demosaic.BandRows

// bandPrepare is a step's band form (Stage.Band): it runs at the step's
// turn in a streamed conversion instead of the stage's run, recording
// what run records, and adds the step's row work to the stream
// (stream.addFilter), touching no pixels.
type bandPrepare func(ctx context.Context, s *stream) error

// bandFilter is one band stage's row work: rows(y0, y1, row) finishes
// rows y0 to y1−1 in place (y0 the first row it has not finished; calls
// in order), reading rows up to lookahead below y1−1 (row(y) returns row
// y of the window).
type bandFilter struct {
	lookahead int
	rows      func(y0, y1 int, row func(y int) []float32)
	done      int
	step      int // the step's index in the stream's timings
	dur       time.Duration
}

// stream is the state of a streamed conversion.
type stream struct {
	j   *job
	ctx context.Context
	// cfa is the demosaic's input (set by the demosaic's Band), region
	// the part of it the output covers (the crop's Band; empty: all),
	// flip the orientation (LibRaw's flip code).
	cfa    demosaic.CFA
	region image.Rectangle
	flip   int
	src    *demosaic.Bands
	// w, h: the upright size of the output.
	w, h    int
	filters []*bandFilter
	// win holds rows as a ring of capRows rows (a multiple of
	// streamBand): row y at (y mod capRows)·3w; the demosaic has made
	// rows up to made−1, in srcDur (added to the first step's timing, the
	// demosaic's).
	win     []float32
	capRows int
	made    int
	srcDur  time.Duration
	// cur is the index of the step being prepared (for addFilter).
	cur int
	err error
	// two is set when the stream runs in two passes (stream_twopass.go:
	// the anchor measures the whole image).
	two *twoPass
	// shared, while a lead variant's pass of several variants runs
	// (variantPasses.runLead), holds the band of rows the full-size
	// variants' passes read, through the shared pass's kernels already.
	shared *sharedBand
}

// upright returns the output size of the stream's region for its flip.
func (s *stream) upright() (int, int) {
	r := s.region
	if r.Empty() {
		r = image.Rect(0, 0, s.cfa.W, s.cfa.H)
	}
	if s.flip&4 != 0 {
		return r.Dy(), r.Dx()
	}
	return r.Dx(), r.Dy()
}

// addFilter adds the current step's row work (bandFilter) after the
// filters added so far.
func (s *stream) addFilter(lookahead int, rows func(y0, y1 int, row func(y int) []float32)) {
	s.filters = append(s.filters, &bandFilter{lookahead: lookahead, rows: rows, step: s.cur})
}

// start makes the demosaic's bands and the window, once every step is
// prepared.
func (s *stream) start() error {
	b, err := demosaic.NewBands(s.cfa, s.region, s.flip)
	if err != nil {
		return fmt.Errorf("rcd: %w", err)
	}
	s.src, s.w, s.h = b, b.W, b.H
	s.makeWindow()
	return nil
}

// makeWindow makes the window of the running pass's filters (active).
func (s *stream) makeWindow() {
	la := 0
	for _, f := range s.active() {
		la += f.lookahead
	}
	// The rows held at most: a band the encoder asks for, the filters'
	// lookahead and the demosaic band made last, each band of the
	// demosaic in one piece of the ring.
	band := s.fillRows()
	need := streamRows + la + band
	s.capRows = (need + band - 1) / band * band
	s.win = thp.Floats(s.capRows * s.w * 3)
}

// row returns row y of the window.
func (s *stream) row(y int) []float32 {
	i := y % s.capRows * s.w * 3
	return s.win[i : i+s.w*3 : i+s.w*3]
}

// ensure makes rows y0 to y1−1 final (every band stage done with them), the
// rows above y0 being read no more. Errors are kept in s.err (the rows
// are then left as they are).
func (s *stream) ensure(y0, y1 int) {
	if s.two != nil && s.two.final {
		if !s.two.keep {
			s.two.release(y0) // the last pass of a two-pass stream: every row is stored
		}
		return
	}
	if s.err != nil {
		return
	}
	y1 = min(y1, s.h)
	for {
		avail := s.made
		for _, f := range s.active() {
			target := avail - f.lookahead
			if avail >= s.h {
				target = s.h
			}
			if target > f.done {
				t0 := time.Now()
				f.rows(f.done, target, s.row)
				f.dur += time.Since(t0)
				f.done = target
			}
			avail = f.done
		}
		if avail >= y1 {
			return
		}
		n0, n1 := s.made, min(s.h, s.made+s.fillRows())
		if n1-y0 > s.capRows {
			s.err = fmt.Errorf("stream: rows %d to %d do not fit %d rows from %d", n0, n1, s.capRows, y0)
			return
		}
		t0 := time.Now()
		i := n0 % s.capRows * s.w * 3
		err := s.fill(n0, n1, s.win[i:i+(n1-n0)*s.w*3])
		s.srcDur += time.Since(t0)
		if err != nil {
			if errors.Is(err, demosaic.ErrStopped) && s.ctx.Err() != nil {
				err = s.ctx.Err()
			}
			s.err = err
			return
		}
		s.made = n1
		if streamBandHook != nil {
			streamBandHook(n1)
		}
	}
}

// streamBandHook, when set (tests), is called with the rows made so far
// after each demosaic band of a streamed conversion.
var streamBandHook func(made int)

// render returns the fused pass's row function on the stream: upright row
// y of the final rows (or of the shared band, already through the shared
// pass's kernels, while a lead variant's pass runs), through the pass's
// kernels.
func (s *stream) render(kernels []rowKernel) func(y int, lin []float32) []float32 {
	return func(y int, lin []float32) []float32 {
		switch {
		case s.shared != nil:
			s.shared.read(y, lin)
		case s.two != nil && s.two.final:
			s.two.row16(y, lin)
		default:
			copy(lin, s.row(y))
		}
		for _, k := range kernels {
			k(lin)
		}
		return lin
	}
}

// streams reports whether the steps from n on (the demosaic step) stream
// for j: the plan marks them (Step.Stream), the file's steps between
// demosaic and the fused pass all can (Stage.Band), and with one variant
// the pass ends in quantise and is followed by the encode step only (m
// its quantise step), with several the rest is their passes
// (parseVariantTail, in tail). It returns the steps' band forms.
func (j *job) streams(plan StagePlan, n int, s *stream) (preps []bandPrepare, k, m int, tail *variantTail, ok bool) {
	steps := plan.Steps
	if !steps[n].Stream || j.unfused || j.wholeImage {
		return nil, 0, 0, nil, false
	}
	k = n
	for ; k < len(steps) && steps[k].Pass == 0 && steps[k].Shared(); k++ {
		st := steps[k]
		if st.stage.Band == nil {
			return nil, 0, 0, nil, false
		}
		p, ok := st.stage.Band(j, s)
		if !ok {
			return nil, 0, 0, nil, false
		}
		preps = append(preps, p)
	}
	if s.cfa.W < 2 || s.cfa.H < 2 {
		return nil, 0, 0, nil, false
	}
	if t, ok := parseVariantTail(steps, k); ok {
		return preps, k, 0, &t, true
	}
	if len(plan.Variants) > 1 {
		return nil, 0, 0, nil, false
	}
	m = k
	for m+1 < len(steps) && steps[m+1].Pass == steps[k].Pass && steps[k].Pass > 0 {
		m++
	}
	// The plan's size may be the header's guess (a rotated file's is
	// turned): the steps and their names do not depend on it.
	if k == len(steps) || steps[m].Stage != quantiseStage.Name || m+2 != len(steps) || steps[m+1].Stage != encodeStage.Name {
		return nil, 0, 0, nil, false
	}
	return preps, k, m, nil, true
}

// runStream runs the steps from n (the demosaic step) to the end as a
// streamed conversion when j streams (j.streams); handled false
// otherwise, with nothing done. The timings name every step; a band
// stage's is its preparation and its row work over all bands, the pass's
// quantise step the time spent making the encoder's bands beyond the
// band stages' and the demosaic's work.
func (j *job) runStream(ctx context.Context, plan StagePlan, n int, asked []*variantJob) (tims []StageTiming, handled bool, err error) {
	s := &stream{j: j, ctx: ctx, flip: j.info.Flip & 7}
	preps, k, m, tail, ok := j.streams(plan, n, s)
	if !ok {
		return nil, false, nil
	}
	j.stream = s
	defer func() { j.stream = nil }()
	steps := plan.Steps
	for i, p := range preps {
		j.cur = nil
		s.cur = len(tims)
		t0 := time.Now()
		err := p(ctx, s)
		tims = append(tims, StageTiming{Stage: steps[n+i].Name, Duration: time.Since(t0)})
		if err != nil {
			return tims, true, err
		}
	}
	var vp *variantPasses
	if tail != nil {
		// Several variants: pass 1 stores the rows every variant's pass
		// reads (stream_variants.go), driven by the lead variant's
		// encoder when there is one.
		if s.two == nil {
			s.two = &twoPass{}
		}
		s.two.keep = true
		vp = newVariantPasses(s, steps, *tail, asked)
		switch {
		case vp.stored:
			// runVariants makes them from the stored rows.
		case vp.lead >= 0:
			s.two.lead = func() ([][]uint16, error) { return vp.runLead(ctx, j) }
		case vp.smallOnly:
			s.two.lead = func() ([][]uint16, error) { return vp.runSmall(ctx, j) }
		}
	}
	if err := s.start(); err != nil {
		return tims, true, err
	}
	if s.two != nil {
		d, err := s.firstPass(ctx)
		tims[s.two.timing()].Duration += d
		if err != nil {
			return tims, true, err
		}
	}
	if tail != nil {
		vtims, err := j.runVariants(ctx, vp)
		tims = append(tims, vtims...)
		if err == nil && s.two.reread.Load() {
			err = fmt.Errorf("stream: a row was asked for after its band was let go")
		}
		if err != nil {
			return tims, true, err
		}
		// Pass 1's demosaic and band stages' work, in their steps.
		tims[0].Duration += s.srcDur
		for _, f := range s.filters {
			tims[f.step].Duration += f.dur
		}
		return tims, true, nil
	}
	tims, err = j.passAndEncode(ctx, s, steps, k, m, asked, tims)
	if err != nil {
		return tims, true, err
	}
	// The demosaic and band stages' work, moved out of the pass's time.
	work := s.srcDur
	tims[0].Duration += s.srcDur
	for _, f := range s.filters {
		tims[f.step].Duration += f.dur
		work += f.dur
	}
	if s.two != nil {
		work -= s.two.pre // done before the pass
	}
	for i := range tims {
		if tims[i].Stage == steps[m].Name {
			tims[i].Duration = max(0, tims[i].Duration-work)
		}
	}
	// The LibRaw handle and its raw data are no longer needed (a
	// two-pass stream let them go after its first pass).
	if s.two == nil {
		j.h.Close()
		j.h = nil
		j.decoded = true
		fault.At(fault.Decoded, j.in)
	}
	return tims, true, nil
}

// markStream marks the plan's steps from demosaic on that may stream
// (Step.Stream): RCD asked for, every shared step between demosaic and
// the fused passes with a band form, and either a single full-size
// variant written as its rows are made (JPEG, TIFF16) whose pass ends in
// quantise right before the last step, encode, or several variants (or
// one downscaled variant, of any format) whose steps after the band
// stages are fused passes and encodes (multiStreamable: full-size ones
// written row by row, downscaled ones not enlarged). Whether the file streams is decided when it is decoded
// (job.streams).
func (p *StagePlan) markStream(vs []Variant, s Settings) {
	// --wb auto: LibRaw's grey world, which only its own processing
	// computes (errLibRawWB): the file is demosaiced by LibRaw, whole.
	if len(vs) == 0 || !ownDemosaic(s) || s.WhiteBalance.Mode == "auto" {
		return
	}
	// An HDR variant has its own full-size rendition (PlanVariants): the
	// file is converted whole.
	for _, v := range vs {
		if v.hdrRendition() {
			return
		}
	}
	n := -1
	for i, st := range p.Steps {
		if st.Stage == demosaicStage.Name {
			n = i
		}
	}
	if n < 0 || len(p.Steps) < 2 || p.Steps[len(p.Steps)-1].Stage != encodeStage.Name || p.Steps[len(p.Steps)-2].Stage != quantiseStage.Name {
		return
	}
	k := n
	for ; k < len(p.Steps) && p.Steps[k].Pass == 0 && p.Steps[k].Shared(); k++ {
		if p.Steps[k].stage.Band == nil {
			return
		}
	}
	if p.multiStreamable(vs, k) {
		for i := n; i < len(p.Steps); i++ {
			p.Steps[i].Stream = true
		}
		return
	}
	if len(vs) > 1 || !streamedRows(memCtx{v: vs[0]}) {
		return
	}
	last := len(p.Steps) - 2
	if k > last || p.Steps[k].Pass == 0 {
		return
	}
	for i := k; i <= last; i++ {
		if p.Steps[i].Pass != p.Steps[k].Pass || p.Steps[i].W != p.W || p.Steps[i].H != p.H {
			return
		}
	}
	for i := n; i < len(p.Steps); i++ {
		p.Steps[i].Stream = true
	}
}

// streamPredicted reports whether a file described by fi streams with
// settings s when its plan says it may (Step.Stream), as far as its header
// tells: a Bayer CFA (not a Fujifilm mosaic, maybe X-Trans), no OpcodeList3, no lens named
// for lensfun or one that is no fisheye (lensStreamPredicted). The estimate of a file that streams counts its buffers
// (streamCost), of one that does not its whole image.
func streamPredicted(fi FileInfo, s Settings) bool {
	hd := fi.Header
	if !fi.CFA || maybeXTrans(fi) || hd == nil {
		return false
	}
	if opcodesActive(s) && hd.OpcodeLists != nil && hd.OpcodeLists.Length[2] > 0 {
		return false
	}
	return lensStreamPredicted(hd, s)
}

// streamCost is the demosaic step's memory in a streamed conversion:
// every goroutine's tile planes while it runs (demosaic.TileBytes), and
// the stream's buffers (streamBufferBytes), held until the encode step
// ends, and while pass 1 runs a denoise's noise meter
// (denoiseMeterBytes); the raw data stays (released as RCD passes it only when the
// orientation keeps its row order), and no image is made.
func streamCost(m memCtx) StepMemory {
	sm := StepMemory{Scratch: demosaic.TileBytes * int64(max(1, m.threads)), Alloc: streamBufferBytes(m)}
	if lead := leadEncoderBytes(m); lead > 0 {
		// Several variants with a lead (stream_variants.go): no camera
		// row stored, the other full-size variants' quantised bands and
		// the downscaled ones' images made in pass 1, beside the lead's
		// encoder; the raw data and the window let go after it.
		sm.Alloc += passOneBytes(m)
		sm.Scratch += lead
		sm.Free = rawDataBytes(m.fi) + streamBufferBytes(m)
	} else if smallOnlyPredicted(m, m.step.W, m.step.H) {
		// Every variant downscaled (variantPasses.smallOnly): their
		// images made in pass 1 from the window's rows, no row stored.
		sm.Alloc += passOneBytes(m)
		sm.Free = rawDataBytes(m.fi) + streamBufferBytes(m)
	} else if twoPassPredicted(m.fi, m.s) || len(m.s.OutputVariants()) > 1 || downscaledOnly(m.s, m.step.W, m.step.H) {
		// The two-pass stream's stored rows (6 bytes a pixel), which
		// several variants' passes all read; the raw data let go after
		// the first pass, and a single variant's rows as they are
		// encoded (twoPass.release).
		stored := stored16Bytes(m.step.W, m.step.H)
		sm.Alloc += stored
		sm.Free = rawDataBytes(m.fi) + storedReleased(stored, m)
	}
	sm.Scratch += denoiseMeterBytes(m)
	return sm
}

// downscaledOnly reports whether every variant of settings s is smaller
// than the decoded image of w×h pixels (a streamed conversion of them
// makes only their own images: variantPasses.smallOnly, or from stored
// rows when something measures the rows first).
func downscaledOnly(s Settings, w, h int) bool {
	for _, v := range s.OutputVariants() {
		if dw, dh := v.Fit(w, h); dw == w && dh == h {
			return false
		}
	}
	return true
}

// smallOnlyPredicted reports whether a streamed conversion of a w×h
// image with m's settings feeds its variants' downscalers in pass 1 with
// no row stored (variantPasses.smallOnly): every variant downscaled and
// nothing measuring the rows first. (A kept stage cache stores the rows
// as its entry: the runner's admission counts that entry on its own.)
func smallOnlyPredicted(m memCtx, w, h int) bool {
	return downscaledOnly(m.s, w, h) && !twoPassPredicted(m.fi, m.s)
}

// passOneBytes is what pass 1 of a streamed conversion with several
// variants and a lead makes for the others: each other full-size
// variant's quantised bands (3 bytes a pixel for a JPEG, 6 for a
// TIFF16; the lead is a TIFF16 when there is one) and each downscaled
// variant's image (12 bytes a pixel of its size).
func passOneBytes(m memCtx) int64 {
	var n, leadQ int64
	for _, v := range m.s.OutputVariants() {
		w, h := v.Fit(m.step.W, m.step.H)
		if w != m.step.W || h != m.step.H {
			n += 12 * int64(w) * int64(h)
			continue
		}
		q := int64(3)
		if bits16(v.Format) {
			q = 6
		}
		n += q * m.px()
		leadQ = max(leadQ, q)
	}
	return n - leadQ*m.px()
}

// leadEncoderBytes is the encoder's memory of the full-size variant
// written in pass 1 of a streamed conversion with several variants when
// nothing measures the stored rows first (variantPasses.lead), held
// beside the raw data and the other variants' rows while pass 1 runs:
// the largest of the full-size TIFF16 variants' (encoderCost), else of
// the JPEG ones' (variantPasses.lead); 0 otherwise.
func leadEncoderBytes(m memCtx) int64 {
	vs := m.s.OutputVariants()
	if len(vs) < 2 || twoPassPredicted(m.fi, m.s) {
		return 0
	}
	var lead int64
	for _, f := range []string{"tiff16", "jpeg"} {
		for _, v := range vs {
			if w, h := v.Fit(m.step.W, m.step.H); w != m.step.W || h != m.step.H || v.Format != f {
				continue
			}
			_, e, fixed := encoderCost(v, m.step.W, m.step.H)
			lead = max(lead, int64(e*float64(m.px()))+fixed)
		}
		if lead > 0 {
			return lead
		}
	}
	return 0
}

// streamBufferBytes is what a streamed conversion holds from its demosaic
// to its encode, for rows as long as the longer side L of the step's
// image (the orientation is the file's): the window of rows (see
// stream.start: the encoder's band, the band stages' lookahead and a
// demosaic band, rounded up to whole demosaic bands; 12 bytes a pixel),
// reconstruct's box sums (highlight.ReconstructorBytes for rows of L
// pixels), the sharpener's luminance (a demosaic band and 4
// radii of rows, 4 bytes a pixel), the lens's rows and tables
// (lensStreamRows, lensStreamBytes).
func streamBufferBytes(m memCtx) int64 {
	w, h := m.step.W, m.step.H
	long := int64(max(w, h))
	la, box := 0, int64(0)
	if m.s.highlights() == HighlightsReconstruct {
		r := highlight.ReconstructRadius(w, h)
		la += 2 * r
		box = highlight.ReconstructorBytes(int(long), int(long))
	}
	var lum int64
	if m.s.captureSharpenActive() {
		la += 3
		lum = 4 * int64(streamBand+12) * long
	}
	la += lensStreamRows(m.fi.Header, m.s, w, h)
	need := streamRows + la + streamBand
	rows := int64((need + streamBand - 1) / streamBand * streamBand)
	return 12*rows*long + box + lum + lensStreamBytes(m.fi.Header, m.s, w, h, m.threads)
}

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

// passAndEncode runs a stream's last pass: the fused steps k to m (ending
// in quantise, whose rows the encoder asks for) and the encode step m+1,
// appending their timings to tims. An error of the stream's rows (s.err),
// or a row asked for after its band was let go, fails it.
func (j *job) passAndEncode(ctx context.Context, s *stream, steps []Step, k, m int, asked []*variantJob, tims []StageTiming) ([]StageTiming, error) {
	ptims, err := j.runPass(ctx, steps[k:m+1], asked)
	tims = append(tims, ptims...)
	if err != nil {
		return tims, err
	}
	enc := steps[m+1]
	j.cur = asked[enc.v]
	t0 := time.Now()
	err = enc.stage.run(ctx, j)
	tims = append(tims, StageTiming{Stage: enc.Name, Duration: time.Since(t0)})
	j.movePassTime(tims)
	if err == nil {
		err = s.err
	}
	if err == nil && s.two != nil && s.two.reread.Load() {
		err = fmt.Errorf("stream: a row was asked for after its band was let go")
	}
	return tims, err
}
