package budget

import "context"

// ShareThreads returns the thread count of a conversion admitted when held
// of cores threads are already taken by the conversions running, and
// atOnce conversions (this one included) are expected to run at once: its
// fair share ⌈cores/atOnce⌉, at most the cores still free, and at least 1
// (a conversion admitted when every core is taken still runs, on one
// thread). A conversion expected to run alone (atOnce ≤ 1) on an idle
// machine gets every core. cores < 1 counts as 1.
func ShareThreads(cores, held, atOnce int) int {
	cores = max(1, cores)
	share := (cores + max(1, atOnce) - 1) / max(1, atOnce)
	return max(1, min(share, cores-held))
}

// Grant is what Admit gave one conversion: the bytes it holds in the
// budget (its estimate at Threads) and its thread count (0 when the
// scheduler shares no cores: SetCores was not called).
type Grant struct {
	Bytes   int64
	Threads int
	// ended: its conversion has ended (ReleaseThreads), so it no longer
	// counts among the conversions running, though its bytes are held
	// until ReleaseGrant.
	ended bool
}

// SetCores makes Admit decide each conversion's thread count from n cores
// shared by the conversions running (ShareThreads); 0 (the default) gives
// Threads 0. Call it before the first Admit.
func (s *Scheduler) SetCores(n int) {
	s.mu.Lock()
	s.cores = max(0, n)
	s.mu.Unlock()
}

// Admit admits one conversion into the budget and decides its threads.
// need(t) is the conversion's estimate in bytes when it runs on t threads
// (t ≥ 1; non-decreasing in t). Admit waits, in request order as Acquire,
// until need(1) fits beside the conversions running, or ctx ends (a need(1)
// larger than the whole budget fails at once with an *OverBudgetError).
// Once need(1) is admitted it calls atOnce(free), free being the bytes of
// the budget left beside it, for the number of conversions expected to run
// at once from now on, this one included (the caller looks ahead in its
// queue; fewer than are running counts as those running). The threads are
// ShareThreads(cores, threads held by the running conversions, that
// number); if need(threads) does not fit beside the others the count is
// lowered until it does, so the bytes held are always the estimate at the
// thread count given. Both are held until Release of the Grant.
func (s *Scheduler) Admit(ctx context.Context, need func(threads int) int64, atOnce func(free int64) int) (Grant, error) {
	min1 := need(1)
	if min1 > s.budget {
		return Grant{}, &OverBudgetError{Need: min1, Budget: s.budget}
	}
	if err := s.sem.Acquire(ctx, min1); err != nil {
		return Grant{}, err
	}
	s.mu.Lock()
	free, running := s.budget-s.inUse-min1, s.running+1
	s.mu.Unlock()
	n := max(running, atOnce(free))
	s.mu.Lock()
	defer s.mu.Unlock()
	g := Grant{Bytes: min1}
	if s.cores > 0 {
		g.Threads = ShareThreads(s.cores, s.held, n)
		for ; g.Threads > 1; g.Threads-- {
			extra := need(g.Threads) - min1
			if extra <= 0 || s.sem.TryAcquire(extra) {
				g.Bytes += max(0, extra)
				break
			}
		}
	}
	s.held += g.Threads
	s.peakHeld = max(s.peakHeld, s.held)
	s.inUse += g.Bytes
	s.peak = max(s.peak, s.inUse)
	s.running++
	s.maxN = max(s.maxN, s.running)
	return g, nil
}

// ReleaseGrant returns what Admit gave: the bytes and the threads.
func (s *Scheduler) ReleaseGrant(g Grant) {
	s.mu.Lock()
	s.held -= g.Threads
	s.mu.Unlock()
	n := 1
	if g.ended {
		n = 0 // taken off those running when it ended (ReleaseThreads)
	}
	s.release(g.Bytes, n)
}

// ReleaseThreads returns the threads of *g alone (its bytes stay held
// until ReleaseGrant, which then returns only them): a conversion that
// has ended gives its cores back before it lets the next file start, so
// that the next one's threads do not count cores no one uses any more.
func (s *Scheduler) ReleaseThreads(g *Grant) {
	s.mu.Lock()
	s.held -= g.Threads
	g.Threads = 0
	if !g.ended {
		// Its conversion has ended: no longer one of those running (the
		// count of Stats and of the next Admit's threads), though its
		// bytes are held until ReleaseGrant.
		g.ended = true
		s.running--
	}
	s.mu.Unlock()
}

// PeakThreads returns the largest sum of the threads of the conversions
// admitted at once (through Admit).
func (s *Scheduler) PeakThreads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peakHeld
}
