package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"github.com/rawbatch/rawbatch/internal/fault"
	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// TestRunnerHandsThreadsBesideSettings: the runner gives each Job its
// Runner.Threads in Job.Threads, and the Job's Settings are the runner's
// unchanged (the thread count is not a setting of the pictures).
func TestRunnerHandsThreadsBesideSettings(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	touch(t, filepath.Join(in, "a.dng"), []byte("not really a raw"))
	p, err := PlanBatch([]string{in}, out, ".jpg")
	if err != nil {
		t.Fatal(err)
	}
	ex := &fakeExecutor{steps: []func(Job) Outcome{func(j Job) Outcome { return writeOutputs(t, j) }}}
	s := pipeline.DefaultSettings()
	r := &Runner{Settings: s, Jobs: 1, Threads: 3, Executor: ex, OutDir: out, SettingsHash: SettingsHash(s), Retries: 1}
	r.Run(context.Background(), p)
	if len(ex.jobs) != 1 {
		t.Fatalf("%d jobs, want 1", len(ex.jobs))
	}
	if j := ex.jobs[0]; j.Threads != 3 || !reflect.DeepEqual(j.Settings, s) {
		t.Errorf("job threads %d, settings %+v; want 3 and the runner's %+v", j.Threads, j.Settings, s)
	}
}

// TestThreadsReachLibRaw: a Job's Threads is LibRaw's OpenMP thread cap
// both in process (InProcess) and through the wire to a worker
// (newWorkerRequest, workerMain, run here in process so the hook sees
// LibRaw's thread), with more threads than CPUs so OpenMP's default
// cannot pass for it, and another count for each (a thread's OpenMP cap
// outlives a conversion on it); a worker's GOMAXPROCS is Threads too.
func TestThreadsReachLibRaw(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "tiny.dng")
	if err := synthdng.WriteFile(in, synthdng.Spec{Width: 48, Height: 32, BlackLevel: 512, WhiteLevel: 16383,
		Scene: func(x, y, c int) float64 { return 0.3 }}); err != nil {
		t.Fatal(err)
	}
	got, procs := -1, -1
	old := fault.Hook
	fault.Hook = func(point, input string) {
		if point == fault.Decoded && input == in {
			got, procs = fault.OpenMPThreads(), runtime.GOMAXPROCS(0)
		}
	}
	defer func() { fault.Hook = old }()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0)) // workerMain sets it to Threads
	s := pipeline.DefaultSettings()
	s.Demosaic = "ahd" // LibRaw's processing (RCD's threads: pipeline.TestRCDThreads)
	job := func(name string, n int) Job {
		o := filepath.Join(dir, name)
		return Job{Input: []byte(in), Output: []byte(o), Settings: s, Threads: n,
			Outputs: []JobOutput{{Variant: s.OutputVariants()[0], Path: []byte(o)}}}
	}
	run := map[string]func(n int) error{
		"in process": func(n int) error { return InProcess{}.Execute(context.Background(), job("a.jpg", n)).Err },
		"worker": func(n int) error {
			req, err := json.Marshal(newWorkerRequest(job("b.jpg", n)))
			if err != nil {
				return err
			}
			var stdout, stderr bytes.Buffer
			if code := workerMain(bytes.NewReader(req), &stdout, &stderr); code != 0 {
				return fmt.Errorf("exit status %d: %s", code, stderr.String())
			}
			var rep workerReply
			if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
				return err
			}
			_, err = rep.result()
			return err
		},
	}
	n := runtime.NumCPU()
	for name, f := range run {
		n++
		got = -1
		if err := f(n); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got != n {
			t.Errorf("%s: Threads %d, LibRaw processed with %d OpenMP threads", name, n, got)
		}
		if name == "worker" && procs != n { // the Go stages' row loops (par.Rows)
			t.Errorf("worker: Threads %d, GOMAXPROCS %d", n, procs)
		}
	}
	for _, f := range []string{"a.jpg", "b.jpg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("output %s: %v", f, err)
		}
	}
}
