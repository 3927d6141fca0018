package batch

import (
	"runtime"

	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/pipeline"
)

// Threads at admission (issue 14). A conversion's thread count (LibRaw's
// OpenMP threads and its worker's GOMAXPROCS, which the Go stages' row
// loops use) is decided when the memory budget admits the file, not once
// for the batch: budget.ShareThreads(cores, threads held by the files
// running, files expected to run at once), where the files expected to
// run at once are those in flight, this one included, and the next ones
// of the queue that would be admitted before any of them ends (atOnce). A
// file that starts alone (the budget or --jobs admits one at a time, or it
// is the only one) gets every core; files admitted together share them;
// the threads of the files running never sum to more than the cores,
// except that a file admitted when every core is taken runs on one
// thread. A file keeps its threads until it ends, or until files end
// with none left to start: then it grows to its share of the cores freed
// (grow.go).
//
// Memory: a file is admitted when its estimate at one thread fits; it
// then holds its estimate at the thread count it gets (AHD's tile buffer
// per thread, sharpening's rows per band), that count being lowered until
// it fits (budget.Scheduler.Admit). Its Task.Estimate becomes the estimate
// at that count, which its worker's memory limit, the overshoot warning
// and the report use.

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
	return pipeline.EstimateMemory(t.Info, r.Settings, threads)
}

// needAt is what t takes of the budget on threads threads: its estimate,
// the executor's own overhead (a worker process) and, with a kept stage
// cache, its decoded image (tmpfs is memory).
func (r *Runner) needAt(t Task, threads int) int64 {
	need := r.estimateAt(t, threads).Total + r.executor().Overhead()
	switch {
	case r.keepsWhole():
		// A kept decoded image is made whole: the file does not stream.
		need = r.estimateAt(t, threads).Whole + r.executor().Overhead() + r.cacheBytes(t)
	case t.whole:
		need = r.estimateAt(t, threads).Whole + r.executor().Overhead()
	}
	return need
}

// admit waits until t fits in the budget and decides its threads
// (budget.Scheduler.Admit; Runner.Threads when set), then sets t's threads
// and its Estimate at them.
func (b *batchRun) admit(t *Task) (budget.Grant, error) {
	r := b.r
	need := func(n int) int64 {
		if r.Threads > 0 {
			n = r.Threads
		}
		return r.needAt(*t, n)
	}
	g, err := r.Scheduler.Admit(b.ctx, need, b.atOnce)
	if err != nil {
		return g, err
	}
	t.threads = g.Threads
	if r.Threads > 0 {
		t.threads = r.Threads
	}
	if n := max(1, t.threads); t.estThreads != 0 && t.estThreads != n {
		t.Estimate, t.estThreads = r.estimateAt(*t, n), n
	}
	if r.keepsWhole() {
		t.Estimate.Total = t.Estimate.Whole // what it was admitted at (needAt)
	}
	return g, nil
}

// keepsWhole reports whether every conversion makes its decoded image
// whole, whatever its plan: a kept stage cache stores it.
func (r *Runner) keepsWhole() bool { return r.CacheDir != "" && r.KeepCache }

// readsCache reports whether t's conversion is given the stage cache: not
// when it was admitted at the estimate of a streamed conversion
// (pipeline.Memory.Whole above Total) and the cache is not kept, since an
// entry left by a kept run would be read whole, beyond what was admitted;
// the file then streams from its raw data.
func (r *Runner) readsCache(t Task) bool {
	return r.CacheDir != "" && (r.KeepCache || t.Estimate.Whole <= t.Estimate.Total)
}

// atOnce returns how many files are expected to run at once once the file
// being admitted starts, free bytes of the budget left beside it: the
// files in flight, it included (their job slots), and the next tasks of
// the queue that would start before any of those ends, taken in queue
// order while a job slot is free and their estimate at one thread fits in
// what is left (the scheduler is FIFO: the first that does not fit stops
// the count). Tasks that will end without converting (Done, Err, over the
// whole budget) are passed by; a task found up to date or locked only
// when its turn comes is counted, so that a miscount gives fewer threads,
// never more.
func (b *batchRun) atOnce(free int64) int {
	n := len(b.slots)
	for _, q := range b.queue {
		if n >= cap(b.slots) {
			break
		}
		t := b.p.Tasks[q.i]
		if t.Done != nil || t.Err != nil {
			continue
		}
		need := b.r.needAt(t, 1)
		if need > b.r.Scheduler.Budget() {
			continue // fails at its turn
		}
		if need > free {
			break
		}
		free -= need
		n++
	}
	return n
}
