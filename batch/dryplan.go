package batch

import (
	"fmt"
	"os"

	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/pipeline"
)

// PlannedFile is what a dry run says of one task of a Plan (DryPlan).
type PlannedFile struct {
	Task Task
	// Status is StatusPlanned (would be converted), StatusSkipped (up to
	// date, still being written: Reason says why) or StatusFailed (would
	// fail: Kind and Reason say why), or another status Triage settled.
	Status Status
	// Kind is the failure's kind (FailureKind, or "over-budget"); Reason
	// the skip reason or the failure's text.
	Kind, Reason string
	// Note is the table's note for the file's outputs to write: "" (would
	// be written), "streams" (would be written, its estimate that of a
	// conversion streamed in row bands, as its header predicts:
	// pipeline.Memory.Streamed), "would fail: ..." or "over budget".
	Note string
	// NeedBytes is the memory the conversion would take, worker process
	// included (WorkerBytes); 0 when unknown (the header could not be
	// read, or the file needs no conversion).
	NeedBytes int64
	Outputs   []PlannedOutput
	// Stages is the stage plan of a file that would be converted (Status
	// StatusPlanned): pipeline.PlanVariants of its pending outputs'
	// variants at its decoded size, the steps its conversion would run;
	// nil for any other file.
	Stages *pipeline.StagePlan
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
	// Note is the table's note of an output not written ("skip: up to
	// date", "skip: <reason>", "would fail: ..."); for a pending one, its
	// file's Note.
	Note string
}

// DryPlan is what a dry run of p with settings s and a memory budget of
// memBudget bytes would do, file by file, and the largest estimate (bytes,
// worker included) of a file that would run. It reads what Triage and
// Inspect left in the tasks, and an output's existence for --no-recreate.
func DryPlan(p *Plan, s pipeline.Settings, memBudget int64) (files []PlannedFile, largest int64) {
	for _, t := range p.Tasks {
		outs := t.Outputs
		if len(outs) == 0 {
			outs = []Output{{Variant: s.OutputVariants()[0], Path: t.Output}}
		}
		f := PlannedFile{Task: t, Status: StatusPlanned}
		if t.Done != nil {
			note := "skip: " + t.Done.Reason
			f.Status, f.Reason = t.Done.Status, t.Done.Reason
			if t.Done.Status == StatusFailed { // a file rawbatch did not write at an output path, ...
				note = "would fail: " + t.Done.Err.Error()
				f.Kind, f.Reason = FailureKind(t.Done.Err), t.Done.Err.Error()
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
			files = append(files, f)
			continue
		}
		pending := map[int]bool{}
		for i := range outs {
			pending[i] = t.Pending == nil
		}
		for _, i := range t.Pending {
			pending[i] = true
		}
		need := WorkerBytes(t.Estimate)
		switch {
		case t.Err != nil:
			f.Note = "would fail: " + t.Err.Error()
			f.Status, f.Kind, f.Reason = StatusFailed, FailureKind(t.Err), t.Err.Error()
		case need > memBudget:
			f.Note = "over budget"
			f.Status, f.Kind = StatusFailed, "over-budget"
			f.Reason = fmt.Sprintf("over budget: needs an estimated %s, the budget is %s",
				budget.FormatSize(need), budget.FormatSize(memBudget))
		default:
			largest = max(largest, need)
			f.Stages = pendingStagePlan(t, outs, pending, s)
			if t.Estimate.Streamed {
				f.Note = "streams"
			}
		}
		if t.Err == nil {
			f.NeedBytes = need
		}
		for i, o := range outs {
			if !pending[i] {
				f.Outputs = append(f.Outputs, PlannedOutput{Path: o.Path, Status: StatusSkipped, Note: "skip: up to date"})
				continue
			}
			po := PlannedOutput{Path: o.Path, Pending: true, Status: f.Status, Note: f.Note}
			if t.Err == nil {
				po.Width, po.Height = o.Variant.Fit(pipeline.DecodedSize(t.Info, s))
				po.SizeKnown = true
			}
			f.Outputs = append(f.Outputs, po)
		}
		files = append(files, f)
	}
	return files, largest
}
