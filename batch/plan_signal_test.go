package batch

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/rawbatch/rawbatch/internal/fault"
	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
	"github.com/rawbatch/rawbatch/state"
)

// A signal during the walk (its context cancelled by a hook at the third
// file planned) stops the walk there: the rest of the folder is not
// walked.
func TestPlanWalkStopsOnCancel(t *testing.T) {
	in := t.TempDir()
	for i := range 50 {
		touch(t, filepath.Join(in, fmt.Sprintf("IMG_%04d.dng", i)), []byte("x"))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var planned atomic.Int32
	old := fault.Hook
	fault.Hook = func(point, input string) {
		if point == fault.Planned && planned.Add(1) == 3 {
			cancel()
		}
	}
	defer func() { fault.Hook = old }()
	p, err := PlanBatchWith(PlanOptions{Ctx: ctx}, []string{in}, t.TempDir(), ".jpg")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Tasks) != 3 {
		t.Errorf("planned %d files after a cancel at the third, want 3", len(p.Tasks))
	}
}

// A signal while the headers are read (a hook at the first header read
// cancels the context) stops the reading: no other header is read, and
// the files not read are left unsettled, not failed.
func TestInspectStopsOnCancel(t *testing.T) {
	in := t.TempDir()
	var paths []string
	for i := range 20 {
		p := filepath.Join(in, fmt.Sprintf("IMG_%04d.dng", i))
		if err := synthdng.WriteFile(p, synthdng.Spec{Width: 48, Height: 32, BlackLevel: 512, WhiteLevel: 16383,
			Scene: func(x, y, c int) float64 { return 0.3 }}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	p, err := PlanBatch(paths, t.TempDir(), ".jpg")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.Ctx = ctx
	var reads atomic.Int32
	old := fault.Hook
	fault.Hook = func(point, input string) {
		if point == fault.Header && reads.Add(1) == 1 {
			cancel()
		}
	}
	defer func() { fault.Hook = old }()
	p.Inspect(pipeline.DefaultSettings(), 1, 1)
	if n := reads.Load(); n != 1 {
		t.Errorf("%d headers read after a cancel at the first, want 1", n)
	}
	for _, task := range p.Tasks[1:] {
		if task.Err != nil || task.Info.Width != 0 {
			t.Errorf("%s: read or failed after the cancel: %v %+v", task.Input, task.Err, task.Info)
		}
	}
}

// A signal before the records are read (the context cancelled) stops
// Triage: no file's records are read, every file is left unsettled.
func TestTriageStopsOnCancel(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	for i := range 20 {
		touch(t, filepath.Join(in, fmt.Sprintf("IMG_%04d.dng", i)), []byte("x"))
	}
	store, err := state.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanBatch([]string{in}, out, ".jpg")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p.Ctx = ctx
	r := &Runner{Settings: pipeline.DefaultSettings(), Jobs: 1, State: store, OutDir: out,
		SettingsHash: SettingsHash(pipeline.DefaultSettings()), Version: "test"}
	r.Triage(p)
	for _, task := range p.Tasks {
		if task.Done != nil || task.Pending != nil {
			t.Errorf("%s: triaged after the cancel (done %v, pending %v)", task.Input, task.Done, task.Pending)
		}
	}
}
