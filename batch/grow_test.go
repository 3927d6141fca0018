package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/internal/fault"
	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// heldExecutor converts nothing: each Execute announces its Job on
// started and returns (writing its outputs) when the test closes the
// channel of its input's base name.
type heldExecutor struct {
	t       *testing.T
	started chan Job
	mu      sync.Mutex
	end     map[string]chan struct{}
}

func (e *heldExecutor) endOf(name string) chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.end[name] == nil {
		e.end[name] = make(chan struct{})
	}
	return e.end[name]
}

func (e *heldExecutor) Execute(_ context.Context, j Job) Outcome {
	e.started <- j
	<-e.endOf(filepath.Base(string(j.Input)))
	return writeOutputs(e.t, j)
}

func (e *heldExecutor) Overhead() int64 { return 0 }

// TestThreadsGrowAtTheEnd: three files on 2 cores, two at a time: the
// first two run on one thread each; the third, admitted when the first
// ends while the second still runs, gets one; when the second ends with nothing left to start, its core goes to
// the third (Job.MoreThreads says 2), and never more than the cores.
func TestThreadsGrowAtTheEnd(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	for _, n := range []string{"a.dng", "b.dng", "c.dng"} {
		touch(t, filepath.Join(in, n), []byte("not really a raw"))
	}
	p, err := PlanBatch([]string{in}, out, ".jpg")
	if err != nil {
		t.Fatal(err)
	}
	released := make(chan string, 3)
	releasedHook = func(input string) { released <- filepath.Base(input) }
	defer func() { releasedHook = nil }()
	ex := &heldExecutor{t: t, started: make(chan Job, 3), end: map[string]chan struct{}{}}
	s := pipeline.DefaultSettings()
	r := &Runner{Settings: s, Jobs: 2, Cores: 2, Executor: ex, OutDir: out, SettingsHash: SettingsHash(s), Retries: 1}
	done := make(chan []FileResult)
	go func() { done <- r.Run(context.Background(), p) }()
	jobs := map[string]Job{}
	take := func() Job {
		j := <-ex.started
		jobs[filepath.Base(string(j.Input))] = j
		return j
	}
	for range 2 {
		if j := take(); j.Threads != 1 {
			t.Errorf("%s started on %d threads, want 1 (two at once on 2 cores)", j.Input, j.Threads)
		}
	}
	first := ""
	for n := range jobs {
		if first == "" || n < first {
			first = n
		}
	}
	close(ex.endOf(first))
	third := take()
	if third.Threads != 1 {
		t.Errorf("third file started on %d threads, want 1 (the other core is held)", third.Threads)
	}
	if <-released != first {
		t.Fatal("another file released first")
	}
	select {
	case n := <-third.MoreThreads:
		t.Errorf("told %d threads while both cores are held", n)
	default:
	}
	var second string
	for n := range jobs {
		if n != first && jobs[n].Input != nil && string(jobs[n].Input) != string(third.Input) {
			second = n
		}
	}
	close(ex.endOf(second))
	if <-released != second {
		t.Fatal("another file released second")
	}
	select {
	case n := <-third.MoreThreads:
		if n != 2 {
			t.Errorf("the third file was told %d threads, want 2", n)
		}
	default:
		t.Error("the third file was not given the core the second freed")
	}
	close(ex.endOf(filepath.Base(string(third.Input))))
	<-released
	<-done
	if r.Scheduler.PeakThreads() > 2 {
		t.Errorf("peak threads %d on 2 cores", r.Scheduler.PeakThreads())
	}
	if n := r.Scheduler.FreeCores(); n != 2 {
		t.Errorf("%d cores free after the run, want 2 (the grown grant returned)", n)
	}
}

// TestThreadsGrowFixed: with Runner.Threads set, counts stay fixed: no
// conversion is told more threads.
func TestThreadsGrowFixed(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	for _, n := range []string{"a.dng", "b.dng"} {
		touch(t, filepath.Join(in, n), []byte("not really a raw"))
	}
	p, err := PlanBatch([]string{in}, out, ".jpg")
	if err != nil {
		t.Fatal(err)
	}
	released := make(chan string, 2)
	releasedHook = func(input string) { released <- filepath.Base(input) }
	defer func() { releasedHook = nil }()
	ex := &heldExecutor{t: t, started: make(chan Job, 2), end: map[string]chan struct{}{}}
	s := pipeline.DefaultSettings()
	r := &Runner{Settings: s, Jobs: 2, Cores: 2, Threads: 1, Executor: ex, OutDir: out, SettingsHash: SettingsHash(s), Retries: 1}
	done := make(chan []FileResult)
	go func() { done <- r.Run(context.Background(), p) }()
	a, b := <-ex.started, <-ex.started
	close(ex.endOf(filepath.Base(string(a.Input))))
	<-released
	select {
	case n := <-b.MoreThreads:
		t.Errorf("--threads 1: told %d threads", n)
	default:
	}
	close(ex.endOf(filepath.Base(string(b.Input))))
	<-released
	<-done
}

// TestWorkerToldThreads: a worker told "threads N" on its stdin while it
// converts (here before its decode, through the fault hook, the worker
// run in process) raises its GOMAXPROCS and the count its pipeline reads,
// and reports the count in its Result (ThreadsMax; the report's
// threads_max).
func TestWorkerToldThreads(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "tall.dng")
	if err := synthdng.WriteFile(in, synthdng.Spec{Width: 64, Height: 600, BlackLevel: 512, WhiteLevel: 16383,
		Scene: func(x, y, c int) float64 { return 0.2 + 0.1*float64(c) + 0.0005*float64(y) }}); err != nil {
		t.Fatal(err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	pr, pw := io.Pipe()
	defer pw.Close()
	told := make(chan int, 1)
	threadsToldHook = func(n int) { told <- n }
	defer func() { threadsToldHook = nil }()
	procs := -1
	old := fault.Hook
	fault.Hook = func(point, input string) {
		if input != in {
			return
		}
		switch point {
		case fault.Decode:
			if _, err := io.WriteString(pw, threadsLine(3)+"unknown line\n"); err != nil {
				t.Error(err)
			}
			select {
			case <-told:
			case <-time.After(30 * time.Second): // a watchdog, not a timing: the reader never took the line
				t.Error("the worker did not read the threads line")
			}
		case fault.Decoded:
			procs = runtime.GOMAXPROCS(0)
		case fault.Converted:
			pw.Close() // the worker replies, then its input ends
		}
	}
	defer func() { fault.Hook = old }()
	s := pipeline.DefaultSettings()
	o := filepath.Join(dir, "tall.jpg")
	j := Job{Input: []byte(in), Output: []byte(o), Settings: s, Threads: 1,
		Outputs: []JobOutput{{Variant: s.OutputVariants()[0], Path: []byte(o)}}}
	req, err := json.Marshal(newWorkerRequest(j))
	if err != nil {
		t.Fatal(err)
	}
	go pw.Write(append(req, '\n'))
	var stdout, stderr bytes.Buffer
	if code := workerMain(pr, &stdout, &stderr); code != 0 {
		t.Fatalf("exit status %d: %s", code, stderr.String())
	}
	var rep workerReply
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	res, err := rep.result()
	if err != nil {
		t.Fatal(err)
	}
	if procs != 3 || res.ThreadsMax != 3 {
		t.Errorf("told threads 3: GOMAXPROCS %d at the end of the decode, Result.ThreadsMax %d; want 3, 3", procs, res.ThreadsMax)
	}
	if !res.Streamed {
		t.Errorf("the file did not stream (the per-band count is the streamed demosaic's)")
	}
}
