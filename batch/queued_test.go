package batch

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/state"
)

// TestFenceErrorWritesNoRecord: a conversion whose Fence fails (the
// worker's lease was lost) keeps its output, writes no record, and fails
// naming the input with an error wrapping ErrFenced and Fence's own; the
// next run converts the file again and records it.
func TestFenceErrorWritesNoRecord(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	touch(t, filepath.Join(in, "a.dng"), []byte("not really a raw"))
	store, err := state.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	lost := errors.New("lease taken over")
	fences := 0
	run := func(fence func() error) FileResult {
		p, err := PlanBatch([]string{in}, out, ".jpg")
		if err != nil {
			t.Fatal(err)
		}
		s := pipeline.DefaultSettings()
		// Outputs as rawbatch writes them (its EXIF Software tag), so that
		// the next run knows the unrecorded one for its own.
		ex := &fakeExecutor{steps: []func(Job) Outcome{func(j Job) Outcome {
			for _, o := range j.Outputs {
				if err := os.WriteFile(string(o.Path), []byte("\xff\xd8\xff Software rawbatch\x00 fake"), 0o644); err != nil {
					t.Error(err)
				}
			}
			return Outcome{Result: pipeline.Result{Input: string(j.Input), Output: string(j.Output)}}
		}}}
		r := &Runner{Settings: s, Jobs: 1, Executor: ex, State: store, OutDir: out, SettingsHash: SettingsHash(s), Fence: fence}
		res := r.Run(context.Background(), p)
		if len(res) != 1 {
			t.Fatalf("%d results, want 1", len(res))
		}
		return res[0]
	}
	fr := run(func() error { fences++; return lost })
	if fr.Status != StatusFailed || !errors.Is(fr.Err, ErrFenced) || !errors.Is(fr.Err, lost) {
		t.Fatalf("fenced run: %s %v, want failed wrapping ErrFenced and the fence's error", fr.Status, fr.Err)
	}
	if fences != 1 {
		t.Errorf("Fence called %d times, want 1", fences)
	}
	input := filepath.Join(in, "a.dng")
	if got := fr.Err.Error(); len(got) < len(input) || got[:len(input)] != input {
		t.Errorf("error %q does not start with the input's path", got)
	}
	if _, err := os.Stat(filepath.Join(out, "a.jpg")); err != nil {
		t.Errorf("the fenced conversion's output is gone: %v", err)
	}
	if rec, err := store.Load("a.jpg"); err == nil {
		t.Fatalf("a fenced conversion wrote a record: %+v", rec)
	}
	// The next delivery converts again (nothing recorded) and commits.
	fr = run(func() error { fences++; return nil })
	if fr.Status != StatusConverted {
		t.Fatalf("second run: %s %v, want converted", fr.Status, fr.Err)
	}
	if _, err := store.Load("a.jpg"); err != nil {
		t.Errorf("no record after a conversion whose Fence passed: %v", err)
	}
	if fences != 2 {
		t.Errorf("Fence called %d times in all, want 2", fences)
	}
}

// sharedGateExecutor writes a job's outputs after telling started and waiting
// for gate (nil: no wait); it counts the jobs converting at once.
type sharedGateExecutor struct {
	t       *testing.T
	started chan string
	gate    chan struct{}
	mu      sync.Mutex
	now     int
	most    int
}

func (g *sharedGateExecutor) Execute(_ context.Context, j Job) Outcome {
	g.mu.Lock()
	g.now++
	g.most = max(g.most, g.now)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.now--
		g.mu.Unlock()
	}()
	if g.started != nil {
		g.started <- string(j.Input)
	}
	if g.gate != nil {
		select {
		case <-g.gate:
		case <-time.After(20 * time.Second):
			g.t.Errorf("%s: never let go", j.Input)
		}
	}
	return writeOutputs(g.t, j)
}

func (g *sharedGateExecutor) Overhead() int64 { return 0 }

// sharedRuns runs two Runs at once, one file each of estimate est bytes,
// admitted into one Shared scheduler of budget bytes, over ex; it returns
// the scheduler and the two results.
func sharedRuns(t *testing.T, budgetBytes, est int64, ex Executor) (*budget.Scheduler, []FileResult) {
	t.Helper()
	sched := budget.NewScheduler(budgetBytes)
	sched.SetCores(2)
	s := pipeline.DefaultSettings()
	results := make([]FileResult, 2)
	var wg sync.WaitGroup
	for i, name := range []string{"a", "b"} {
		in, out := t.TempDir(), t.TempDir()
		touch(t, filepath.Join(in, name+".dng"), []byte("not really a raw"))
		p, err := PlanBatch([]string{in}, out, ".jpg")
		if err != nil {
			t.Fatal(err)
		}
		p.Tasks[0].Estimate = pipeline.Memory{Total: est, Whole: est}
		// Budget is the Run's own: ignored when Shared is set.
		r := &Runner{Settings: s, Jobs: 1, Budget: 1 << 40, Executor: ex, OutDir: out, SettingsHash: SettingsHash(s), Shared: sched}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := r.Run(context.Background(), p)
			if len(res) != 1 {
				t.Errorf("%d results, want 1", len(res))
				return
			}
			results[i] = res[0]
			if r.Scheduler != sched {
				t.Errorf("Runner.Scheduler is not the Shared one")
			}
		}()
	}
	wg.Wait()
	return sched, results
}

// TestSharedAdmission: two Runs with one Shared scheduler are admitted into
// its one budget: with room for one file only one converts at a time
// (peak one file, its bytes), with room for two both convert at once (each
// waits for the other to start: peak two files, both estimates).
func TestSharedAdmission(t *testing.T) {
	const est = 100 << 20
	t.Run("room for one", func(t *testing.T) {
		ex := &sharedGateExecutor{t: t}
		sched, res := sharedRuns(t, est+est/2, est, ex)
		for _, fr := range res {
			if fr.Status != StatusConverted {
				t.Errorf("%s: %s %v, want converted", fr.Input, fr.Status, fr.Err)
			}
		}
		peak, n := sched.Stats()
		if n != 1 || peak != est || ex.most != 1 {
			t.Errorf("shared scheduler peak %d files, %d bytes; %d converting at once; want 1, %d, 1", n, peak, ex.most, est)
		}
		if sched.InUse() != 0 {
			t.Errorf("%d bytes still in use after both Runs", sched.InUse())
		}
	})
	t.Run("room for two", func(t *testing.T) {
		ex := &sharedGateExecutor{t: t, started: make(chan string, 2), gate: make(chan struct{})}
		go func() {
			// Both must be converting at once before either may finish.
			for range 2 {
				select {
				case <-ex.started:
				case <-time.After(20 * time.Second):
					t.Error("the two files were never converting at once")
				}
			}
			close(ex.gate)
		}()
		sched, res := sharedRuns(t, 2*est, est, ex)
		for _, fr := range res {
			if fr.Status != StatusConverted {
				t.Errorf("%s: %s %v, want converted", fr.Input, fr.Status, fr.Err)
			}
		}
		if peak, n := sched.Stats(); n != 2 || peak != 2*est {
			t.Errorf("shared scheduler peak %d files, %d bytes; want 2, %d", n, peak, 2*est)
		}
	})
}

// TestQueuedTaskRoundTrip: a task planned with variants, through
// QueueTask, JSON and Task/Configure on another Runner, gives the same
// outputs, settings and settings hash, and passes Check; a task whose hash
// is not this develop's fails Check with ErrOtherDevelop.
func TestQueuedTaskRoundTrip(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	touch(t, filepath.Join(in, "sub", "a.dng"), []byte("not really a raw"))
	s := pipeline.DefaultSettings()
	vs, err := pipeline.Preset("web", 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Variants, s.Quality, s.Exposure, s.Artist = vs, 88, 0.5, "Ann"
	var suffixes []string
	for _, v := range s.OutputVariants() {
		suffixes = append(suffixes, v.Suffix())
	}
	p, err := PlanBatch([]string{in}, out, suffixes...)
	if err != nil {
		t.Fatal(err)
	}
	store, err := state.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Settings: s, State: store, OutDir: out, SettingsHash: SettingsHash(s), Version: "1.2.3",
		Force: true, Overwrite: true, EditedKeep: true, KnownFailuresSkip: true, Timeout: 7 * time.Second, LockWait: 3 * time.Second, NoSettle: true}
	r.Triage(p)
	p.Tasks[0].Estimate = pipeline.Memory{Total: 5 << 20}
	q := r.QueueTask(p.Tasks[0])
	b, err := json.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	var back QueuedTask
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Check("1.2.3"); err != nil {
		t.Fatalf("Check after the round trip: %v", err)
	}
	if h := SettingsHash(back.Settings); h != r.SettingsHash {
		t.Errorf("settings hash %s after the round trip, want %s", h, r.SettingsHash)
	}
	var w Runner
	back.Configure(&w)
	if w.SettingsHash != r.SettingsHash || w.OutDir != out || w.Version != "1.2.3" || !w.Force || !w.Overwrite || w.NoRecreate ||
		!w.EditedKeep || !w.KnownFailuresSkip || w.Timeout != 7*time.Second || w.LockWait != 3*time.Second || !w.NoSettle {
		t.Errorf("Configure: %+v", w)
	}
	if back.Estimate != WorkerBytes(pipeline.Memory{Total: 5 << 20}) {
		t.Errorf("estimate %d, want %d", back.Estimate, WorkerBytes(pipeline.Memory{Total: 5 << 20}))
	}
	// The worker's plan of the task writes the same files.
	wp := &Plan{Tasks: []Task{back.Task()}}
	w.expand(wp)
	got, want := wp.Tasks[0].Outputs, p.Tasks[0].Outputs
	if len(want) != len(vs) || !reflect.DeepEqual(got, want) {
		t.Errorf("outputs after the round trip:\n%+v\nwant (%d variants)\n%+v", got, len(vs), want)
	}
	// Without the planned Outputs, the worker expands them from the
	// settings to the same files.
	back.Outputs = nil
	wp = &Plan{Tasks: []Task{back.Task()}}
	w.expand(wp)
	if got := wp.Tasks[0].Outputs; !reflect.DeepEqual(got, want) {
		t.Errorf("outputs expanded on the worker:\n%+v\nwant\n%+v", got, want)
	}
	if tk := back.Task(); tk.Input != p.Tasks[0].Input || tk.Size != p.Tasks[0].Size || !tk.ModTime.Equal(p.Tasks[0].ModTime) || tk.Rel != p.Tasks[0].Rel {
		t.Errorf("task %+v, want the plan's input, size and time", tk)
	}
	back.SettingsHash = "0123"
	if err := back.Check("1.2.4"); !errors.Is(err, ErrOtherDevelop) {
		t.Errorf("Check of another develop's hash: %v, want ErrOtherDevelop", err)
	}
}

// TestPathMap: a mapping applies to whole path components only, the first
// that matches wins, and Apply maps every absolute path of a task.
func TestPathMap(t *testing.T) {
	m := PathMap{{From: "/mnt/nas", To: "/Volumes/nas"}, {From: "/mnt", To: "/x"}}
	for in, want := range map[string]string{
		"/mnt/nas/a.dng": "/Volumes/nas/a.dng", "/mnt/nas": "/Volumes/nas", "/mnt/nasty/a.dng": "/x/nasty/a.dng",
		"/other/a.dng": "/other/a.dng", "": "",
	} {
		if got := m.Path(in); got != want {
			t.Errorf("Path(%q) = %q, want %q", in, got, want)
		}
	}
	q := QueuedTask{Input: "/mnt/nas/in/a.dng", Output: "/mnt/nas/out/a.jpg", Stem: "/mnt/nas/out/a", OutDir: "/mnt/nas/out",
		OutputRel: "a.jpg", Outputs: []Output{{Path: "/mnt/nas/out/a.jpg", Rel: "a.jpg"}}}
	got := m.Apply(q)
	if got.Input != "/Volumes/nas/in/a.dng" || got.Output != "/Volumes/nas/out/a.jpg" || got.Stem != "/Volumes/nas/out/a" ||
		got.OutDir != "/Volumes/nas/out" || got.Outputs[0].Path != "/Volumes/nas/out/a.jpg" || got.OutputRel != "a.jpg" || got.Outputs[0].Rel != "a.jpg" {
		t.Errorf("Apply: %+v", got)
	}
	if q.Outputs[0].Path != "/mnt/nas/out/a.jpg" {
		t.Error("Apply changed its argument's outputs")
	}
	for _, bad := range []string{"/a", "=/b", "/a="} {
		if _, err := ParsePathMapping(bad); err == nil {
			t.Errorf("ParsePathMapping(%q): no error", bad)
		}
	}
	if e, err := ParsePathMapping("/mnt/nas/=/Volumes/nas"); err != nil || e.From != "/mnt/nas" || e.To != "/Volumes/nas" {
		t.Errorf("ParsePathMapping: %+v %v", e, err)
	}
}

// TestPathMapReverse: a worker's report and failure reasons, made with
// its own paths (PathMap applied), are mapped back to the submitter's:
// the input, every output, and paths inside a message; a path outside
// the mappings and a report that is not a JobReport stay as they are.
func TestPathMapReverse(t *testing.T) {
	m := PathMap{{From: "/mnt/nas", To: "/Volumes/nas"}}
	jr := JobReport{File: FileReport{Input: "/Volumes/nas/in/a.dng", Status: StatusConverted,
		Outputs: []ReportOutput{{Path: "/Volumes/nas/out/a.jpg", Written: true}, {Path: "/elsewhere/a.png"}}}}
	b, err := json.Marshal(jr)
	if err != nil {
		t.Fatal(err)
	}
	var got JobReport
	if err := json.Unmarshal(m.ReverseReport(b), &got); err != nil {
		t.Fatal(err)
	}
	if got.File.Input != "/mnt/nas/in/a.dng" || got.File.Outputs[0].Path != "/mnt/nas/out/a.jpg" || got.File.Outputs[1].Path != "/elsewhere/a.png" || !got.File.Outputs[0].Written {
		t.Errorf("ReverseReport: %+v", got.File)
	}
	if r := m.Reverse(); len(r) != 1 || r[0] != (PathMapping{From: "/Volumes/nas", To: "/mnt/nas"}) {
		t.Errorf("Reverse: %+v", r)
	}
	if s := m.ReverseText("/Volumes/nas/in/a.dng: corrupt (/Volumes/nasty/x)"); s != "/mnt/nas/in/a.dng: corrupt (/Volumes/nasty/x)" {
		t.Errorf("ReverseText: %q", s)
	}
	if out := m.ReverseReport([]byte("not json")); string(out) != "not json" {
		t.Errorf("ReverseReport of not a report: %q", out)
	}
	if out := (PathMap{}).ReverseReport(b); string(out) != string(b) {
		t.Errorf("an empty map changed the report")
	}
}

// TestStorageAway: the errors of shared storage that is away for a while
// are transient, refusals are not.
func TestStorageAway(t *testing.T) {
	for _, e := range []error{syscall.ENOENT, syscall.ESTALE, syscall.EIO, syscall.ENOTCONN, syscall.EHOSTDOWN, syscall.ETIMEDOUT, syscall.ENOSPC, ErrTransient} {
		if !StorageAway(&os.PathError{Op: "mkdir", Path: "/nas/out", Err: e}) {
			t.Errorf("%v: not away", e)
		}
	}
	for _, e := range []error{syscall.EACCES, syscall.EPERM, syscall.EROFS, syscall.ENOTDIR, errors.New("other")} {
		if StorageAway(&os.PathError{Op: "mkdir", Path: "/nas/out", Err: e}) {
			t.Errorf("%v: away", e)
		}
	}
}

// TestQueuedTaskNonUTF8: a task whose paths hold a byte that is not UTF-8
// keeps every path's bytes through JSON (paths travel as bytes, as on the
// worker wire), and its JSON holds no U+FFFD.
func TestQueuedTaskNonUTF8(t *testing.T) {
	v := pipeline.Variant{Name: "main"}
	q := QueuedTask{Input: "/in/lat\xe9.dng", Rel: "lat\xe9.dng", Output: "/out/lat\xe9.jpg", OutputRel: "lat\xe9.jpg",
		Stem: "/out/lat\xe9", OutDir: "/out\xff", Size: 7, Version: "1.2.3",
		Paths:   []Output{{Variant: v, Path: "/out/lat\xe9.jpg", Rel: "lat\xe9.jpg"}},
		Outputs: []Output{{Variant: v, Path: "/out/lat\xe9-2.jpg", Rel: "lat\xe9-2.jpg"}}}
	b, err := json.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "\ufffd") || strings.Contains(string(b), `\ufffd`) {
		t.Errorf("JSON holds U+FFFD: %s", b)
	}
	var back QueuedTask
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, q) {
		t.Errorf("after the round trip:\n%+v\nwant\n%+v", back, q)
	}
}

// TestReverseReportNonUTF8: ReverseReport maps the exact bytes of a
// report's input and outputs that are not UTF-8 (their *_b64), not their
// display forms.
func TestReverseReportNonUTF8(t *testing.T) {
	jr := JobReport{File: FileReport{Status: StatusConverted}}
	jr.File.Input, jr.File.InputB64 = ReportPath("/Volumes/nas/in/lat\xe9.dng")
	o := ReportOutput{Written: true}
	o.Path, o.PathB64 = ReportPath("/Volumes/nas/out/lat\xe9.jpg")
	jr.File.Outputs = []ReportOutput{o}
	b, err := json.Marshal(jr)
	if err != nil {
		t.Fatal(err)
	}
	m := PathMap{{From: "/mnt/nas", To: "/Volumes/nas"}}
	var back JobReport
	if err := json.Unmarshal(m.ReverseReport(b), &back); err != nil {
		t.Fatal(err)
	}
	wantIn, wantIn64 := ReportPath("/mnt/nas/in/lat\xe9.dng")
	wantOut, wantOut64 := ReportPath("/mnt/nas/out/lat\xe9.jpg")
	if f := back.File; f.Input != wantIn || f.InputB64 != wantIn64 || f.Outputs[0].Path != wantOut || f.Outputs[0].PathB64 != wantOut64 {
		t.Errorf("reversed: %+v, want input %q (%s), output %q (%s)", f, wantIn, wantIn64, wantOut, wantOut64)
	}
}
