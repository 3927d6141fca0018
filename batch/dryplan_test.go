package batch

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/pipeline"
)

// TestDryPlan: what a dry run says of each file: the planned sizes and the
// estimate of a file that would run, "over budget" for one whose estimate
// (worker included) exceeds the budget, the failure of one whose header
// could not be read, and the up-to-date outputs of a file with pending
// ones skipped.
func TestDryPlan(t *testing.T) {
	s := pipeline.DefaultSettings()
	s.Variants = []pipeline.Variant{{Name: "main", Format: "jpeg"}, {Name: "t", Format: "webp", Size: 300}}
	fi := pipeline.FileInfo{Width: 600, Height: 400}
	outs := func(stem string) []Output {
		return []Output{{Variant: s.Variants[0], Path: stem + ".jpg"}, {Variant: s.Variants[1], Path: stem + "_t.webp"}}
	}
	p := &Plan{Tasks: []Task{
		{Input: "ok.dng", Output: "ok.jpg", Outputs: outs("ok"), Info: fi, Estimate: pipeline.Memory{Total: 10 << 20}, Pending: []int{1}},
		{Input: "big.dng", Output: "big.jpg", Outputs: outs("big"), Info: fi, Estimate: pipeline.Memory{Total: 1 << 30}},
		{Input: "bad.dng", Output: "bad.jpg", Outputs: outs("bad"), Err: errors.Join(errors.New("bad.dng: damaged"), rawerr.ErrCorrupt)},
	}}
	r := &Runner{Settings: s, Budget: 512 << 20, Exe: "rawbatch"} // in workers
	files, largest := r.DryPlan(p)
	if len(files) != 3 {
		t.Fatalf("%d files", len(files))
	}
	ok, big, bad := files[0], files[1], files[2]
	if ok.Status != StatusPlanned || ok.NeedBytes != WorkerBytes(p.Tasks[0].Estimate) || largest != ok.NeedBytes {
		t.Errorf("ok: %+v, largest %d", ok, largest)
	}
	if o := ok.Outputs[0]; o.Pending || o.Status != StatusSkipped || o.Note != "skip: up to date" {
		t.Errorf("ok's up-to-date output: %+v", o)
	}
	if o := ok.Outputs[1]; !o.Pending || !o.SizeKnown || o.Width != 300 || o.Height != 200 || o.Status != StatusPlanned {
		t.Errorf("ok's thumbnail: %+v, want 300x200 planned", o)
	}
	if big.Status != StatusFailed || big.Kind != "over-budget" || big.Note != "over budget" || !strings.Contains(big.Reason, "the budget is 512 MiB") {
		t.Errorf("big: %+v", big)
	}
	// Only a file that would be converted has a stage plan, of its
	// pending variants only; StagePlans counts each distinct plan once.
	if ok.Stages == nil || !slices.Equal(ok.Stages.Variants, []string{"t"}) || big.Stages != nil || bad.Stages != nil {
		t.Errorf("stage plans: ok %v, big %v, bad %v; want ok's of variant t only", ok.Stages, big.Stages, bad.Stages)
	}
	twice := []PlannedFile{ok, big, ok}
	groups, numbers := StagePlans(twice)
	if len(groups) != 1 || groups[0].Files != 2 || !slices.Equal(numbers, []int{1, 0, 1}) {
		t.Errorf("StagePlans: %d groups (%+v), numbers %v; want one of 2 files, numbers [1 0 1]", len(groups), groups, numbers)
	}
	if bad.Status != StatusFailed || bad.Kind != "corrupt" || bad.NeedBytes != 0 || !strings.HasPrefix(bad.Note, "would fail: bad.dng: damaged") || bad.Outputs[0].SizeKnown {
		t.Errorf("bad: %+v", bad)
	}
}
