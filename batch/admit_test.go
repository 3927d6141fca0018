package batch

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// gatedExecutor records each Job's threads and how many jobs and threads
// were in flight when it started, tells started of each start, and holds
// each job until the test closes its gate: the test decides when a
// conversion ends, with no timing.
type gatedExecutor struct {
	t       *testing.T
	started chan string // base name of the input, as each job starts

	mu    sync.Mutex
	gates map[string]chan struct{}
	runs  map[string]gatedRun
	// sum and n are the threads and jobs in flight; bad is a start at
	// which the threads in flight exceeded both the cores and the jobs
	// in flight (more than one thread each beyond the cores).
	sum, n, cores int
	bad           []string
}

type gatedRun struct{ threads, inFlight, estimate int64 }

func newGated(t *testing.T, cores int, names ...string) *gatedExecutor {
	g := &gatedExecutor{t: t, started: make(chan string, len(names)), gates: map[string]chan struct{}{}, runs: map[string]gatedRun{}, cores: cores}
	for _, n := range names {
		g.gates[n] = make(chan struct{})
	}
	return g
}

func (g *gatedExecutor) Overhead() int64 { return 0 }

func (g *gatedExecutor) Execute(_ context.Context, j Job) Outcome {
	name := filepath.Base(string(j.Input))
	g.mu.Lock()
	g.sum += j.Threads
	g.n++
	g.runs[name] = gatedRun{threads: int64(j.Threads), inFlight: int64(g.n), estimate: j.Estimate}
	if g.sum > max(g.cores, g.n) {
		g.bad = append(g.bad, fmt.Sprintf("%s started: %d threads in flight in %d jobs on %d cores", name, g.sum, g.n, g.cores))
	}
	gate := g.gates[name]
	g.mu.Unlock()
	g.started <- name
	<-gate
	g.mu.Lock()
	g.sum -= j.Threads
	g.n--
	g.mu.Unlock()
	return writeOutputs(g.t, j)
}

// run returns what the job of name recorded.
func (g *gatedExecutor) run(name string) gatedRun {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.runs[name]
}

// release lets the job of name end.
func (g *gatedExecutor) release(name string) { close(g.gates[name]) }

// gatedBatch plans one fake input per name (each with the estimate of
// est, in bytes, made by hand: the same at every thread count) and starts
// a Runner with jobs slots, a budget and cores over ex; wait returns the
// results.
func gatedBatch(t *testing.T, ex *gatedExecutor, jobs int, budgetBytes int64, est map[string]int64, names ...string) (wait func() []FileResult) {
	t.Helper()
	return gatedRunner(t, ex, Runner{Jobs: jobs, Budget: budgetBytes}, est, names...)
}

// gatedRunner is gatedBatch with the Runner's Jobs, Budget and TailJob
// taken from opts; inputs named uptodate* are settled up to date, as
// Triage settles them (Task.Done).
func gatedRunner(t *testing.T, ex *gatedExecutor, opts Runner, est map[string]int64, names ...string) (wait func() []FileResult) {
	t.Helper()
	in, out := t.TempDir(), t.TempDir()
	for _, n := range names {
		touch(t, filepath.Join(in, n), []byte("not really a raw"))
	}
	p, err := PlanBatch([]string{in}, out, ".jpg")
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Tasks {
		base := filepath.Base(p.Tasks[i].Input)
		p.Tasks[i].Estimate.Total = est[base]
		if strings.HasPrefix(base, "uptodate") { // as Triage settles a file up to date
			p.Tasks[i].Done = &FileResult{Task: p.Tasks[i], Status: StatusSkipped, Reason: "up to date"}
		}
	}
	s := pipeline.DefaultSettings()
	r := &Runner{Settings: s, Jobs: opts.Jobs, TailJob: opts.TailJob, Budget: opts.Budget, Cores: ex.cores, Executor: ex, OutDir: out, SettingsHash: SettingsHash(s)}
	done := make(chan []FileResult, 1)
	go func() { done <- r.Run(context.Background(), p) }()
	return func() []FileResult { return <-done }
}

// next waits for the next len(want) jobs to start, in any order, and
// checks they are those of want.
func (g *gatedExecutor) next(want ...string) {
	g.t.Helper()
	left := map[string]bool{}
	for _, w := range want {
		left[w] = true
	}
	for range want {
		got := <-g.started
		if !left[got] {
			g.t.Fatalf("%s started, want %v", got, want)
		}
		delete(left, got)
	}
}

func (g *gatedExecutor) check(name string, threads, inFlight int64) {
	g.t.Helper()
	if r := g.run(name); r.threads != threads || r.inFlight != inFlight {
		g.t.Errorf("%s: %d threads with %d jobs in flight; want %d threads, %d in flight", name, r.threads, r.inFlight, threads, inFlight)
	}
}

func (g *gatedExecutor) done(results []FileResult) {
	g.t.Helper()
	for _, fr := range results {
		if fr.Status != StatusConverted {
			g.t.Errorf("%s: %s %v", fr.Input, fr.Status, fr.Err)
		}
	}
	if len(g.bad) > 0 {
		g.t.Errorf("oversubscribed: %v", g.bad)
	}
}

// TestThreadsLoneFile: a file converted alone gets every core, whatever
// --jobs says.
func TestThreadsLoneFile(t *testing.T) {
	ex := newGated(t, 4, "a.dng")
	wait := gatedBatch(t, ex, 4, 0, nil, "a.dng")
	ex.next("a.dng")
	ex.release("a.dng")
	res := wait()
	ex.check("a.dng", 4, 1)
	ex.done(res)
	if res[0].Threads != 4 {
		t.Errorf("FileResult.Threads %d, want 4", res[0].Threads)
	}
}

// TestThreadsOneAtATime: when the budget admits one file at a time (four
// 45 MP files under 1536 MiB), each gets every core, not cores / --jobs.
func TestThreadsOneAtATime(t *testing.T) {
	names := []string{"a.dng", "b.dng", "c.dng"}
	est := map[string]int64{"a.dng": 100, "b.dng": 100, "c.dng": 100}
	ex := newGated(t, 4, names...)
	wait := gatedBatch(t, ex, 4, 150, est, names...)
	for _, n := range names {
		ex.next(n)
		ex.check(n, 4, 1)
		ex.release(n)
	}
	ex.done(wait())
}

// TestThreadsShared: two files admitted together share the cores; a
// third, admitted when one of them ends, gets the cores it left.
func TestThreadsShared(t *testing.T) {
	names := []string{"a.dng", "b.dng", "c.dng"}
	est := map[string]int64{"a.dng": 100, "b.dng": 100, "c.dng": 100}
	ex := newGated(t, 4, names...)
	wait := gatedBatch(t, ex, 2, 250, est, names...)
	ex.next("a.dng", "b.dng")
	ex.check("a.dng", 2, ex.run("a.dng").inFlight) // b was going to start beside it
	ex.check("b.dng", 2, ex.run("b.dng").inFlight)
	ex.release("a.dng")
	ex.next("c.dng")
	ex.check("c.dng", 2, 2) // b keeps its 2
	ex.release("b.dng")
	ex.release("c.dng")
	ex.done(wait())
}

// TestThreadsMixed: a large file that leaves room for one small file
// beside it shares the cores with it; a later small file gets the cores
// the first small one leaves; a file over the whole budget (it fails at
// its turn) is not counted as running beside the others.
func TestThreadsMixed(t *testing.T) {
	names := []string{"a.dng", "b.dng", "c.dng", "d.dng"}
	est := map[string]int64{"a.dng": 700, "b.dng": 200, "c.dng": 5000, "d.dng": 200}
	ex := newGated(t, 4, names...)
	wait := gatedBatch(t, ex, 4, 1000, est, names...)
	ex.next("a.dng", "b.dng")
	ex.check("a.dng", 2, ex.run("a.dng").inFlight)
	ex.check("b.dng", 2, ex.run("b.dng").inFlight)
	ex.release("b.dng")
	ex.next("d.dng") // c fails over the budget; d fits beside a
	ex.check("d.dng", 2, 2)
	ex.release("a.dng")
	ex.release("d.dng")
	res := wait()
	for _, fr := range res {
		if filepath.Base(fr.Input) == "c.dng" {
			if fr.Status != StatusFailed {
				t.Errorf("c.dng: %s, want failed over the budget", fr.Status)
			}
			continue
		}
		if fr.Status != StatusConverted {
			t.Errorf("%s: %s %v", fr.Input, fr.Status, fr.Err)
		}
	}
	if len(ex.bad) > 0 {
		t.Errorf("oversubscribed: %v", ex.bad)
	}
}

// TestThreadsMoreJobsThanCores: with more files at once than cores each
// gets the minimum of one thread, and the threads in flight never exceed
// the cores by more than that minimum.
func TestThreadsMoreJobsThanCores(t *testing.T) {
	names := []string{"a.dng", "b.dng", "c.dng", "d.dng", "e.dng"}
	ex := newGated(t, 2, names...)
	wait := gatedBatch(t, ex, 3, 0, nil, names...)
	ex.next("a.dng", "b.dng", "c.dng")
	for _, n := range names[:3] {
		ex.check(n, 1, ex.run(n).inFlight)
	}
	ex.release("a.dng")
	ex.next("d.dng")
	ex.check("d.dng", 1, 3)
	ex.release("b.dng")
	ex.next("e.dng")
	ex.check("e.dng", 1, 3) // c and d hold the 2 cores
	for _, n := range []string{"c.dng", "d.dng", "e.dng"} {
		ex.release(n)
	}
	ex.done(wait())
}

// TestThreadsTailJob: with TailJob, the last file of the queue starts
// as one more than Jobs while Jobs run, on one thread (the cores are
// held), and only the last: of three files on 2 jobs and 2 cores all
// start at once; of four, the third waits for a slot as before and the
// fourth starts beside it and the second.
func TestThreadsTailJob(t *testing.T) {
	names := []string{"a.dng", "b.dng", "c.dng"}
	ex := newGated(t, 2, names...)
	// A file up to date queued behind them does not keep c from being
	// the last.
	wait := gatedRunner(t, ex, Runner{Jobs: 2, TailJob: true}, nil, append(names, "uptodate.dng")...)
	ex.next(names...)
	most := int64(0)
	for _, n := range names {
		ex.check(n, 1, ex.run(n).inFlight)
		most = max(most, ex.run(n).inFlight)
	}
	if most != 3 {
		t.Errorf("at most %d in flight, want the 3 files at once", most)
	}
	for _, n := range names {
		ex.release(n)
	}
	results := wait()
	ex.done(results[:3])
	if fr := results[3]; fr.Status != StatusSkipped || fr.Reason != "up to date" {
		t.Errorf("%s: %s %q, want skipped up to date", fr.Input, fr.Status, fr.Reason)
	}

	names = []string{"a.dng", "b.dng", "c.dng", "d.dng"}
	ex = newGated(t, 2, names...)
	wait = gatedRunner(t, ex, Runner{Jobs: 2, TailJob: true}, nil, names...)
	ex.next("a.dng", "b.dng")
	ex.release("a.dng")
	ex.next("c.dng", "d.dng")
	for _, n := range []string{"c.dng", "d.dng"} {
		ex.check(n, 1, ex.run(n).inFlight)
	}
	if c, d := ex.run("c.dng").inFlight, ex.run("d.dng").inFlight; max(c, d) != 3 || min(c, d) != 2 {
		t.Errorf("c and d started with %d and %d in flight, want 2 and 3 (b, c, d)", c, d)
	}
	for _, n := range names[1:] {
		ex.release(n)
	}
	ex.done(wait())
}

// TestThreadsEstimateAtAdmission: a file whose estimate Inspect made (at
// one thread) is estimated again at the thread count it is admitted with:
// the Job's Estimate, the FileResult's and the bytes admitted are those
// at that count; also when ResolveNames (a {camera} template) read the
// headers instead of Inspect.
func TestThreadsEstimateAtAdmission(t *testing.T) {
	for _, named := range []bool{false, true} {
		t.Run(fmt.Sprintf("named=%v", named), func(t *testing.T) { testEstimateAtAdmission(t, named) })
	}
}

func testEstimateAtAdmission(t *testing.T, named bool) {
	in, out := t.TempDir(), t.TempDir()
	f := filepath.Join(in, "a.dng")
	if err := synthdng.WriteFile(f, synthdng.Spec{Width: 512, Height: 384, BlackLevel: 512, WhiteLevel: 16383,
		Scene: func(x, y, c int) float64 { return 0.3 }}); err != nil {
		t.Fatal(err)
	}
	p, err := PlanBatch([]string{in}, out, ".jpg")
	if err != nil {
		t.Fatal(err)
	}
	s := pipeline.DefaultSettings()
	s.Demosaic = "ahd" // LibRaw's AHD: a tile buffer per thread, so the estimate depends on the threads
	if named {
		n, err := ParseNameTemplate("{camera}/{stem}")
		if err != nil {
			t.Fatal(err)
		}
		if !p.ResolveNames(PlanOptions{Name: n}, out, []string{".jpg"}, s, 0, 1, 1) {
			t.Fatal("ResolveNames did not read the headers")
		}
	} else {
		p.Inspect(s, 1, 1)
	}
	at1, at3 := pipeline.EstimateMemory(p.Tasks[0].Info, s, 1), pipeline.EstimateMemory(p.Tasks[0].Info, s, 3)
	if p.Tasks[0].Estimate.Total != at1.Total || at3.Total <= at1.Total {
		t.Fatalf("estimates: inspected %d, at 1 thread %d, at 3 %d; want the per-thread AHD tile to count", p.Tasks[0].Estimate.Total, at1.Total, at3.Total)
	}
	ex := newGated(t, 3, "a.dng")
	ex.release("a.dng")
	r := &Runner{Settings: s, Jobs: 2, Budget: 1 << 30, Cores: 3, Executor: ex, OutDir: out, SettingsHash: SettingsHash(s)}
	res := r.Run(context.Background(), p)
	ex.done(res)
	if got := ex.run("a.dng"); got.threads != 3 || got.estimate != at3.Total {
		t.Errorf("job: %d threads, estimate %d; want 3 and %d", got.threads, got.estimate, at3.Total)
	}
	if res[0].Estimate.Total != at3.Total {
		t.Errorf("result's estimate %d, want %d", res[0].Estimate.Total, at3.Total)
	}
	if peak, _ := r.Scheduler.Stats(); peak != at3.Total {
		t.Errorf("admitted %d bytes, want %d", peak, at3.Total)
	}
}

// TestLargestFirst: files start in the order of their estimates, largest
// first (plan order among equals), so that small files fill the cores at
// the end of a batch; results keep plan order.
func TestLargestFirst(t *testing.T) {
	names := []string{"a.dng", "b.dng", "c.dng", "d.dng"}
	est := map[string]int64{"a.dng": 100, "b.dng": 300, "c.dng": 200, "d.dng": 300}
	ex := newGated(t, 1, names...)
	wait := gatedBatch(t, ex, 1, 0, est, names...)
	for _, n := range []string{"b.dng", "d.dng", "c.dng", "a.dng"} {
		ex.next(n)
		ex.release(n)
	}
	res := wait()
	ex.done(res)
	for i, fr := range res {
		if got := filepath.Base(fr.Input); got != names[i] {
			t.Errorf("result %d is %s, want %s (plan order)", i, got, names[i])
		}
	}
}
