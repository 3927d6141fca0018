// Package budget runs as many conversions at once as fit in a memory
// budget (Scheduler), giving each its share of the cores as it starts
// (Scheduler.Admit, ShareThreads) and more when cores free up
// (Scheduler.Grow), and reads, parses and prints byte sizes. It imports
// nothing else of rawbatch; what one conversion needs is estimated by the
// caller (package pipeline: EstimateMemory, from its stages' declared
// costs).
package budget

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/semaphore"
)

// ErrOverBudget: a conversion's estimate exceeds the whole budget, so it
// can never start.
var ErrOverBudget = errors.New("over the memory budget")

// OverBudgetError is returned by Acquire for a request larger than the
// budget; it unwraps to ErrOverBudget.
type OverBudgetError struct {
	Need, Budget int64 // bytes
	// HalfSize: the conversion already decodes at half size, so the
	// message does not suggest --half-size.
	HalfSize bool
	// HalfNeed is the estimate in bytes of the conversion decoded at
	// half size (--half-size), when that fits in the budget and is less
	// than Need: the message suggests it. 0: it would not help.
	HalfNeed int64
}

// Error names both sizes for people (FormatSize), in bytes when the two
// would read the same.
func (e *OverBudgetError) Error() string {
	need, budget := FormatSize(e.Need), FormatSize(e.Budget)
	if need == budget {
		need, budget = fmt.Sprintf("%d bytes", e.Need), fmt.Sprintf("%d bytes", e.Budget)
	}
	what := "raise --mem-budget"
	switch {
	case e.HalfSize:
		what += "; it is already decoded at half size"
	case e.HalfNeed > 0:
		what += ", or use --half-size (an estimated " + FormatSize(e.HalfNeed) + ")"
	}
	return fmt.Sprintf("%s: needs an estimated %s, the budget is %s (%s)", ErrOverBudget, need, budget, what)
}

func (e *OverBudgetError) Unwrap() error { return ErrOverBudget }

// Scheduler admits conversions while the sum of their estimates fits in a
// byte budget, through a weighted semaphore. Requests are served in the
// order they are made (golang.org/x/sync/semaphore is FIFO), so a large
// request waits for room without being overtaken by smaller ones behind it:
// files start in the order the caller asks for them (the runner asks
// largest first) and large files are not starved. With
// SetCores it also shares the machine's cores: Admit decides each
// conversion's thread count as it admits it (ShareThreads).
type Scheduler struct {
	sem    *semaphore.Weighted
	budget int64

	mu             sync.Mutex
	inUse, peak    int64
	running, maxN  int
	cores          int // shared by Admit (SetCores); 0: none
	held, peakHeld int // threads of the conversions admitted (Admit)
}

// NewScheduler returns a scheduler for a budget in bytes.
func NewScheduler(budget int64) *Scheduler {
	return &Scheduler{sem: semaphore.NewWeighted(budget), budget: budget}
}

// Budget returns the budget in bytes.
func (s *Scheduler) Budget() int64 { return s.budget }

// Acquire waits until need bytes fit, or ctx ends. A need larger than the
// whole budget fails at once with an *OverBudgetError.
func (s *Scheduler) Acquire(ctx context.Context, need int64) error {
	if need > s.budget {
		return &OverBudgetError{Need: need, Budget: s.budget}
	}
	if err := s.sem.Acquire(ctx, need); err != nil {
		return err
	}
	s.mu.Lock()
	s.inUse += need
	s.peak = max(s.peak, s.inUse)
	s.running++
	s.maxN = max(s.maxN, s.running)
	s.mu.Unlock()
	return nil
}

// Release returns need bytes acquired by Acquire.
func (s *Scheduler) Release(need int64) { s.release(need, 1) }

// release returns need bytes and takes n conversions (0 or 1) off those
// running.
func (s *Scheduler) release(need int64, n int) {
	s.mu.Lock()
	s.inUse -= need
	s.running -= n
	s.mu.Unlock()
	s.sem.Release(need)
}

// InUse returns the bytes held now by the conversions admitted.
func (s *Scheduler) InUse() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inUse
}

// Stats returns the largest sum of estimates admitted at once (bytes) and
// the largest number of conversions running at once.
func (s *Scheduler) Stats() (peakBytes int64, peakRunning int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak, s.maxN
}
