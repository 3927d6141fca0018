package batch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline"

	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/state"
)

func touch(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPlanBatchMirrorsTree(t *testing.T) {
	in := t.TempDir()
	out := filepath.Join(in, "export") // inside the input: must not be walked
	for _, p := range []string{"a/b/IMG_1.CR3", "a/IMG_2.nef", "c.ARW", "notes.txt", "x.dng", "x.DNG", "export/old.dng"} {
		touch(t, filepath.Join(in, p), []byte("x"))
	}
	p, err := PlanBatch([]string{in}, out, ".jpg")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, task := range p.Tasks {
		got[task.Rel] = strings.TrimPrefix(task.Output, out+"/")
	}
	want := map[string]string{
		"a/b/IMG_1.CR3": "a/b/IMG_1.jpg", "a/IMG_2.nef": "a/IMG_2.jpg", "c.ARW": "c.jpg",
		"x.DNG": "x.DNG.jpg", "x.dng": "x.dng-2.jpg", // x.dng.jpg and x.DNG.jpg differ only in case
	}
	if len(got) != len(want) {
		t.Fatalf("planned %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s → %q, want %q", k, got[k], v)
		}
	}
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "x.jpg") {
		t.Errorf("warnings %q", p.Warnings)
	}
}

func TestPlanBatchCollisionWithRenamedName(t *testing.T) {
	in := t.TempDir()
	// x.dng and x.DNG collide; x.dng.dng would then also want x.dng.jpg.
	for _, p := range []string{"x.dng", "x.DNG", "x.dng.dng"} {
		touch(t, filepath.Join(in, p), []byte("x"))
	}
	p, err := PlanBatch([]string{in}, "/out", ".jpg")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, task := range p.Tasks {
		if prev, ok := seen[task.Output]; ok {
			t.Errorf("%s and %s both map to %s", prev, task.Input, task.Output)
		}
		seen[task.Output] = task.Input
	}
}

func TestPlanBatchDedupesAndLinks(t *testing.T) {
	in := t.TempDir()
	touch(t, filepath.Join(in, "a.dng"), []byte("x"))
	if err := os.Symlink(filepath.Join(in, "a.dng"), filepath.Join(in, "link.dng")); err != nil {
		t.Fatal(err)
	}
	p, err := PlanBatch([]string{in, filepath.Join(in, "a.dng")}, t.TempDir(), ".jpg")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Tasks) != 1 {
		t.Fatalf("a file reached three times planned %d times: %+v", len(p.Tasks), p.Tasks)
	}
	if filepath.Base(p.Tasks[0].Input) != "a.dng" {
		t.Errorf("kept %s, want the file itself rather than the link", p.Tasks[0].Input)
	}
	if len(p.Warnings) == 0 || !strings.Contains(p.Warnings[0], "same file") {
		t.Errorf("no warning about the duplicate: %q", p.Warnings)
	}
}

// TestPlanBatchSpecialInputs: a symbolic link to a directory named as
// input is walked; a FIFO (named or found) and a dangling link are
// problems with a clear reason, never opened.
func TestPlanBatchSpecialInputs(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	touch(t, filepath.Join(real, "a.dng"), []byte("x"))
	link := filepath.Join(base, "card")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(real, "pipe.dng")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink(filepath.Join(base, "nowhere"), filepath.Join(real, "dangling.nef"))
	p, err := PlanBatch([]string{link, fifo}, filepath.Join(base, "out"), ".jpg")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Tasks) != 1 || p.Tasks[0].Input != filepath.Join(link, "a.dng") {
		t.Fatalf("tasks %+v, want card/a.dng", p.Tasks)
	}
	var reasons []string
	for _, pr := range p.Problems {
		reasons = append(reasons, pr.Err.Error())
	}
	all := strings.Join(reasons, "\n")
	for _, want := range []string{"pipe.dng: not a raw file: not a regular file", "dangling.nef: broken symbolic link"} {
		if !strings.Contains(all, want) {
			t.Errorf("problems %q lack %q", all, want)
		}
	}
}

// TestRunnerInterrupted: a cancelled batch starts nothing and reports every
// file as skipped.
func TestRunnerInterrupted(t *testing.T) {
	in := t.TempDir()
	touch(t, filepath.Join(in, "a.dng"), mustRead(t, filepath.Join(testdata, "raw", "canon_eos_6d.dng")))
	out := t.TempDir()
	p, err := PlanBatch([]string{in}, out, ".jpg")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := (&Runner{Settings: pipeline.DefaultSettings(), Jobs: 2}).Run(ctx, p)
	if len(res) != 1 || res[0].Status != StatusSkipped {
		t.Fatalf("results %+v", res)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Fatalf("output written by a cancelled run: %v", ents)
	}
}

// TestAppendedDuringRunIsLeftForNextRun: a file that changes between the
// plan and its conversion is skipped as still being written, with no output
// and no record, and the next run converts it.
func TestAppendedDuringRunIsLeftForNextRun(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	src := mustRead(t, filepath.Join(testdata, "raw", "adobesdk_05_PGTM2_unsigned8.dng"))
	touch(t, filepath.Join(in, "growing.dng"), src)
	touch(t, filepath.Join(in, "still.dng"), src)
	store, err := state.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	run := func(appendAfterPlan bool) map[string]FileResult {
		p, err := PlanBatch([]string{in}, out, ".jpg")
		if err != nil {
			t.Fatal(err)
		}
		r := &Runner{Settings: pipeline.DefaultSettings(), Jobs: 1, State: store, OutDir: out,
			SettingsHash: SettingsHash(pipeline.DefaultSettings()), Version: "test"}
		r.Triage(p)
		p.Inspect(pipeline.DefaultSettings(), 1, 1)
		if appendAfterPlan {
			// The camera is still writing: append after the plan was made.
			f, _ := os.OpenFile(filepath.Join(in, "growing.dng"), os.O_APPEND|os.O_WRONLY, 0)
			f.Write([]byte("more data"))
			f.Close()
		}
		got := map[string]FileResult{}
		for _, fr := range r.Run(context.Background(), p) {
			got[filepath.Base(fr.Input)] = fr
		}
		return got
	}
	first := run(true)
	if fr := first["growing.dng"]; fr.Status != StatusSkipped || !strings.Contains(fr.Reason, "still being written") {
		t.Fatalf("growing.dng in the first run: %s %q %v", fr.Status, fr.Reason, fr.Err)
	}
	if _, err := os.Stat(filepath.Join(out, "growing.jpg")); err == nil {
		t.Fatal("output written for a file that was still being written")
	}
	if first["still.dng"].Status != StatusConverted {
		t.Fatalf("still.dng: %+v", first["still.dng"])
	}
	second := run(false)
	if fr := second["growing.dng"]; fr.Status != StatusConverted {
		t.Fatalf("growing.dng in the second run: %s %q %v", fr.Status, fr.Reason, fr.Err)
	}
	if fr := second["still.dng"]; fr.Status != StatusSkipped || fr.Reason != "up to date" {
		t.Fatalf("still.dng in the second run: %s %q", fr.Status, fr.Reason)
	}
}

func TestTransientClassification(t *testing.T) {
	for err, want := range map[error]bool{
		&os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}: true,
		fmt.Errorf("wrapped: %w", syscall.EINTR):                   true,
		syscall.EAGAIN:                                             true,
		os.ErrDeadlineExceeded:                                     true,
		&remoteError{msg: "no space", kind: ErrTransient}:          true,
		rawerr.ErrCorrupt:                                          false,
		fmt.Errorf("x: %w", ErrCrashed):                            false,
	} {
		if got := transient(err); got != want {
			t.Errorf("transient(%v) = %v", err, got)
		}
	}
}

// TestOvershootWarning: a worker that used clearly more memory than its
// estimate is reported; a small file's few MiB of noise is not.
func TestOvershootWarning(t *testing.T) {
	const MiB = 1 << 20
	for _, c := range []struct {
		peak, est int64
		warn      bool
	}{
		{19 * MiB, 14 * MiB, false},  // 1.36× but 5 MiB
		{900 * MiB, 700 * MiB, true}, // 1.29× and 200 MiB
		{100 * MiB, 90 * MiB, false},
		{1300 * MiB, 1000 * MiB, true},
		{60 * MiB, 20 * MiB, true},
	} {
		if got := overshootWarning(c.peak, c.est); (got != "") != c.warn {
			t.Errorf("peak %d MiB, estimate %d MiB: warning %q, want one: %v", c.peak/MiB, c.est/MiB, got, c.warn)
		}
	}
}

// TestOpenCacheUnusable: a cache path that is a plain file gives no cache
// and a warning naming it, not an error; "" gives no cache and no warning.
func TestOpenCacheUnusable(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, w := openCache(f, 0, true); c != nil || !strings.Contains(w, f) {
		t.Errorf("openCache(file) = %v, %q; want no cache and a warning naming %s", c, w, f)
	}
	if c, w := openCache("", 0, false); c != nil || w != "" {
		t.Errorf(`openCache("") = %v, %q`, c, w)
	}
	if c, w := openCache(filepath.Join(t.TempDir(), "c"), 0, true); c == nil || w != "" || !c.Keep {
		t.Errorf("openCache(new dir) = %v, %q", c, w)
	}
}

// TestReportEstimateIncludesWorker: the report's estimate of a file
// converted in a worker includes the worker's own memory, as the scheduler
// counts it, so it compares with the worker's measured peak.
func TestReportEstimateIncludesWorker(t *testing.T) {
	in := FileResult{Status: StatusConverted, PeakBytes: 50 << 20}
	in.Estimate.Total = 30 << 20
	if got := BuildReport([]FileResult{in}).Files[0].EstimatedBytes; got != 30<<20+WorkerRSS {
		t.Errorf("in a worker: estimated_bytes %d, want %d", got, 30<<20+WorkerRSS)
	}
	in.PeakBytes = 0 // converted in process
	if got := BuildReport([]FileResult{in}).Files[0].EstimatedBytes; got != 30<<20 {
		t.Errorf("in process: estimated_bytes %d, want %d", got, 30<<20)
	}
}
