package batch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline"
)

// TestCommittedOutputs: only an output path that holds another file than
// at the job's start counts as the job's commit; the file that was there
// before (an earlier run's output, being converted again) does not.
func TestCommittedOutputs(t *testing.T) {
	dir := t.TempDir()
	old := Output{Path: filepath.Join(dir, "old.jpg"), Rel: "old.jpg"}
	replaced := Output{Path: filepath.Join(dir, "replaced.jpg"), Rel: "replaced.jpg"}
	fresh := Output{Path: filepath.Join(dir, "fresh.jpg"), Rel: "fresh.jpg"}
	never := Output{Path: filepath.Join(dir, "never.jpg"), Rel: "never.jpg"}
	for _, o := range []Output{old, replaced} {
		if err := os.WriteFile(o.Path, []byte("earlier run"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outs := []Output{old, replaced, fresh, never}
	before := statOutputs(outs)
	// The job's commits: a temporary file renamed over replaced.jpg, and
	// fresh.jpg where there was none.
	for _, o := range []Output{replaced, fresh} {
		tmp := o.Path + ".tmp"
		if err := os.WriteFile(tmp, []byte("this job's"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, o.Path); err != nil {
			t.Fatal(err)
		}
	}
	got := before.committed(outs)
	if len(got) != 2 || got[0] != replaced || got[1] != fresh {
		t.Fatalf("committed = %v, want replaced.jpg and fresh.jpg", got)
	}

	// All committed: converted. Some: not converted, the committed ones
	// kept (an earlier output at their paths is already replaced).
	fr := FileResult{Status: StatusSkipped, Reason: ReasonCancelled}
	if !settleStopped(&fr, []Output{replaced, fresh}, before[1:3], &Runner{}) || fr.Status != StatusConverted || fr.Reason != "" {
		t.Fatalf("all committed: %+v, want converted", fr)
	}
	fr = FileResult{Status: StatusSkipped, Reason: ReasonCancelled}
	if settleStopped(&fr, []Output{fresh, never}, before[2:], &Runner{}) || fr.Status != StatusSkipped || !strings.Contains(fr.Reason, "1 of its 2 outputs") {
		t.Fatalf("some committed: %+v, want skipped, saying 1 of 2 outputs is in place", fr)
	}
	if b, err := os.ReadFile(fresh.Path); err != nil || string(b) != "this job's" {
		t.Fatalf("some committed: %s = %q, %v; want it kept", fresh.Rel, b, err)
	}
	if _, err := os.Lstat(old.Path); err != nil {
		t.Fatalf("%s (not this job's) removed: %v", old.Rel, err)
	}
}

// TestStoppedNotRemembered: a worker killed by a signal another process
// sent (kill -9, SIGTERM, SIGINT) fails its file as a crash that is not
// remembered (the next run converts it again, with --known-failures skip
// too), while a fault of the decoder's (SIGSEGV) is; and a failed file
// whose worker had put some of its outputs in place says how many in its
// error, is not remembered, and its report lists them as written.
func TestStoppedNotRemembered(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		sig      syscall.Signal
		remember bool
	}{{syscall.SIGKILL, false}, {syscall.SIGTERM, false}, {syscall.SIGINT, false}, {syscall.SIGSEGV, true}} {
		err := signalled(ctx, c.sig, 0, math.MaxInt64)
		if !errors.Is(err, ErrCrashed) || remembered(err) != c.remember {
			t.Errorf("%v: %v, crashed %v, remembered %v; want crashed, remembered %v", c.sig, err, errors.Is(err, ErrCrashed), remembered(err), c.remember)
		}
	}

	dir := t.TempDir()
	done := Output{Path: filepath.Join(dir, "a.jpg"), Rel: "a.jpg", Variant: pipeline.Variant{Name: "main"}}
	missing := Output{Path: filepath.Join(dir, "a.thumb.webp"), Rel: "a.thumb.webp", Variant: pipeline.Variant{Name: "thumb"}}
	outs := []Output{done, missing}
	before := statOutputs(outs)
	if err := os.WriteFile(done.Path, []byte("committed"), 0o644); err != nil {
		t.Fatal(err)
	}
	crash := fmt.Errorf("%w (signal 11, segmentation fault)", ErrCrashed)
	fr := FileResult{Task: Task{Outputs: outs}, Status: StatusFailed, Err: crash}
	if settleStopped(&fr, outs, before, &Runner{}) || fr.Status != StatusFailed {
		t.Fatalf("%+v: want failed", fr)
	}
	if !strings.Contains(fr.Err.Error(), "1 of its 2 outputs") || !errors.Is(fr.Err, ErrCrashed) || remembered(fr.Err) {
		t.Errorf("error %q: want it to say 1 of 2 outputs is in place, a crash, not remembered (remembered %v)", fr.Err, remembered(fr.Err))
	}
	rep := reportOutputs(fr)
	if len(rep) != 1 || rep[0].Path != done.Path || !rep[0].Written || rep[0].Variant != "main" {
		t.Errorf("report outputs %+v, want %s written (variant main)", rep, done.Path)
	}
}
