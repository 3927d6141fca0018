package batch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/pipeline/header"
	"github.com/rawbatch/rawbatch/state"
)

// ErrOtherPhoto is wrapped by the failure of a file one of whose outputs
// holds the export of another photograph (per its record) that could not
// be moved to a free STEM-N name: rawbatch never replaces the export of
// one photograph by another's.
var ErrOtherPhoto = errors.New("holds the export of another photograph")

// photoID returns what tells one photograph from another, from its
// header: the capture time (wall time, as the camera wrote it) and the
// camera (header.CameraName: "Canon EOS 6D", not "Canon Canon EOS 6D");
// "" for what is unknown. The body serial number is not read by package
// header, so it is not used.
func photoID(h *header.Header) (capture, camera string) {
	if h == nil {
		return "", ""
	}
	if !h.EXIF.DateTime.IsZero() {
		capture = h.EXIF.DateTime.Format("2006:01:02 15:04:05.999999999")
	}
	return capture, header.CameraName(h.EXIF.Make, h.EXIF.Model)
}

// samePhoto reports whether rec was written from the photograph whose
// capture time and camera are given: a field unknown on either side does
// not tell them apart. An edit of a photograph keeps both.
func samePhoto(rec *state.Record, capture, camera string) bool {
	return photoDiff(rec, capture, camera) == ""
}

// photoDiff says how the photograph of rec differs from the one whose
// capture time and camera are given ("taken X; this one Y", or "camera X;
// this one Y"), "" when nothing known on both sides tells them apart.
func photoDiff(rec *state.Record, capture, camera string) string {
	if rec.CaptureTime != "" && capture != "" && rec.CaptureTime != capture {
		return fmt.Sprintf("taken %s; this one %s", rec.CaptureTime, capture)
	}
	if rec.Camera != "" && camera != "" && !sameCamera(rec.Camera, camera) {
		return fmt.Sprintf("camera %s; this one %s", cameraShown(rec.Camera), camera)
	}
	return ""
}

// cameraShown is a record's camera as header.CameraName names it: records
// written before kept "Make Model" ("Canon Canon EOS 6D").
func cameraShown(c string) string {
	make, model, ok := strings.Cut(c, " ")
	if !ok {
		return c
	}
	return header.CameraName(make, model)
}

// sameCamera compares two "Make Model" names leniently (case, and one
// containing the other: "Canon Canon EOS 30D" and "Canon EOS 30D"), so
// that a change in how a version of rawbatch reads the names does not make
// every photograph another one.
func sameCamera(a, b string) bool {
	a, b = strings.ToLower(a), strings.ToLower(b)
	return strings.Contains(a, b) || strings.Contains(b, a)
}

// otherPhotograph is the one place that decides whether writing t's
// output o would replace the export of another photograph: it returns the
// record of o and how the photographs differ when o's record (not a
// claim) was written from a photograph that is not t's input, whatever
// input path the record names:
//   - the record's input is t's input, unchanged (size and time): the same;
//   - the record's input is another file that still exists: nil here (two
//     inputs mapping to one output fail with state.OtherInputError);
//   - t's header is not read yet (Triage): nil, decided once it is;
//   - the capture time or camera differ: another photograph;
//   - the same path with nothing telling them apart: an edit, the same;
//   - another path (a moved or renamed card): the same photograph only when
//     both capture times are known (and equal), or the input's content is
//     the one recorded.
func (r *Runner) otherPhotograph(t Task, o Output) (*state.Record, string) {
	if r.State == nil {
		return nil, ""
	}
	rec, err := r.State.Load(o.Rel)
	if errors.Is(err, fs.ErrNotExist) {
		return unrecordedPhoto(t, o)
	}
	if err != nil || rec.Claim || rec.InputAbs == "" {
		return nil, ""
	}
	here := rec.InputAbs == t.absInput()
	if here {
		if st, err := os.Stat(t.Input); err != nil || (st.Size() == rec.InputSize && st.ModTime().Equal(rec.InputMTime)) {
			return nil, ""
		}
	} else if r.State.CheckOther(r.want(t, o)) != nil {
		return nil, ""
	}
	if t.Info.Header == nil {
		return nil, ""
	}
	capture, camera := photoID(t.Info.Header)
	if d := photoDiff(rec, capture, camera); d != "" {
		return rec, d
	}
	if here || (rec.CaptureTime != "" && capture != "") {
		return nil, ""
	}
	if h, _, _, err := state.HashFile(t.Input); err == nil && h == rec.InputHash {
		return nil, ""
	}
	return rec, "other content, and no capture time to compare"
}

// unrecordedPhoto is otherPhotograph for an output o without a record
// (exports copied without OUTDIR/.rawbatch, or it was deleted): a file
// rawbatch wrote (EXIF Software) holds another photograph's export when
// its own EXIF (DateTimeOriginal, Make and Model, which rawbatch copies)
// differs from t's input's. It returns a record made from that EXIF (no
// input) and how they differ; nil when the file is absent, not
// rawbatch's, the same photograph, or nothing tells them apart.
func unrecordedPhoto(t Task, o Output) (*state.Record, string) {
	if t.Info.Header == nil {
		return nil, ""
	}
	if fi, err := os.Lstat(o.Path); err != nil || !fi.Mode().IsRegular() || !pipeline.WrittenByRawbatch(o.Path) {
		return nil, ""
	}
	e, ok := header.OutputEXIF(o.Path)
	if !ok {
		return nil, ""
	}
	rec := &state.Record{Output: filepath.ToSlash(o.Rel)}
	rec.CaptureTime, rec.Camera = photoID(&header.Header{EXIF: e})
	capture, camera := photoID(t.Info.Header)
	if d := photoDiff(rec, capture, camera); d != "" {
		return rec, d
	}
	return nil, ""
}

// sameUnrecordedPhoto reports whether o, an existing file without a
// record, is provably an export of t's photograph by its own EXIF:
// written by rawbatch, the same capture time (known on both sides) and no
// other camera.
func sameUnrecordedPhoto(t Task, o Output) bool {
	if t.Info.Header == nil || !pipeline.WrittenByRawbatch(o.Path) {
		return false
	}
	e, ok := header.OutputEXIF(o.Path)
	if !ok {
		return false
	}
	rec := &state.Record{}
	rec.CaptureTime, rec.Camera = photoID(&header.Header{EXIF: e})
	capture, camera := photoID(t.Info.Header)
	return rec.CaptureTime != "" && capture != "" && photoDiff(rec, capture, camera) == ""
}

// recordedPath is the file rec describes, whose name may differ from o's
// in case (records are keyed case-folded).
func recordedPath(o Output, rec *state.Record) string {
	rel := filepath.FromSlash(rec.Output)
	if !strings.HasSuffix(o.Path, o.Rel) || rel == o.Rel {
		return o.Path
	}
	return strings.TrimSuffix(o.Path, o.Rel) + rel
}

// sameRecordedPhoto reports whether rec, a record at a candidate STEM-N
// name, is provably the export of t's photograph (so t may take the name:
// up to date there, or converted again in place): written from t's input
// path or from one that is gone, and the same capture time (known on both
// sides) and camera, or the same content.
func (r *Runner) sameRecordedPhoto(t Task, o Output, rec *state.Record) bool {
	if rec.InputAbs == "" {
		return false
	}
	if rec.InputAbs != t.absInput() && r.State.CheckOther(r.want(t, o)) != nil {
		return false
	}
	capture, camera := photoID(t.Info.Header)
	if photoDiff(rec, capture, camera) != "" {
		return false
	}
	if rec.CaptureTime != "" && capture != "" {
		return true
	}
	h, _, _, err := state.HashFile(t.Input)
	return err == nil && h == rec.InputHash
}

// newPhoto handles a different photograph at an output name used before
// (a card reformatted, numbering restarted: IMG_0001.CR2 is now another
// picture; or a new card whose IMG_0001.CR2 maps where an archived card's
// did): when an output of t holds another photograph's export
// (otherPhotograph), the old export is kept and t is moved to the first
// free stem STEM-N (IMG_0001-2.jpg, with every variant's suffix): free when
// no output there exists or has a record, or when all are records of this
// same photograph (the next run finds it up to date there). When the old
// export was deleted (none of those outputs exists any more), t takes the
// name, with a warning, even under --no-recreate: the deleted file was not
// this photograph's. planned returns the case-folded output paths
// (relative to OUTDIR) of the run's tasks, which are not free; it is
// called only when needed. It returns t unchanged when nothing applies, or
// when the input's header is not read yet.
func (r *Runner) newPhoto(t Task, planned func() map[string]bool) Task {
	if r.State == nil || t.Info.Header == nil || len(t.Outputs) == 0 {
		return t
	}
	var rec *state.Record
	var diff, old string
	exists, at := false, 0 // at: the index of the output that holds it
	for i, o := range t.Outputs {
		rc, d := r.otherPhotograph(t, o)
		if rc == nil {
			continue
		}
		if rec == nil {
			rec, diff, old = rc, d, o.Path
		}
		if exists {
			continue // the first that holds it is named
		}
		if _, err := os.Lstat(o.Path); err == nil {
			exists, old, at = true, o.Path, i
		} else if recorded := recordedPath(o, rc); recorded != o.Path {
			if _, err := os.Lstat(recorded); err == nil {
				exists, old, at = true, recorded, i // a name differing in case (one file on exFAT, SMB, macOS)
			}
		}
	}
	if rec == nil {
		return t
	}
	from := "from this path"
	switch {
	case rec.InputAbs == "":
		from = "by its EXIF, without a record"
	case rec.InputAbs != t.absInput():
		from = "from " + rec.Input
	}
	why := diff
	if rec.InputAbs == t.absInput() {
		why += ": a reformatted card?"
	}
	if !exists {
		t.otherGone = true
		t.newPhoto = fmt.Sprintf("%s, the export of another photograph %s (%s), was deleted; writing this one there", old, from, why)
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
				if !r.sameRecordedPhoto(t, o, rec) {
					return false
				}
				continue
			}
			if _, err := os.Lstat(o.Path); err == nil && !sameUnrecordedPhoto(t, o) {
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
		t.Outputs, t.Pending = outs, nil
		t.Stem = fmt.Sprintf("%s-%d", stem, n)
		t.Output, t.OutputRel = outs[0].Path, outs[0].Rel
		t.newPhoto = fmt.Sprintf("%s holds the export of another photograph %s (%s); keeping it and writing this one as %s",
			old, from, why, outs[at].Path) // the same variant's new file
		return t
	}
	return t
}

// Relocate moves each task whose outputs hold another photograph's export
// to a free name, or lets it take the name of one the user deleted
// (newPhoto), once its header is read (after Plan.Inspect), and decides
// again, for those and for the tasks Triage left to it, what their
// outputs need. Run calls it; call it before a dry run's listing.
func (r *Runner) Relocate(p *Plan) {
	if r.State == nil {
		return
	}
	var taken map[string]bool
	planned := func() map[string]bool { // built once, when first needed
		if taken == nil {
			taken = plannedOutputs(p)
		}
		return taken
	}
	r.swapNames(p)
	for i := range p.Tasks {
		t := &p.Tasks[i]
		if t.relocated || t.Err != nil || (t.Done != nil && !t.deferred) {
			continue
		}
		t.relocated = true
		nt := r.newPhoto(*t, planned)
		if nt.newPhoto == "" && !t.deferred {
			continue
		}
		*t = nt
		for _, o := range t.Outputs {
			planned()[strings.ToLower(filepath.ToSlash(o.Rel))] = true
		}
		t.Done, t.Pending, t.deferred = nil, nil, false
		fr, pending, done := r.preflight(*t, false)
		if done {
			t.Done = &fr
		} else {
			t.Pending, t.keptNote = pending, fr.Reason
		}
	}
}

// swapNames gives back to two colliding inputs of p the names whose
// records hold their photographs when the collision order gave each the
// other's (a card moved to a folder that sorts before the other card).
func (r *Runner) swapNames(p *Plan) {
	open := func(t Task) bool {
		return !t.relocated && t.Err == nil && (t.Done == nil || t.deferred) && t.Info.Header != nil && len(t.Outputs) > 0
	}
	for i := range p.Tasks {
		t := &p.Tasks[i]
		if !open(*t) {
			continue
		}
		rec, err := r.State.Load(t.Outputs[0].Rel)
		if err != nil || rec.Claim || r.sameRecordedPhoto(*t, t.Outputs[0], rec) {
			continue
		}
		for j := range p.Tasks {
			u := &p.Tasks[j]
			if j == i || !open(*u) || len(u.Outputs) != len(t.Outputs) || len(u.Paths) != len(t.Paths) {
				continue
			}
			urec, err := r.State.Load(u.Outputs[0].Rel)
			if err != nil || urec.Claim || !r.sameRecordedPhoto(*t, u.Outputs[0], urec) {
				continue
			}
			if rec.InputAbs != u.absInput() && !r.sameRecordedPhoto(*u, t.Outputs[0], rec) {
				continue
			}
			t.Outputs, u.Outputs = u.Outputs, t.Outputs
			t.Paths, u.Paths = u.Paths, t.Paths
			t.Stem, u.Stem = u.Stem, t.Stem
			t.Output, u.Output = u.Output, t.Output
			t.OutputRel, u.OutputRel = u.OutputRel, t.OutputRel
			t.Pending, u.Pending = nil, nil
			t.deferred, u.deferred = true, true // decided again by Relocate
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s and %s: the records show each one's photograph under the other's name; writing them as %s → %s, %s → %s",
				t.Input, u.Input, t.Input, t.Output, u.Input, u.Output))
			break
		}
	}
}

// mayBeOtherPhoto reports whether an output of t has a record written from
// another input, or from t's input when it was different (size or time),
// so that whether it is another photograph's export is decided once t's
// header is read (Relocate).
func (r *Runner) mayBeOtherPhoto(t Task) bool {
	if r.State == nil {
		return false
	}
	st, err := os.Stat(t.Input)
	if err != nil {
		return false
	}
	for _, o := range t.Outputs {
		rec, err := r.State.Load(o.Rel)
		if err != nil || rec.Claim || rec.InputAbs == "" {
			continue
		}
		if rec.InputAbs != t.absInput() || st.Size() != rec.InputSize || !st.ModTime().Equal(rec.InputMTime) {
			return true
		}
	}
	return false
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
