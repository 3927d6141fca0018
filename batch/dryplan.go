package batch

import (
	"fmt"
	"os"
	"strings"

	"github.com/rawbatch/rawbatch/pipeline"
)

// PlannedFile is what a dry run says of one task of a Plan (DryPlan).
type PlannedFile struct {
	Task Task
	// Status is StatusPlanned (would be converted), StatusSkipped (up to
	// date, still being written: Reason says why) or StatusFailed (would
	// fail: Kind and Reason say why), or another status Triage settled.
	Status Status
	// Kind is the failure's kind (FailureKind: "over-budget" for a file
	// over the whole budget); Reason the skip reason or the failure's
	// text.
	Kind, Reason string
	// Note is the table's note for the file's outputs to write: "" (would
	// be written), "streams" (would be written, its estimate that of a
	// conversion streamed in row bands, as its header predicts:
	// pipeline.Memory.Streamed), "would fail: ..." or "over budget".
	Note string
	// NeedBytes is what the conversion would take of the memory budget
	// at one thread (Runner.Need: its worker process and a kept stage
	// cache entry included); 0 when unknown (the header could not be
	// read, or the file needs no conversion).
	NeedBytes int64
	Outputs   []PlannedOutput
	// Stages is the stage plan of a file that would be converted (Status
	// StatusPlanned): pipeline.PlanVariants of its pending outputs'
	// variants at its decoded size, the steps its conversion would run;
	// nil for any other file.
	Stages *pipeline.StagePlan
	// err is the failure of a file that would fail (Status StatusFailed).
	err error
}

// PlannedOutput is one output of a PlannedFile.
type PlannedOutput struct {
	Path string
	// Pending: the output would be written (or would fail with its file);
	// otherwise it is up to date or its file needs no conversion.
	Pending bool
	// Width and Height are the planned size in pixels, when SizeKnown
	// (not for a file whose header could not be read).
	Width, Height int
	SizeKnown     bool
	// Status is the output's own: planned, skipped or failed.
	Status Status
	// Source is where a pending output would be made from, "raw" or
	// "preview" (pipeline.PlannedSource), "" when only the conversion can
	// tell; SourceReason why a source=auto output falls back to the raw.
	Source, SourceReason string
	// Note is the table's note of an output not written ("skip: up to
	// date", "skip: <reason>", "would fail: ..."); for a pending one, its
	// file's Note.
	Note string
}

// DryPlan is what a dry run of p by r would do, file by file, and the
// largest need (bytes, Runner.Need at one thread: the executor's overhead
// and a kept stage cache entry included) of a file that would run. A file
// is over budget exactly when Run's scheduler would refuse it. It reads
// what Triage and Inspect left in the tasks, and an output's existence for
// --no-recreate.
func (r *Runner) DryPlan(p *Plan) (files []PlannedFile, largest int64) {
	for _, t := range p.Tasks {
		outs := t.Outputs
		if len(outs) == 0 {
			outs = []Output{{Variant: r.Settings.OutputVariants()[0], Path: t.Output}}
		}
		var f PlannedFile
		if t.Done != nil {
			f = settledFile(t, outs)
		} else {
			f = r.plannedFile(t, outs)
		}
		if f.Status == StatusPlanned {
			largest = max(largest, f.NeedBytes)
		}
		files = append(files, f)
	}
	return files, largest
}

// settledFile is the PlannedFile of a task Triage settled (Task.Done):
// up to date, still being written, or failing before any conversion.
func settledFile(t Task, outs []Output) PlannedFile {
	f := PlannedFile{Task: t, Status: t.Done.Status, Reason: t.Done.Reason}
	note := "skip: " + t.Done.Reason
	if t.Done.Status == StatusFailed { // a file rawbatch did not write at an output path, ...
		note = "would fail: " + t.Done.Err.Error()
		f.Kind, f.Reason, f.err = FailureKind(t.Done.Err), t.Done.Err.Error(), t.Done.Err
	}
	for _, o := range outs {
		n := note
		if t.Done.Reason == reasonNoRecreate {
			if _, err := os.Lstat(o.Path); err == nil {
				n = "skip: up to date" // only the deleted ones are left deleted
			}
		}
		f.Outputs = append(f.Outputs, PlannedOutput{Path: o.Path, Status: t.Done.Status, Note: n})
	}
	return f
}

// plannedFile is the PlannedFile of a task to convert: planned, or
// failing (its header, or over the whole budget by Runner.Need), with its
// pending outputs' sizes.
func (r *Runner) plannedFile(t Task, outs []Output) PlannedFile {
	s := r.settingsOf(t)
	f := PlannedFile{Task: t, Status: StatusPlanned}
	pending := map[int]bool{}
	for i := range outs {
		pending[i] = t.Pending == nil
	}
	for _, i := range t.Pending {
		pending[i] = true
	}
	vs := pendingVariants(outs, pending)
	// The settings the conversion decodes with: at half size when the
	// half-size tier takes the file, as the estimate counts it.
	ds, _ := pipeline.WithHalfSizeTier(t.Info, s, vs)
	a := r.Need(t, 1)
	sources := make([]PlannedOutput, len(outs))
	if t.Err == nil {
		for i, o := range outs {
			if !pending[i] {
				continue
			}
			src, why, err := pipeline.PlannedSource(t.Info, o.Variant, ds)
			sources[i].Source, sources[i].SourceReason = src, why
			if err != nil && t.Err == nil {
				t.Err = fmt.Errorf("%s: %w", t.Input, err) // as the conversion fails it
			}
		}
	}
	copying, _ := r.stillCopying(t, t.Err) // as Run skips it
	switch {
	case copying != "":
		f.Note = "skip: " + copying
		f.Status, f.Reason = StatusSkipped, copying
	case t.Err != nil:
		f.Note = "would fail: " + t.Err.Error()
		f.Status, f.Kind, f.Reason, f.err = StatusFailed, FailureKind(t.Err), t.Err.Error(), t.Err
	case !a.Fits():
		f.err = fmt.Errorf("%s: %w", t.Input, a.Err()) // as Run fails it
		f.Note = "over budget"
		f.Status, f.Kind, f.Reason = StatusFailed, FailureKind(a.Err()), a.Err().Error()
	default:
		f.Stages = pendingStagePlan(t, vs, s)
		if t.Estimate.Streamed && !a.Whole {
			f.Note = "streams"
		}
	}
	if t.Err == nil {
		f.NeedBytes = a.Need
	}
	for i, o := range outs {
		if !pending[i] {
			f.Outputs = append(f.Outputs, PlannedOutput{Path: o.Path, Status: StatusSkipped, Note: "skip: up to date"})
			continue
		}
		po := PlannedOutput{Path: o.Path, Pending: true, Status: f.Status, Note: f.Note,
			Source: sources[i].Source, SourceReason: sources[i].SourceReason}
		if po.Status == StatusPlanned && po.Source != "" && o.Variant.Source != pipeline.SourceRaw {
			po.Note = strings.TrimPrefix(po.Note+"; from the "+po.Source, "; ")
			if po.SourceReason != "" {
				po.Note += " (" + po.SourceReason + ")"
			}
		}
		if t.Err == nil {
			po.Width, po.Height = o.Variant.Fit(pipeline.DecodedSize(t.Info, ds))
			po.SizeKnown = true
		}
		f.Outputs = append(f.Outputs, po)
	}
	return f
}

// Result is f as the result a dry run's report is made of: a settled
// file's outcome as Triage left it, a file that would fail as failed (with
// the error Run would fail it with), the rest StatusPlanned; NeedBytes is
// f's.
func (f PlannedFile) Result() FileResult {
	if f.Task.Done != nil {
		return *f.Task.Done
	}
	return FileResult{Task: f.Task, Status: f.Status, Err: f.err, NeedBytes: f.NeedBytes}
}
