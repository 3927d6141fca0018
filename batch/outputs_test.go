package batch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline"

	"github.com/rawbatch/rawbatch/lock"
	"github.com/rawbatch/rawbatch/state"
)

// A record that cannot be saved mid-run (the hook fails the save of the
// second run's re-conversion at another quality) fails the file with the reason; the earlier
// record is dropped, so the next run takes the new output for rawbatch's
// (not "changed since rawbatch wrote it") and converts it again.
func TestRecordNotSavedFailsTheFile(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	touch(t, filepath.Join(in, "a.dng"), mustRead(t, filepath.Join(testdata, "raw", "adobesdk_05_PGTM2_unsigned8.dng")))
	store, err := state.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	run := func(quality int) FileResult {
		p, err := PlanBatch([]string{in}, out, ".jpg")
		if err != nil {
			t.Fatal(err)
		}
		s := pipeline.DefaultSettings()
		s.Quality = quality
		r := &Runner{Settings: s, Jobs: 1, State: store, OutDir: out,
			SettingsHash: SettingsHash(s), Version: "test"}
		r.Triage(p)
		p.Inspect(s, 1, 1)
		return r.Run(context.Background(), p)[0]
	}
	if fr := run(90); fr.Status != StatusConverted {
		t.Fatalf("first run: %s %v", fr.Status, fr.Err)
	}
	testHookBeforeSave = func(*state.Record) error { return errors.New("read-only file system") }
	fr := run(80) // another quality: another output
	testHookBeforeSave = nil
	if fr.Status != StatusFailed || !errors.Is(fr.Err, ErrRecordNotSaved) || !strings.Contains(fr.Err.Error(), "read-only file system") {
		t.Fatalf("run with an unsavable record: %s %v", fr.Status, fr.Err)
	}
	if _, err := os.Stat(filepath.Join(out, "a.jpg")); err != nil {
		t.Fatalf("the output is not kept: %v", err)
	}
	if fr := run(80); fr.Status != StatusConverted {
		t.Fatalf("next run: %s %v, want converted", fr.Status, fr.Err)
	}
	if fr := run(80); fr.Status != StatusSkipped || fr.Reason != "up to date" {
		t.Fatalf("run after: %s %q %v", fr.Status, fr.Reason, fr.Err)
	}
}

// A run killed after renaming its output into place but before saving its
// record leaves the claim it saved under the locks before converting
// (simulated here: the record replaced by that claim). Another input with
// the same output name does not take the output for its own although its
// EXIF says rawbatch: it fails, and the picture stays byte for byte; the
// claiming input itself converts it again.
func TestClaimOfKilledRunProtectsItsOutput(t *testing.T) {
	root, out := t.TempDir(), t.TempDir()
	c1, c2 := filepath.Join(root, "c1"), filepath.Join(root, "c2")
	touch(t, filepath.Join(c1, "x.dng"), mustRead(t, filepath.Join(testdata, "raw", "adobesdk_05_PGTM2_unsigned8.dng")))
	touch(t, filepath.Join(c2, "x.dng"), mustRead(t, filepath.Join(testdata, "raw", "adobesdk_07_PGTM2_float16.dng")))
	store, err := state.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	locks, err := lock.Open(filepath.Join(out, ".rawbatch", "locks"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(dir string) FileResult {
		p, err := PlanBatch([]string{dir}, out, ".jpg")
		if err != nil {
			t.Fatal(err)
		}
		r := &Runner{Settings: pipeline.DefaultSettings(), Jobs: 1, State: store, Locks: locks.Locker(), OutDir: out,
			SettingsHash: SettingsHash(pipeline.DefaultSettings()), Version: "test"}
		r.Triage(p)
		p.Inspect(pipeline.DefaultSettings(), 1, 1)
		return r.Run(context.Background(), p)[0]
	}
	if fr := run(c1); fr.Status != StatusConverted {
		t.Fatalf("c1: %s %v", fr.Status, fr.Err)
	}
	in1 := filepath.Join(c1, "x.dng")
	if err := store.Claim("x.jpg", in1, state.AbsInput(in1), 12345); err != nil {
		t.Fatal(err)
	}
	picture := mustRead(t, filepath.Join(out, "x.jpg"))
	fr := run(c2)
	if fr.Status != StatusFailed || fr.Err == nil || !strings.Contains(fr.Err.Error(), "was being written from "+state.AbsInput(in1)+" by a run that did not finish") {
		t.Fatalf("c2: %s %v, want failed: being written from c1", fr.Status, fr.Err)
	}
	if got := mustRead(t, filepath.Join(out, "x.jpg")); string(got) != string(picture) {
		t.Fatal("c2 overwrote c1's picture")
	}
	if fr := run(c1); fr.Status != StatusConverted {
		t.Fatalf("c1 again: %s %v, want converted (its own claim)", fr.Status, fr.Err)
	}
	if rec, err := store.Load("x.jpg"); err != nil || rec.Claim || rec.OutputHash == "" {
		t.Fatalf("record after c1's re-run: %+v %v", rec, err)
	}
	if fr := run(c2); fr.Status != StatusFailed || !strings.Contains(fr.Err.Error(), "two inputs map to one output") {
		t.Fatalf("c2 again: %s %v", fr.Status, fr.Err)
	}
}
