package pipeline

import (
	"context"
	"image"
	"sync/atomic"
	"time"

	"github.com/rawbatch/rawbatch/internal/fault"
	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/internal/par"
	"github.com/rawbatch/rawbatch/pipeline/internal/thp"
	"github.com/rawbatch/rawbatch/pipeline/look"
)

// The two-pass streamed conversion (docs/pipeline.md "Streaming"): a file whose exposure anchor or --look camera fit measures
// the whole camera image (it has an embedded preview) streams too. Pass 1
// runs the streamed demosaic and band stages as a one-pass stream does,
// and stores each finished row, rounded to 16 bits, in one full-size
// image (look.Image16, 6 bytes a pixel, upright as the rows are made);
// LibRaw's raw data is then released, and the anchor's step runs on that
// image (look.Reduce16 and look.ReduceSub16 in its own orientation, the
// cells of the float image within the rounding). Pass 2 runs the fused
// pass from the stored rows, decoded band by band, to the encoder. A
// stream split at its denoise step (stream_denoise.go, twoPass.split)
// runs only the filters before the split in pass 1; pass 2 reads the
// stored rows into a window of its own through the filters from the split
// on, into the fused pass, or back into the stored rows when the anchor
// measures them, the fused pass then being a third pass.

// stream16Scale is the value of one code of the stored rows: the band
// stages' rows are in [0, 1] after highlights, capture sharpening's
// overshoot goes above 1, so the codes span [0, 2] (a step of 1/32767.5;
// the stage cache's k/65535 loses ΔE2000 ≤ 0.011, TestStageCache16Bit).
const stream16Scale = 2.0 / 65535

// split16Scale is the code of the rows stored by pass 1 of a stream split
// at its denoise step: the rows of highlights (and idle stages) are in
// [0, 1] there, and the denoise's square-root stabilisation magnifies
// their rounding near black, so the codes span [0, 1] (half the rounding).
const split16Scale = 1.0 / 65535

// twoPass is the state of a two-pass stream (stream.two).
type twoPass struct {
	// img holds the finished rows once pass 1 is done.
	img look.Image16
	// anchor is the index of the anchor step in the stream's timings;
	// run the anchor's run, deferred from its turn to the end of pass 1.
	anchor int
	run    func(ctx context.Context, j *job) error
	// pre is the demosaic and band stages' work done in pass 1.
	pre time.Duration
	// freed is how many bands of img pass 2 has let go (the encoder is
	// done with them), unreturned the bytes let go since memory was last
	// given back to the system; reread is set when a row of a band let go
	// was asked for (an error: rows are read in order).
	freed      int
	unreturned int64
	reread     atomic.Bool
	// split, when not 0, is the index of the first filter of pass 2 (the
	// filters before it run in pass 1), splitStep the index of its step
	// (the denoise's: stream_denoise.go) in the stream's timings, atSplit
	// what that step does once pass 1 is done (the thresholds from the
	// noise measured). second: pass 2 is running (the window is filled
	// from img); final: the fused pass reads img itself (the last pass).
	split, splitStep int
	atSplit          func() error
	second, final    bool
	// keep: a later pass reads the stored rows again (a streamed
	// conversion with several variants, runVariants, until its last
	// variant's pass): none is let go.
	keep bool
	// lead, when set, runs pass 1 as a variant's pass and encoder that
	// store the rows they read, and returns the stored bands (a streamed
	// conversion with several variants: variantPasses.runLead).
	lead func() ([][]uint16, error)
}

// timing is the index of the step whose timing gets the passes' time
// before the fused pass: the anchor's, else the split's.
func (t *twoPass) timing() int {
	if t.run != nil {
		return t.anchor
	}
	return t.splitStep
}

// active returns the filters of the running pass: all of them, unless the
// stream is split (twoPass.split): then pass 1's before the split, pass
// 2's from it.
func (s *stream) active() []*bandFilter {
	switch {
	case s.two == nil || s.two.split == 0:
		return s.filters
	case s.two.second:
		return s.filters[s.two.split:]
	}
	return s.filters[:s.two.split]
}

// fillRows is how many rows fill makes at a time: a demosaic band, or in
// pass 2 a stored band of the encoder's height (a smaller window).
func (s *stream) fillRows() int {
	if s.two != nil && s.two.second {
		return streamRows
	}
	return streamBand
}

// fill makes rows n0 to n1−1 of the running pass into dst: the
// demosaic's, or in pass 2 the stored rows, decoded (and, when no later
// pass reads them, the stored bands wholly read let go).
func (s *stream) fill(n0, n1 int, dst []float32) error {
	t := s.two
	if t == nil || !t.second {
		return s.src.Rows(n0, n1, dst)
	}
	if err := s.ctx.Err(); err != nil {
		return err // cancelled in pass 2 (the demosaic checks in pass 1)
	}
	n := 3 * s.w
	par.Rows(n1-n0, func(lo, hi int) {
		for y := n0 + lo; y < n0+hi; y++ {
			t.row16(y, dst[(y-n0)*n:(y-n0+1)*n])
		}
	})
	if t.run == nil && !t.keep && !s.j.cacheStores() {
		t.release(n1) // no later pass, and no cache entry, reads them
	}
	return nil
}

// anchorBand is the exposure anchor's band form: at its turn it runs
// the anchor's step when no usable preview was kept (it then measures
// nothing) or when the anchor measures the CFA data (anchorFromCFA: the
// grids reduced from the demosaic's input before the demosaic starts, a
// one-pass stream); else it makes the stream two-pass and runs once pass
// 1 has stored the image.
func anchorBand(j *job, s *stream) (bandPrepare, bool) {
	if anchorIdle(j) {
		return func(ctx context.Context, s *stream) error { return stageExposureAnchor(ctx, s.j) }, true
	}
	r := s.region
	if r.Empty() {
		r = image.Rect(0, 0, s.cfa.W, s.cfa.H)
	}
	if anchorFromCFA(j, r.Dx(), r.Dy()) {
		return func(ctx context.Context, s *stream) error {
			if err := s.j.reduceAnchorCFA(s.cfa, s.region); err != nil {
				return err
			}
			return stageExposureAnchor(ctx, s.j)
		}, true
	}
	return func(_ context.Context, s *stream) error {
		if s.two == nil {
			s.two = &twoPass{}
		}
		s.two.anchor, s.two.run = s.cur, stageExposureAnchor
		return nil
	}, true
}

// firstPass runs pass 1 of a two-pass stream: every row made and finished
// by pass 1's band stages, stored in s.two.img; then the window, the
// demosaic and the LibRaw handle (its raw data) are let go. A stream
// split at its denoise step (twoPass.split) then runs the split's step
// and makes the window of pass 2 (the stored rows through the filters
// from the split on): read by the fused pass when no anchor measures the
// image; else run here, writing its finished rows back into s.two.img.
// Last the deferred anchor runs on the image. With a lead (several
// variants, stream_variants.go) the lead's encoder drives pass 1 and no
// row is stored. It returns the passes' time
// before the fused pass (the anchor's or the split step's timing, with
// the storing of the rows).
func (s *stream) firstPass(ctx context.Context) (time.Duration, error) {
	t := s.two
	var store time.Duration
	scale := stream16Scale
	if t.split > 0 {
		scale = split16Scale
	}
	var bands [][]uint16
	var err error
	if t.lead != nil {
		bands, err = t.lead()
		t.lead = nil
	} else {
		bands, err = s.storeRows(ctx, nil, scale, &store)
	}
	if err != nil {
		return store, err
	}
	t.pre = s.srcDur
	for _, f := range s.active() {
		t.pre += f.dur
		f.rows = nil // its buffers (box sums, luminance) are done with
	}
	// The image the anchor measures is the region in sensor orientation
	// (as the whole-image path's j.camera), stored upright.
	rw, rh := s.w, s.h
	if s.flip&4 != 0 {
		rw, rh = rh, rw
	}
	t.img = look.Image16{W: rw, H: rh, Rows: bands, Band: streamRows, Scale: scale, Flip: s.flip}
	s.win, s.src, s.cfa.Pix = nil, nil, nil
	j := s.j
	if j.h != nil {
		j.h.Close()
		j.h = nil
	}
	j.decoded = true
	fault.At(fault.Decoded, j.in)
	if t.split > 0 {
		t0 := time.Now()
		err := t.atSplit()
		t.atSplit = nil // what it holds (the meter) is done with
		store += time.Since(t0)
		if err != nil {
			return store, err
		}
		// Pass 1's window and buffers given back before pass 2 makes
		// its own.
		s.j.giveBack()
		t.second, s.made = true, 0
		s.makeWindow()
		src1 := s.srcDur
		if t.run == nil && !t.keep && !j.cacheStores() {
			return store, nil // the fused pass reads pass 2's rows
		}
		// Written back at the codes of the finished rows (capture
		// sharpening overshoots 1), each row once pass 2 has read it.
		if _, err := s.storeRows(ctx, t.img.Rows, stream16Scale, &store); err != nil {
			return store, err
		}
		t.img.Scale = stream16Scale
		t.pre += s.srcDur - src1
		for _, f := range s.active() {
			t.pre += f.dur
			f.rows = nil
		}
		// Pass 2's window and rings are let go and given back before
		// the encoder's coefficients grow (as the stored rows are let go,
		// twoPass.release).
		s.win = nil
		s.j.giveBack()
	}
	t.final = true
	t0 := time.Now()
	if t.run != nil {
		err = t.run(ctx, j)
	}
	if err == nil {
		j.storeCache16(t.img) // stagecache.go: the finished rows are the stage cache's entry
	}
	return store + time.Since(t0), err
}

// storeRows makes every row of the running pass final and stores it, a
// band of streamRows rows at a time, into bands (nil: new ones; else the
// stored rows being read, each row written back once final) at codes of
// scale, adding the storing's time to store.
func (s *stream) storeRows(ctx context.Context, bands [][]uint16, scale float64, store *time.Duration) ([][]uint16, error) {
	w, h := s.w, s.h
	var slab []uint16 // new bands are cut from it (storeSlabRows)
	for k, y0 := 0, 0; y0 < h; k, y0 = k+1, y0+streamRows {
		y1 := min(h, y0+streamRows)
		s.ensure(y0, y1)
		if s.err != nil {
			return bands, s.err
		}
		if err := ctx.Err(); err != nil {
			return bands, err
		}
		t0 := time.Now()
		if k == len(bands) {
			n := int(stored16Bytes(w, y1-y0) / 2)
			if len(slab) < n {
				slab = thp.Uint16s(int(stored16Bytes(w, min(h-y0, storeSlabRows(w))) / 2))
			}
			bands, slab = append(bands, slab[:n:n]), slab[n:]
		}
		// Each row's values rounded to codes of scale, clamped to the
		// codes' range.
		band, inv := bands[k], float32(1/scale)
		par.Rows(y1-y0, func(lo, hi int) {
			for y := y0 + lo; y < y0+hi; y++ {
				colour.QuantiseLinear16(band[3*(y-y0)*w:3*(y-y0+1)*w], s.row(y), inv)
			}
		})
		*store += time.Since(t0)
	}
	return bands, nil
}

// storeSlabRows is how many rows of width w the stored bands are
// allocated for at a time: whole bands (streamRows) of at least 8 MiB,
// so that each allocation holds whole huge pages (thp; a 24 MP image's
// band of 64 rows is 2.3 MB). A slab is let go once its last band is
// (twoPass.release), a few bands after the first.
func storeSlabRows(w int) int {
	const slab = 8 << 20
	rows := int((slab + stored16Bytes(w, 1) - 1) / stored16Bytes(w, 1))
	return (rows + streamRows - 1) / streamRows * streamRows
}

// row16 decodes upright row y of the stored image into lin (zeros, and
// t.reread set, when its band was let go).
func (t *twoPass) row16(y int, lin []float32) {
	if storedRowHook != nil {
		storedRowHook(y)
	}
	if y/t.img.Band < t.freed {
		t.reread.Store(true)
		clear(lin)
		return
	}
	colour.DequantiseLinear16(lin, t.img.Row(y), float32(t.img.Scale))
}

// release lets go of the stored bands wholly above row y0 (pass 2 asks
// for rows in order, each band of the encoder's after the one before it
// is made: stream.ensure), and gives the memory back to the system
// (debug.FreeOSMemory) each time an eighth of the image has been let go,
// so that libjpeg's coefficients (C memory, growing as the rows are
// encoded) reuse the pages: the stored rows and the coefficients are
// never both resident in full.
func (t *twoPass) release(y0 int) {
	for ; t.freed < y0/t.img.Band; t.freed++ {
		t.unreturned += int64(2 * len(t.img.Rows[t.freed]))
		t.img.Rows[t.freed] = nil
		if twoPassReleaseHook != nil {
			twoPassReleaseHook(t.freed+1, len(t.img.Rows))
		}
	}
	if total := stored16Bytes(t.img.W, t.img.H); t.unreturned > 0 && t.unreturned >= total/8 {
		t.unreturned = 0
		giveBack(int64(t.img.W) * int64(t.img.H))
	}
}

// cameraImage16 is the stored camera image of a two-pass stream, when the
// anchor's step runs on one.
func (j *job) cameraImage16() (look.Image16, bool) {
	if j.stream == nil || j.stream.two == nil || j.stream.two.img.Rows == nil {
		return look.Image16{}, false
	}
	return j.stream.two.img, true
}

// reduceCamera is look.Reduce of the demosaiced camera image (j.camera,
// or a two-pass stream's stored rows: look.Reduce16), or the CFA data's
// cells when the anchor measures those (j.cfaGrid).
func (j *job) reduceCamera(gw, gh int, clip float32) (look.Image, []float32, error) {
	if g := j.cfaGrid; g != nil && g.GW == gw && g.GH == gh {
		img, frac := g.cells(clip > 0)
		return img, frac, nil
	}
	if m, ok := j.cameraImage16(); ok {
		return look.Reduce16(m, gw, gh, clip)
	}
	return look.Reduce(look.Image{W: j.img.W, H: j.img.H, Pix: j.camera}, gw, gh, clip)
}

// reduceCameraSub is look.ReduceSub of the demosaiced camera image, as
// reduceCamera.
func (j *job) reduceCameraSub(gw, gh, maxSub int) (look.SubGrid, error) {
	if g := j.cfaGrid; g != nil && g.GW == gw && g.GH == gh && g.Sub == look.SubCells(g.W, g.H, gw, gh, maxSub) {
		return g.subGrid()
	}
	if m, ok := j.cameraImage16(); ok {
		return look.ReduceSub16(m, gw, gh, maxSub)
	}
	return look.ReduceSub(look.Image{W: j.img.W, H: j.img.H, Pix: j.camera}, gw, gh, maxSub)
}

// twoPassPredicted reports whether a file described by fi that streams
// with settings s is expected to stream in two passes: the settings
// measure an embedded preview (the anchor, --look camera), its header
// does not say it has none (Header.NoPreview: only a DNG tells) and the
// anchor cannot measure the CFA data (anchorCFAPredicted), or it gets
// noise reduction (denoisePredicted: the stream is split at the denoise
// step).
func twoPassPredicted(fi FileInfo, s Settings) bool {
	return s.needsPreview() && (fi.Header == nil || !fi.Header.NoPreview) && !anchorCFAPredicted(fi, s) || denoisePredicted(fi, s)
}

// anchorCFAPredicted reports whether, as far as the header tells, the
// anchor of a streamed file measures its CFA data (anchorFromCFA): cells
// (the camera look's sub-cells) of at least minCFACell photosites (the
// grid taken as GridSize of the image). A streamed file has no
// OpcodeList3.
func anchorCFAPredicted(fi FileInfo, s Settings) bool {
	w, h := fi.Width, fi.Height
	if w <= 0 || h <= 0 {
		w, h = fi.RawWidth, fi.RawHeight
	}
	gw, gh := look.GridSize(max(w, h), min(w, h), look.GridWidth)
	if s.Look == LookCamera {
		sub := look.SubCells(max(w, h), min(w, h), gw, gh, look.MaxSub)
		gw, gh = sub*gw, sub*gh
	}
	if max(w, h) < minCFACell*gw || min(w, h) < minCFACell*gh {
		return false
	}
	return !anchorStoredRows
}

// twoPassReleaseHook, when set (tests), is called with the number of
// stored bands let go so far and of all bands, each time pass 2 lets one
// go.
var twoPassReleaseHook func(freed, bands int)

// storedRowHook, when set (tests), is called with y each time stored row
// y is decoded, from the goroutines that decode them.
var storedRowHook func(y int)

// storedReleased is how much of a two-pass stream's stored rows (stored
// bytes) the estimate lets go before its encoder: the stored rows are let
// go as the encoder's own buffer (libjpeg's coefficients, e bytes a pixel
// of the single variant at its own size, encoderCost) grows, and given
// back to the system an eighth of the image at a time, so that pass 2
// holds at most max(stored, coefficients) + stored/8; the encoder's step
// adds the coefficients. A downscaled variant's encoder is of its own
// small image: its pass 2 holds the stored rows until its downscaler has
// read them (variantPasses.runSmall), so next to nothing is let go before.
func storedReleased(stored int64, m memCtx) int64 {
	vs := m.s.OutputVariants()
	if len(vs) != 1 {
		return 0 // several variants: counted as held until the last ends (an upper bound)
	}
	w, h := vs[0].Fit(m.step.W, m.step.H)
	_, e, _ := encoderCost(vs[0], w, h)
	coef := int64(e * float64(w) * float64(h))
	return max(0, min(stored, coef)-stored/8)
}

// stored16Bytes is the size in bytes of a two-pass stream's stored rows
// for a w×h image: 3 codes of 2 bytes a pixel.
func stored16Bytes(w, h int) int64 { return 6 * int64(w) * int64(h) }
