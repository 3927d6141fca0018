package budget

import (
	"context"
	"errors"
	"testing"
)

// TestShareThreads: the fair share of the cores among the conversions
// expected at once, capped by the free cores, never below one.
func TestShareThreads(t *testing.T) {
	for _, c := range []struct{ cores, held, atOnce, want int }{
		{4, 0, 1, 4}, // alone on an idle machine: every core
		{4, 0, 0, 4},
		{4, 0, 2, 2},
		{4, 2, 2, 2},
		{3, 0, 2, 2}, // ⌈3/2⌉: no core left idle
		{3, 2, 2, 1}, // the free core
		{8, 0, 3, 3},
		{8, 6, 3, 2},
		{2, 0, 3, 1},
		{2, 2, 3, 1}, // no core free: still one thread
		{2, 3, 1, 1},
		{0, 0, 1, 1},
	} {
		if got := ShareThreads(c.cores, c.held, c.atOnce); got != c.want {
			t.Errorf("ShareThreads(%d, %d, %d) = %d, want %d", c.cores, c.held, c.atOnce, got, c.want)
		}
	}
}

// TestAdmitThreads: Admit gives a conversion expected to run alone every
// core, shares them among conversions expected together, holds the
// estimate at the thread count it gives (lowering the count until that
// fits), returns both on ReleaseGrant, and gives 0 threads without
// SetCores.
func TestAdmitThreads(t *testing.T) {
	ctx := context.Background()
	need := func(t int) int64 { return 100 + 10*int64(t) } // 10 bytes a thread
	alone := func(int64) int { return 1 }
	s := NewScheduler(1000)
	s.SetCores(4)
	g, err := s.Admit(ctx, need, alone)
	if err != nil || g != (Grant{Bytes: 140, Threads: 4}) {
		t.Fatalf("alone: %+v, %v; want 4 threads, 140 bytes", g, err)
	}
	s.ReleaseGrant(g)

	var sawFree int64
	two := func(free int64) int { sawFree = free; return 2 }
	a, _ := s.Admit(ctx, need, two)
	if a.Threads != 2 || a.Bytes != 120 || sawFree != 1000-110 {
		t.Fatalf("first of two: %+v (free seen %d); want 2 threads, 120 bytes, free 890", a, sawFree)
	}
	b, _ := s.Admit(ctx, need, alone) // alone from now on, but a holds 2 of the 4 cores
	if b.Threads != 2 || b.Bytes != 120 {
		t.Fatalf("second: %+v; want the 2 free cores", b)
	}
	c, _ := s.Admit(ctx, need, alone) // no core free
	if c.Threads != 1 || c.Bytes != 110 {
		t.Fatalf("third: %+v; want 1 thread", c)
	}
	if peak, n := s.Stats(); peak != 350 || n != 3 || s.PeakThreads() != 5 {
		t.Fatalf("stats %d bytes, %d at once, %d threads", peak, n, s.PeakThreads())
	}
	for _, g := range []Grant{a, b, c} {
		s.ReleaseGrant(g)
	}
	if g, _ := s.Admit(ctx, need, alone); g.Threads != 4 {
		t.Fatalf("after the releases: %+v, want all 4 cores back", g)
	}

	// The estimate at 4 threads (140) does not fit a budget of 135: 3
	// threads (130) do.
	s = NewScheduler(135)
	s.SetCores(4)
	if g, err := s.Admit(ctx, need, alone); err != nil || g != (Grant{Bytes: 130, Threads: 3}) {
		t.Fatalf("tight budget: %+v, %v; want 3 threads, 130 bytes", g, err)
	}
	// Over the budget at one thread: fails at once.
	s = NewScheduler(105)
	s.SetCores(4)
	if _, err := s.Admit(ctx, need, alone); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("over budget: %v", err)
	}
	// No cores shared: Threads 0, the estimate at one thread.
	s = NewScheduler(1000)
	if g, err := s.Admit(ctx, need, alone); err != nil || g != (Grant{Bytes: 110}) {
		t.Fatalf("no cores: %+v, %v", g, err)
	}
}

// TestReleaseThreads: the threads of a grant go back alone (its bytes
// stay held), and ReleaseGrant then returns only the bytes.
func TestReleaseThreads(t *testing.T) {
	s := NewScheduler(100)
	s.SetCores(2)
	g, err := s.Admit(context.Background(), func(int) int64 { return 40 }, func(int64) int { return 1 })
	if err != nil || g.Threads != 2 {
		t.Fatalf("Admit = %+v, %v; want 2 threads", g, err)
	}
	s.ReleaseThreads(&g)
	if g.Threads != 0 || s.FreeCores() != 2 || s.InUse() != 40 {
		t.Fatalf("after ReleaseThreads: grant %+v, %d cores free, %d bytes in use; want 0 threads, 2 free, 40 bytes", g, s.FreeCores(), s.InUse())
	}
	s.ReleaseGrant(g)
	if s.FreeCores() != 2 || s.InUse() != 0 {
		t.Fatalf("after ReleaseGrant: %d cores free, %d bytes in use; want 2, 0", s.FreeCores(), s.InUse())
	}
}
