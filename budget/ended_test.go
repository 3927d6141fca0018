package budget

import (
	"context"
	"testing"
)

// TestEndedNotRunning: a conversion whose threads are given back
// (ReleaseThreads: it has ended) no longer counts among those running,
// though its bytes stay held until ReleaseGrant: a file admitted in
// between does not make Stats say one more ran at once than did, and
// every count goes back to nothing.
func TestEndedNotRunning(t *testing.T) {
	s := NewScheduler(1000)
	s.SetCores(2)
	one := func(int) int64 { return 100 }
	atOnce := func(int64) int { return 2 }
	a, err := s.Admit(context.Background(), one, atOnce)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Admit(context.Background(), one, atOnce)
	if err != nil {
		t.Fatal(err)
	}
	s.ReleaseThreads(&a) // a has ended; its slot lets c start
	c, err := s.Admit(context.Background(), one, atOnce)
	if err != nil {
		t.Fatal(err)
	}
	if peak, n := s.Stats(); n != 2 || peak != 300 {
		t.Errorf("Stats: %d bytes, %d at once; want 300 bytes (a's still held), 2 at once", peak, n)
	}
	s.ReleaseGrant(a)
	s.ReleaseThreads(&b)
	s.ReleaseGrant(b)
	s.ReleaseGrant(c) // without ReleaseThreads (admitted again, say)
	s.mu.Lock()
	running, inUse, held := s.running, s.inUse, s.held
	s.mu.Unlock()
	if running != 0 || inUse != 0 || held != 0 {
		t.Errorf("after every release: %d running, %d bytes, %d threads held; want none", running, inUse, held)
	}
}
