package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rawbatch/rawbatch/pipeline/header"
	"github.com/rawbatch/rawbatch/pipeline/state"
)

// photoID returns what tells one photograph from another, from its
// header: the capture time (wall time, as the camera wrote it) and the
// camera ("Make Model"); "" for what is unknown. The body serial number
// is not read by package header, so it is not used.
func photoID(h *header.Header) (capture, camera string) {
	if h == nil {
		return "", ""
	}
	if !h.EXIF.DateTime.IsZero() {
		capture = h.EXIF.DateTime.Format("2006:01:02 15:04:05.999999999")
	}
	camera = strings.TrimSpace(h.EXIF.Make + " " + h.EXIF.Model)
	return capture, camera
}

// samePhoto reports whether rec was written from the photograph whose
// capture time and camera are given: a field unknown on either side does
// not tell them apart. An edit of a photograph keeps both.
func samePhoto(rec *state.Record, capture, camera string) bool {
	if rec.CaptureTime != "" && capture != "" && rec.CaptureTime != capture {
		return false
	}
	if rec.Camera != "" && camera != "" && !sameCamera(rec.Camera, camera) {
		return false
	}
	return true
}

// sameCamera compares two "Make Model" names leniently (case, and one
// containing the other: "Canon Canon EOS 30D" and "Canon EOS 30D"), so
// that a change in how a version of rawbatch reads the names does not make
// every photograph another one.
func sameCamera(a, b string) bool {
	a, b = strings.ToLower(a), strings.ToLower(b)
	return strings.Contains(a, b) || strings.Contains(b, a)
}

// newPhoto handles a different photograph at an input path used before
// (a card reformatted, numbering restarted: IMG_0001.CR2 is now another
// picture): when the record of t's first output names this same input
// path, the input's size or time changed, and the capture time or camera
// differ, the old export is kept and t is moved to the first free stem
// STEM-N (IMG_0001-2.jpg, with every variant's suffix): free when no
// output there exists or has a record, or when all are records of this
// same photograph from this path (the next run finds it up to date there).
// planned returns the case-folded output paths (relative to OUTDIR) of the
// run's tasks, which are not free; it is called only when needed. It returns t unchanged when
// nothing applies, or when the input's header is not read yet.
func (r *Runner) newPhoto(t Task, planned func() map[string]bool) Task {
	if r.State == nil || t.Info.Header == nil || len(t.Outputs) == 0 {
		return t
	}
	rec, err := r.State.Load(t.Outputs[0].Rel)
	if err != nil || rec.InputAbs == "" || rec.InputAbs != t.absInput() {
		return t
	}
	if st, err := os.Stat(t.Input); err != nil || (st.Size() == rec.InputSize && st.ModTime().Equal(rec.InputMTime)) {
		return t
	}
	capture, camera := photoID(t.Info.Header)
	if samePhoto(rec, capture, camera) {
		return t
	}
	suffix0 := t.Outputs[0].Variant.Suffix()
	stem := strings.TrimSuffix(t.Outputs[0].Path, suffix0)
	relStem := strings.TrimSuffix(t.Outputs[0].Rel, suffix0)
	taken := planned()
	free := func(outs []Output) bool {
		for _, o := range outs {
			if taken[strings.ToLower(filepath.ToSlash(o.Rel))] {
				return false
			}
			rec, err := r.State.Load(o.Rel)
			if err == nil && rec.Claim {
				if rec.InputAbs != t.absInput() {
					return false
				}
				continue // this input's own claim, left by a killed run
			}
			if err == nil {
				if rec.InputAbs != t.absInput() || !samePhoto(rec, capture, camera) || rec.CaptureTime == "" && rec.Camera == "" {
					return false
				}
				continue
			}
			if _, err := os.Lstat(o.Path); err == nil {
				return false // a file without a record: not ours to take
			}
		}
		return true
	}
	for n := 2; n < 10000; n++ {
		outs := make([]Output, len(t.Outputs))
		for i, o := range t.Outputs {
			sfx := o.Variant.Suffix()
			outs[i] = Output{Variant: o.Variant, Path: fmt.Sprintf("%s-%d%s", stem, n, sfx), Rel: fmt.Sprintf("%s-%d%s", relStem, n, sfx)}
		}
		if !free(outs) {
			continue
		}
		old := t.Outputs[0].Path
		t.Outputs, t.Pending = outs, nil
		t.Stem = fmt.Sprintf("%s-%d", stem, n)
		t.Output, t.OutputRel = outs[0].Path, outs[0].Rel
		t.newPhoto = fmt.Sprintf("%s holds the export of another photograph from this path (taken %s; this one %s: a reformatted card?); keeping it and writing this one as %s",
			old, orUnknown(rec.CaptureTime), orUnknown(capture), outs[0].Path)
		return t
	}
	return t
}

func orUnknown(s string) string {
	if s == "" {
		return "at an unknown time"
	}
	return s
}

// plannedOutputs returns the case-folded output paths (relative to OUTDIR)
// of every task of p.
func plannedOutputs(p *Plan) map[string]bool {
	m := map[string]bool{}
	for _, t := range p.Tasks {
		for _, o := range t.Outputs {
			m[strings.ToLower(filepath.ToSlash(o.Rel))] = true
		}
	}
	return m
}
