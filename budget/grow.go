package budget

// Grow raises the thread count of a running conversion's grant g when
// cores have come free (a file admitted on one thread while others ran
// need not stay on one once they end). The new count is
// ShareThreads(cores, threads held by the other conversions, atOnce) —
// its fair share among the atOnce conversions running (it included), at
// most the cores the others leave free — lowered until the extra bytes it
// needs, need(new) − g.Bytes, fit beside the budget's other holders
// without waiting (the semaphore's TryAcquire, which also never overtakes
// a conversion waiting in Admit). need is the conversion's estimate in
// bytes on t threads, as given to Admit. It never lowers g: it updates
// *g's Threads and Bytes (ReleaseGrant then returns both) and returns the
// threads added, 0 when none (no free core, no room, or no SetCores).
func (s *Scheduler) Grow(g *Grant, atOnce int, need func(threads int) int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cores <= 0 || g.Threads <= 0 {
		return 0
	}
	for t := ShareThreads(s.cores, s.held-g.Threads, atOnce); t > g.Threads; t-- {
		extra := need(t) - g.Bytes
		if extra > 0 && !s.sem.TryAcquire(extra) {
			continue
		}
		extra = max(0, extra)
		added := t - g.Threads
		g.Threads, g.Bytes = t, g.Bytes+extra
		s.held += added
		s.peakHeld = max(s.peakHeld, s.held)
		s.inUse += extra
		s.peak = max(s.peak, s.inUse)
		return added
	}
	return 0
}

// FreeCores returns the cores no admitted conversion holds (SetCores's
// count less the threads of the grants held; 0 without SetCores).
func (s *Scheduler) FreeCores() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(0, s.cores-s.held)
}
