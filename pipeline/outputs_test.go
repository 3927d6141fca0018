package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/state"
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
		s := DefaultSettings()
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
