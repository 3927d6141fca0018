package batch

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rawbatch/rawbatch/budget"
)

// Threads that grow when cores free up. A file admitted while
// others held the cores runs on fewer threads than its share; when a file
// ends and no file is left to start (the queue is empty: a file still to
// start takes the freed cores at its admission), the freed cores are
// offered to the conversions in flight, the one on the fewest threads
// first (among equals the one admitted first): each grows to its fair
// share among those running, at most the cores free
// (budget.Scheduler.Grow, which also holds its estimate at the new count
// in the budget, or grows it less, or not, when that does not fit), and
// its executor is told (Job.MoreThreads). With Runner.Threads set, counts
// stay fixed (the scheduler shares no cores).

// growing is a conversion in flight: its grant (updated as it grows), its
// need at t threads (as admitted), its admission order and the channel
// that tells its executor a raised count (buffered: the latest count).
type growing struct {
	input string
	g     budget.Grant
	need  func(threads int) int64
	seq   int
	more  chan int
}

// growState is a Run's conversions in flight, and how many tasks are
// still to start (the Run loop's queue, the one being admitted included).
type growState struct {
	mu      sync.Mutex
	running []*growing
	seq     int
	waiting atomic.Int64
}

// track registers the conversion of t admitted with g, and gives t the
// channel its Job tells raised counts on (Task.more).
func (b *batchRun) track(t *Task, g budget.Grant) *growing {
	r := b.r
	tc := *t
	c := &growing{input: t.Input, g: g, more: make(chan int, 1), need: func(n int) int64 { return r.needAt(tc, n) }}
	b.grow.mu.Lock()
	b.grow.seq++
	c.seq = b.grow.seq
	b.grow.running = append(b.grow.running, c)
	b.grow.mu.Unlock()
	t.more = c.more
	return c
}

// release returns c's grant (at the threads it grew to) and offers the
// cores it frees to the conversions still in flight (offer).
func (b *batchRun) release(c *growing) {
	b.grow.mu.Lock()
	b.grow.running = slices.DeleteFunc(b.grow.running, func(x *growing) bool { return x == c })
	b.r.Scheduler.ReleaseGrant(c.g)
	b.grow.mu.Unlock()
	b.offer()
	if releasedHook != nil {
		releasedHook(c.input)
	}
}

// releaseThreads returns c's threads to the scheduler, before its job
// slot lets the next file start (start); its bytes stay held until
// release.
func (b *batchRun) releaseThreads(c *growing) {
	b.grow.mu.Lock()
	b.r.Scheduler.ReleaseThreads(&c.g)
	b.grow.mu.Unlock()
}

// releasedHook, when set (tests), is called with a conversion's input
// once its grant is released and its cores offered (release).
var releasedHook func(input string)

// setWaiting records how many tasks are still to start (Run's loop).
func (b *batchRun) setWaiting(n int) { b.grow.waiting.Store(int64(n)) }

// offer gives free cores to the conversions in flight, fewest threads
// first, when no task is waiting to start.
func (b *batchRun) offer() {
	if b.grow.waiting.Load() > 0 {
		return
	}
	b.grow.mu.Lock()
	defer b.grow.mu.Unlock()
	if b.r.Scheduler.FreeCores() == 0 {
		return
	}
	order := slices.Clone(b.grow.running)
	slices.SortFunc(order, func(x, y *growing) int {
		if x.g.Threads != y.g.Threads {
			return x.g.Threads - y.g.Threads
		}
		return x.seq - y.seq
	})
	n := len(order)
	for _, c := range order {
		if b.r.Scheduler.Grow(&c.g, n, c.need) == 0 {
			continue
		}
		select { // only the latest count matters
		case <-c.more:
		default:
		}
		c.more <- c.g.Threads
	}
}

// threadsNow returns the threads c holds now.
func (b *batchRun) threadsNow(c *growing) int {
	b.grow.mu.Lock()
	defer b.grow.mu.Unlock()
	return c.g.Threads
}

// heldBytes returns the bytes c holds now in the budget: Runner.Need at
// the threads it holds.
func (b *batchRun) heldBytes(c *growing) int64 {
	b.grow.mu.Lock()
	defer b.grow.mu.Unlock()
	return c.g.Bytes
}
