package batch

import (
	"math"
	"runtime"

	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/pipeline"
)

// Admission into the memory budget, and the threads decided there.
//
// What a file takes of the budget is answered once, by Runner.Need: the
// scheduler admits by it (admit, admitWhole, atOnce, grow.go), the dry run
// plans by it (Runner.DryPlan) and the report shows it
// (FileResult.NeedBytes), so a dry run and a run cannot disagree on which
// file fits.
//
// A file is admitted when its need at one thread fits beside the files
// running; it then holds its need at the thread count it gets, that count
// lowered until it fits (budget.Scheduler.Admit). The count is
// budget.ShareThreads(cores, threads held by the files running, files
// expected to run at once): those in flight, this one included, and the
// next ones of the queue that would be admitted before any of them ends
// (atOnce). A file that starts alone gets every core; files admitted
// together share them; the threads of the files running never sum to
// more than the cores, except that a file admitted when every core is
// taken runs on one thread. A file keeps its threads until it ends, or
// until files end with none left to start: then it grows to its share of
// the cores freed (grow.go). Runner.Threads, when set, fixes every count.

// Admission is the memory budget's verdict on one task at one thread
// count (Runner.Need).
type Admission struct {
	// Need is the bytes the task holds in the budget: Estimate + Overhead
	// + Cache.
	Need int64
	// Estimate is the conversion's memory estimate at Threads, in bytes:
	// its whole-image one (pipeline.Memory.Whole) when it cannot stream
	// (Whole), else pipeline.Memory.Total.
	Estimate int64
	// Overhead is the executor's own memory per conversion in bytes
	// (Executor.Overhead: a worker process's WorkerRSS; 0 in process).
	Overhead int64
	// Cache is the size in bytes of the task's stage cache entry when the
	// cache is kept (--keep-cache: its tmpfs is memory), else 0.
	Cache int64
	// Threads is the thread count Need is for: the one asked, or
	// Runner.Threads when set.
	Threads int
	// Whole: the estimate is the whole-image one, because a kept stage
	// cache stores the decoded image whole, or because the conversion,
	// admitted to stream, found it must be made whole
	// (rawerr.ErrNeedsWhole).
	Whole bool
	// Budget is the whole budget in bytes (math.MaxInt64: none).
	Budget int64
	// HalfSize: the estimate is of a half-size decode
	// (pipeline.Memory.HalfSize).
	HalfSize bool
	// HalfNeed, for a task that does not fit and is not decoded at half
	// size, is its Need decoded at half size (--half-size) when that
	// fits and is less; else 0. The over-budget error suggests it.
	HalfNeed int64
}

// Fits reports whether the task's need fits in the whole budget, that is
// whether it can ever start.
func (a Admission) Fits() bool { return a.Need <= a.Budget }

// Err is nil when a fits, else the error the scheduler fails the task
// with: a *budget.OverBudgetError (wrapping budget.ErrOverBudget) naming
// Need and Budget.
func (a Admission) Err() error {
	if a.Fits() {
		return nil
	}
	return &budget.OverBudgetError{Need: a.Need, Budget: a.Budget, HalfSize: a.HalfSize, HalfNeed: a.HalfNeed}
}

// Need is the admission rule: what t takes of the budget when it
// converts on threads threads (Runner.Threads when set overrides threads;
// threads < 1 counts as 1), and whether that fits in the whole budget.
// It reads t's header (Task.Info) and estimate, the executor's overhead
// and the stage cache settings; it decides nothing about the files
// running beside t.
func (r *Runner) Need(t Task, threads int) Admission {
	if r.Threads > 0 {
		threads = r.Threads
	}
	threads = max(1, threads)
	a := r.admission(t, r.settingsOf(t), r.estimateAt(t, threads), threads)
	if !a.Fits() && !a.HalfSize {
		// What --half-size would take, for the over-budget error.
		s := r.settingsOf(t)
		s.HalfSize = true
		if h := r.admission(t, s, pipeline.EstimateMemory(t.Info, s, threads), threads); h.Fits() && h.Need < a.Need {
			a.HalfNeed = h.Need
		}
	}
	return a
}

// admission is Need's admission of t with settings s and their estimate
// est on threads threads, without HalfNeed.
func (r *Runner) admission(t Task, s pipeline.Settings, est pipeline.Memory, threads int) Admission {
	a := Admission{Estimate: est.Total, Overhead: r.executor().Overhead(), Threads: threads, Budget: r.budgetBytes(), HalfSize: est.HalfSize}
	if r.keepsWhole() || t.whole {
		a.Estimate, a.Whole = est.Whole, true
	}
	if r.keepsWhole() {
		a.Cache = pipeline.CacheEntryBytes(t.Info, s)
	}
	a.Need = a.Estimate + a.Overhead + a.Cache
	return a
}

// budgetBytes is the whole budget in bytes: the shared scheduler's, else
// Budget, math.MaxInt64 for none.
func (r *Runner) budgetBytes() int64 {
	switch {
	case r.Shared != nil:
		return r.Shared.Budget()
	case r.Budget > 0:
		return r.Budget
	}
	return math.MaxInt64
}

// cores returns the cores the conversions share: Cores, or the CPUs.
func (r *Runner) cores() int {
	if r.Cores > 0 {
		return r.Cores
	}
	return runtime.NumCPU()
}

// estimateAt returns t's memory estimate when it converts on threads
// threads: Task.Estimate again at that count when Inspect made it (from
// the header), else Task.Estimate as it is.
func (r *Runner) estimateAt(t Task, threads int) pipeline.Memory {
	if t.estThreads == 0 || t.estThreads == threads {
		return t.Estimate
	}
	return pipeline.EstimateMemory(t.Info, r.settingsOf(t), threads)
}

// needAt is Need(t, threads).Need: the bytes the scheduler asks for.
func (r *Runner) needAt(t Task, threads int) int64 { return r.Need(t, threads).Need }

// admit waits until t fits in the budget beside the files in flight and
// the ones the queue would start with it (atOnce), decides its threads,
// and sets t's threads and its Estimate at them.
func (b *batchRun) admit(t *Task) (budget.Grant, error) {
	g, err := b.admitBy(t, b.atOnce)
	if err != nil {
		return g, err
	}
	r := b.r
	if n := max(1, t.threads); t.estThreads != 0 && t.estThreads != n {
		t.Estimate, t.estThreads = r.estimateAt(*t, n), n
	}
	if r.keepsWhole() {
		t.Estimate.Total = t.Estimate.Whole // what it was admitted at (Need)
	}
	return g, nil
}

// admitWhole admits t again at its whole-image estimate
// (pipeline.Memory.Whole), after its conversion, admitted at the estimate
// of a streamed one, found it must make the whole image
// (rawerr.ErrNeedsWhole): it waits until that fits beside the files in
// flight (counted by their job slots; the queue is the Run loop's), then
// sets t's threads and its estimate. Errors: over the budget, or ctx
// ended.
func (b *batchRun) admitWhole(t *Task) (budget.Grant, error) {
	t.whole = true
	t.Estimate.Total = t.Estimate.Whole
	return b.admitBy(t, func(int64) int { return len(b.slots) })
}

// admitBy admits t by Need through the scheduler (budget.Scheduler.Admit,
// atOnce counting the files expected to run at once) and sets t's threads:
// the grant's, or Runner.Threads when set. Errors: over the budget
// (*budget.OverBudgetError), or ctx ended.
func (b *batchRun) admitBy(t *Task, atOnce func(free int64) int) (budget.Grant, error) {
	r := b.r
	// A file that can never fit fails with the admission rule's error,
	// which knows its settings (the scheduler's would not).
	if a := r.Need(*t, 1); !a.Fits() {
		return budget.Grant{}, a.Err()
	}
	need := func(n int) int64 { return r.needAt(*t, n) }
	g, err := r.Scheduler.Admit(b.ctx, need, atOnce)
	if err != nil {
		return g, err
	}
	t.threads = g.Threads
	if r.Threads > 0 {
		t.threads = r.Threads
	}
	return g, nil
}

// keepsWhole reports whether every conversion makes its decoded image
// whole, whatever its plan: a kept stage cache stores it.
func (r *Runner) keepsWhole() bool { return r.CacheDir != "" && r.KeepCache }

// readsCache reports whether t's conversion is given the stage cache:
// whenever there is one. A hit that streams from the entry's rows fits a
// streamed admission; one that would make the whole image stops with
// rawerr.ErrNeedsWhole before doing so, and the file is admitted again at
// its whole estimate (admitWhole).
func (r *Runner) readsCache(t Task) bool {
	return r.CacheDir != ""
}

// atOnce returns how many files are expected to run at once once the file
// being admitted starts, free bytes of the budget left beside it: the
// files in flight, it included (their job slots), and the next tasks of
// the queue that would start before any of those ends, taken in queue
// order while a job slot is free and their need at one thread fits in
// what is left (the scheduler is FIFO: the first that does not fit stops
// the count). Tasks that will end without converting (Done, Err, over the
// whole budget) are passed by; a task found up to date or locked only
// when its turn comes is counted, so that a miscount gives fewer threads,
// never more.
func (b *batchRun) atOnce(free int64) int {
	n := len(b.slots)
	for k, q := range b.queue {
		if n >= b.jobsFor(b.toConvert(b.queue[k+1:], 1)) {
			break
		}
		t := b.p.Tasks[q.i]
		if t.Done != nil || t.Err != nil {
			continue
		}
		a := b.r.Need(t, 1)
		if !a.Fits() {
			continue // fails at its turn
		}
		if a.Need > free {
			break
		}
		free -= a.Need
		n++
	}
	return n
}
