package batch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/lock"
	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/state"
)

// fakeExecutor answers each Job with the next of its outcomes, after
// calling its act (to write an output or leave a temporary file); it runs
// no conversion and no process.
type fakeExecutor struct {
	mu    sync.Mutex
	jobs  []Job
	steps []func(j Job) Outcome
}

func (f *fakeExecutor) Execute(_ context.Context, j Job) Outcome {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.jobs = append(f.jobs, j)
	if len(f.steps) == 0 {
		return Outcome{Err: errors.New("fake executor: no more outcomes")}
	}
	step := f.steps[0]
	f.steps = f.steps[1:]
	return step(j)
}

func (f *fakeExecutor) Overhead() int64 { return 0 }

// writeOutputs writes every output of j as a tiny JPEG-looking file, as an
// executor that succeeded leaves them.
func writeOutputs(t *testing.T, j Job) Outcome {
	for _, o := range j.Outputs {
		if err := os.WriteFile(string(o.Path), []byte("\xff\xd8\xff fake output"), 0o644); err != nil {
			t.Error(err)
		}
	}
	return Outcome{Result: pipeline.Result{Input: string(j.Input), Output: string(j.Output)}}
}

// fakeRun plans in/a.dng into out and runs it with the executor ex.
func fakeRun(t *testing.T, in, out string, store *state.Store, ex Executor) FileResult {
	t.Helper()
	p, err := PlanBatch([]string{in}, out, ".jpg")
	if err != nil {
		t.Fatal(err)
	}
	s := pipeline.DefaultSettings()
	r := &Runner{Settings: s, Jobs: 1, Executor: ex, State: store, OutDir: out, SettingsHash: SettingsHash(s), Retries: 1}
	res := r.Run(context.Background(), p)
	if len(res) != 1 {
		t.Fatalf("%d results, want 1", len(res))
	}
	return res[0]
}

// TestRunnerOverFakeExecutor: the runner's retries, records and freshness
// work over an Executor that is not a subprocess: a transient failure is
// retried and the success that follows writes the record, after which the
// file is up to date and not handed out again; a corrupt file is not
// retried and gets no record.
func TestRunnerOverFakeExecutor(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	touch(t, filepath.Join(in, "a.dng"), []byte("not really a raw"))
	store, err := state.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	ex := &fakeExecutor{steps: []func(Job) Outcome{
		func(j Job) Outcome {
			return Outcome{Err: fmt.Errorf("%s: writing: %w", j.Input, ErrTransient)}
		},
		func(j Job) Outcome { return writeOutputs(t, j) },
	}}
	fr := fakeRun(t, in, out, store, ex)
	if fr.Status != StatusConverted || len(ex.jobs) != 2 {
		t.Fatalf("status %s (%v) after %d jobs; want converted after a retry", fr.Status, fr.Err, len(ex.jobs))
	}
	j := ex.jobs[1]
	if string(j.Input) != filepath.Join(in, "a.dng") || len(j.Outputs) != 1 || string(j.Outputs[0].Path) != filepath.Join(out, "a.jpg") ||
		j.Timeout <= 0 {
		t.Errorf("job %+v", j)
	}
	rec, err := store.Load("a.jpg")
	if err != nil || rec == nil || rec.OutputHash == "" || rec.InputHash == "" || rec.LibRaw != pipeline.LibRawInfo().Version || rec.LibRaw == "" {
		t.Fatalf("record %+v, %v; want one with the input's and output's hashes", rec, err)
	}
	// Up to date now: skipped without a job.
	fr = fakeRun(t, in, out, store, ex)
	if fr.Status != StatusSkipped || len(ex.jobs) != 2 {
		t.Errorf("second run: %s %q after %d jobs; want skipped, no new job", fr.Status, fr.Reason, len(ex.jobs))
	}

	touch(t, filepath.Join(in, "a.dng"), []byte("another picture, corrupt"))
	ex = &fakeExecutor{steps: []func(Job) Outcome{
		func(j Job) Outcome {
			return Outcome{Err: fmt.Errorf("%s: damaged: %w", j.Input, rawerr.ErrCorrupt)}
		},
		func(j Job) Outcome { return writeOutputs(t, j) },
	}}
	store.Remove("a.jpg")
	os.Remove(filepath.Join(out, "a.jpg"))
	fr = fakeRun(t, in, out, store, ex)
	if fr.Status != StatusFailed || !errors.Is(fr.Err, rawerr.ErrCorrupt) || len(ex.jobs) != 1 {
		t.Errorf("corrupt: %s %v after %d jobs; want failed as corrupt, not retried", fr.Status, fr.Err, len(ex.jobs))
	}
	if rec, _ := store.Load("a.jpg"); rec != nil {
		t.Errorf("a failed file got a record: %+v", rec)
	}
}

// TestRunnerRemovesTempsOfStoppedJob: when an executor's conversion was
// stopped (a crashed worker), the temporary file it left for an output is
// removed by the runner, and the failure keeps its kind.
func TestRunnerRemovesTempsOfStoppedJob(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	touch(t, filepath.Join(in, "a.dng"), []byte("x"))
	var left string
	ex := &fakeExecutor{steps: []func(Job) Outcome{func(j Job) Outcome {
		o := j.Outputs[0]
		left = pipeline.NewTempName(string(o.Path))
		if err := os.WriteFile(left, []byte("\xff\xd8\xff partial"), 0o644); err != nil {
			t.Error(err)
		}
		pipeline.MarkTemp(left)
		return Outcome{Err: fmt.Errorf("%s: %w (signal 11, segmentation fault)", j.Input, ErrCrashed), Crashed: true, Stopped: true}
	}}}
	fr := fakeRun(t, in, out, nil, ex)
	if fr.Status != StatusFailed || !errors.Is(fr.Err, rawerr.ErrCrashed) {
		t.Errorf("%s %v; want failed as crashed", fr.Status, fr.Err)
	}
	if left == "" {
		t.Fatal("no job")
	}
	if _, err := os.Lstat(left); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stopped job's temporary file %s is still there (%v)", left, err)
	}
}

// fakeLocker is a Locker whose keys in busy are held by another run; it
// counts the Helds it gave out and those unlocked.
type fakeLocker struct {
	mu              sync.Mutex
	busy            map[string]bool
	given, released int
}

func (f *fakeLocker) TryLockAll(keys []string, note, doing string) (lock.Held, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range keys {
		if f.busy[k] {
			return nil, &lock.LockedError{Key: k, Holder: lock.Holder{PID: 1, Note: note}}
		}
	}
	f.given++
	return &fakeHeld{f: f, keys: keys}, nil
}

func (f *fakeLocker) Lock(_ context.Context, key string, _ time.Duration) (lock.Held, error) {
	return f.TryLockAll([]string{key}, "", "")
}

type fakeHeld struct {
	f    *fakeLocker
	keys []string
	done bool
}

func (h *fakeHeld) Keys() []string { return h.keys }

func (h *fakeHeld) Unlock() error {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	if !h.done {
		h.done = true
		h.f.released++
	}
	return nil
}

// TestRunnerOverFakeLocker: the runner takes its locks through the
// lock.Locker interface: a file whose output key another run holds (the
// same work: same note) is reported as locked without a job, and a free
// one is converted holding its output's key, released afterwards.
func TestRunnerOverFakeLocker(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	touch(t, filepath.Join(in, "a.dng"), []byte("x"))
	touch(t, filepath.Join(in, "b.dng"), []byte("y"))
	p, err := PlanBatch([]string{in}, out, ".jpg")
	if err != nil {
		t.Fatal(err)
	}
	lk := &fakeLocker{busy: map[string]bool{OutputLockKey("b.jpg"): true}}
	ex := &fakeExecutor{steps: []func(Job) Outcome{func(j Job) Outcome { return writeOutputs(t, j) }}}
	s := pipeline.DefaultSettings()
	r := &Runner{Settings: s, Jobs: 1, Executor: ex, Locks: lk, OutDir: out, SettingsHash: SettingsHash(s)}
	got := map[string]Status{}
	for _, fr := range r.Run(context.Background(), p) {
		got[filepath.Base(fr.Input)] = fr.Status
	}
	if got["a.dng"] != StatusConverted || got["b.dng"] != StatusLocked {
		t.Errorf("statuses %v, want a converted and b locked", got)
	}
	if len(ex.jobs) != 1 || string(ex.jobs[0].Input) != filepath.Join(in, "a.dng") {
		t.Errorf("%d jobs, want one for a.dng", len(ex.jobs))
	}
	if lk.given != 1 || lk.released != 1 {
		t.Errorf("locks given %d, released %d; want 1 and 1", lk.given, lk.released)
	}
}
