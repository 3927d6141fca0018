package pipeline

import "sync/atomic"

// liveThreads is a conversion's thread count that may grow while it runs
// (ConvertOptions.LiveThreads), and the largest count its steps read
// (Result.ThreadsMax).
type liveThreads struct {
	f   func() int
	max atomic.Int64
}

// threadsNow returns j's thread count now: ConvertOptions.LiveThreads
// when given (never below Threads), else Threads; it records the largest
// count read. Safe for concurrent use.
func (j *job) threadsNow() int {
	n := j.threads
	if j.live.f != nil {
		n = max(n, j.live.f())
	}
	for {
		m := j.live.max.Load()
		if int64(n) <= m || j.live.max.CompareAndSwap(m, int64(n)) {
			return n
		}
	}
}

// peak returns the largest thread count read (threadsNow), at least
// threads.
func (l *liveThreads) peak(threads int) int {
	return max(threads, int(l.max.Load()))
}
