package pipeline

import (
	"context"
	"image"
)

// The band forms (Stage.Band) of the stages of other files that a
// streamed conversion passes through without pixels of their own: the
// crop (a region of the demosaic, no copy), and the opcode, denoise and
// lens steps when they have nothing to do for the file (then their run,
// which touches no pixel in that case, records why); the exposure
// anchor's is anchorBand (stream_twopass.go).
// They are set here, on the stage list, so that the streaming path is in
// one place while those stages' own files change in parallel work.
func init() {
	idle := map[string]func(*job) bool{
		opcodesStage.Name: opcodesIdle,
		denoiseStage.Name: denoiseIdle,
		lensStage.Name:    lensIdle,
	}
	for i := range Stages {
		st := &Stages[i]
		if f, ok := idle[st.Name]; ok {
			st.Band = idleBand(st, f)
		}
		if st.Name == cropStage.Name {
			st.Band = cropBand
		}
		if st.Name == anchorStage.Name {
			st.Band = anchorBand // stream_twopass.go
		}
	}
}

// idleBand is the band form of stage st that streams only when idle(j)
// says it has nothing to do for the file: its run, at its turn.
func idleBand(st *Stage, idle func(j *job) bool) func(*job, *stream) (bandPrepare, bool) {
	return func(j *job, _ *stream) (bandPrepare, bool) {
		if !idle(j) {
			return nil, false
		}
		return func(ctx context.Context, s *stream) error { return st.run(ctx, s.j) }, true
	}
}

// cropBand: the crop (stageCrop's decision) as the stream's region.
func cropBand(j *job, s *stream) (bandPrepare, bool) {
	if c, ok := scaledCrop(j.hdr, j.settings, s.cfa.W, s.cfa.H); ok {
		s.region = image.Rect(c.X, c.Y, c.X+c.W, c.Y+c.H)
	}
	return func(ctx context.Context, s *stream) error {
		return stageCrop(ctx, s.j) // j.camera nil: records the crop, moves no pixels
	}, true
}

// opcodesIdle: the file has no OpcodeList3 and no gain map deferred to it.
func opcodesIdle(j *job) bool {
	j.readOpcodes()
	return len(j.opcodes.lists[2]) == 0 && len(j.opcodes.deferred) == 0
}

// denoiseIdle: the noise reduction's strength for the file is 0.
func denoiseIdle(j *job) bool {
	st, _ := denoiseStrength(j.settings, fileISO(FileInfo{Header: j.hdr}, j.info.ISO))
	return st == 0
}

// lensIdle: the lens stage corrects nothing without looking lensfun up:
// the DNG's opcodes corrected the lens, or the file names no lens.
func lensIdle(j *job) bool {
	return j.lensByOpcodes || j.lensLookup().lens == ""
}

// anchorIdle: the exposure anchor and the camera look measure nothing: no
// usable embedded preview was kept.
func anchorIdle(j *job) bool { return j.preview == nil }
