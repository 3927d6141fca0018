package budget

import (
	"context"
	"testing"
)

// TestGrowAfterRelease: a conversion admitted on one thread while another
// held the other core gets that core when the other's grant is released
// (Grow), holding its estimate at the new count; Grow never goes above
// the cores, nor above the fair share of the conversions running, nor
// past the budget, and gives nothing while every core is held.
func TestGrowAfterRelease(t *testing.T) {
	ctx := context.Background()
	need := func(t int) int64 { return 100 + 10*int64(t) }
	s := NewScheduler(1000)
	s.SetCores(2)
	two := func(int64) int { return 2 }
	a, err := s.Admit(ctx, need, two)
	if err != nil || a.Threads != 1 {
		t.Fatalf("first: %+v, %v; want 1 thread", a, err)
	}
	b, err := s.Admit(ctx, need, two)
	if err != nil || b.Threads != 1 {
		t.Fatalf("second: %+v, %v; want 1 thread", b, err)
	}
	if n := s.Grow(&b, 2, need); n != 0 || b.Threads != 1 {
		t.Errorf("every core held: Grow added %d, threads %d; want 0, 1", n, b.Threads)
	}
	s.ReleaseGrant(a)
	if s.FreeCores() != 1 {
		t.Errorf("FreeCores %d after a release, want 1", s.FreeCores())
	}
	if n := s.Grow(&b, 1, need); n != 1 || b != (Grant{Bytes: 120, Threads: 2}) {
		t.Errorf("alone after the release: Grow added %d, grant %+v; want 1, {120 2}", n, b)
	}
	if n := s.Grow(&b, 1, need); n != 0 || b.Threads != 2 {
		t.Errorf("at every core: Grow added %d, threads %d; want 0, 2 (never above the cores)", n, b.Threads)
	}
	if peak, _ := s.Stats(); peak != 220 {
		t.Errorf("peak bytes %d, want 220 (both at one thread)", peak)
	}
	s.ReleaseGrant(b)
	if s.FreeCores() != 2 {
		t.Errorf("FreeCores %d after both released, want 2", s.FreeCores())
	}
	if peak, running := s.Stats(); running != 2 || s.PeakThreads() != 2 || peak != 220 {
		t.Errorf("stats %d bytes, %d running, %d threads; want 220, 2, 2", peak, running, s.PeakThreads())
	}
	// The bytes came back too: the whole budget admits again.
	if err := s.Acquire(ctx, 1000); err != nil {
		t.Errorf("the whole budget after the releases: %v", err)
	}
	s.Release(1000)

	// Fair share: of 4 cores with 2 conversions running, 2 each.
	s = NewScheduler(1000)
	s.SetCores(4)
	four := func(int64) int { return 4 }
	var gs []Grant
	for range 4 {
		g, err := s.Admit(ctx, need, four)
		if err != nil || g.Threads != 1 {
			t.Fatalf("admit of 4 on 4 cores: %+v, %v", g, err)
		}
		gs = append(gs, g)
	}
	s.ReleaseGrant(gs[0])
	s.ReleaseGrant(gs[1])
	if n := s.Grow(&gs[2], 2, need); n != 1 || gs[2].Threads != 2 {
		t.Errorf("two running on 4 cores: Grow added %d, threads %d; want 1, 2 (the fair share)", n, gs[2].Threads)
	}

	// The budget: growth that does not fit is lowered, or none.
	s = NewScheduler(125)
	s.SetCores(4)
	g, err := s.Admit(ctx, need, four)
	if err != nil || g.Threads != 1 {
		t.Fatalf("admit in a tight budget: %+v, %v", g, err)
	}
	if n := s.Grow(&g, 1, need); n != 1 || g != (Grant{Bytes: 120, Threads: 2}) {
		t.Errorf("tight budget: Grow added %d, grant %+v; want 1, {120 2} (3 threads need 130 > 125)", n, g)
	}
	if n := s.Grow(&g, 1, need); n != 0 {
		t.Errorf("full budget: Grow added %d, want 0", n)
	}

	// Without SetCores: nothing.
	s = NewScheduler(1000)
	g = Grant{Bytes: 110}
	if n := s.Grow(&g, 1, need); n != 0 || g.Threads != 0 {
		t.Errorf("no cores set: Grow added %d, threads %d", n, g.Threads)
	}
}
