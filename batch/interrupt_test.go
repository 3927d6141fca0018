package batch

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
	"github.com/rawbatch/rawbatch/state"
)

// TestInterruptKeepsUpToDate: a file up to date when the run was
// interrupted is reported as up to date, not as interrupted before it
// started. The interrupt comes as the first new file starts (Started),
// with one job: the second new file waits for the slot and is not
// started; the file up to date comes last.
func TestInterruptKeepsUpToDate(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	write := func(name string) {
		if err := synthdng.WriteFile(filepath.Join(in, name), synthdng.Spec{Width: 48, Height: 32, BlackLevel: 512, WhiteLevel: 16383,
			Scene: func(x, y, c int) float64 { return 0.3 }}); err != nil {
			t.Fatal(err)
		}
	}
	store, err := state.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	run := func(ctx context.Context, started func(Task)) map[string]FileResult {
		p, err := PlanBatch([]string{in}, out, ".jpg")
		if err != nil {
			t.Fatal(err)
		}
		r := &Runner{Settings: pipeline.DefaultSettings(), Jobs: 1, State: store, OutDir: out,
			SettingsHash: SettingsHash(pipeline.DefaultSettings()), Version: "test", Started: started}
		r.Triage(p)
		p.Inspect(pipeline.DefaultSettings(), 1, 1)
		got := map[string]FileResult{}
		for _, fr := range r.Run(ctx, p) {
			got[filepath.Base(fr.Input)] = fr
		}
		return got
	}
	write("c.dng")
	if fr := run(context.Background(), nil)["c.dng"]; fr.Status != StatusConverted {
		t.Fatalf("c.dng in the first run: %s %q %v", fr.Status, fr.Reason, fr.Err)
	}
	write("a.dng")
	write("b.dng")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := run(ctx, func(Task) { cancel() })
	if fr := got["b.dng"]; fr.Status != StatusSkipped || fr.Reason != ReasonNotStarted {
		t.Errorf("b.dng: %s %q, want skipped as not started", fr.Status, fr.Reason)
	}
	if fr := got["c.dng"]; fr.Status != StatusSkipped || fr.Reason != "up to date" {
		t.Errorf("c.dng, up to date: %s %q", fr.Status, fr.Reason)
	}
}
