package lock

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// testLockerContract checks what every Locker promises (see Locker) on
// two Lockers a and b of one store, as two runs would have them.
func testLockerContract(t *testing.T, a, b Locker) {
	t.Helper()
	h, err := a.TryLockAll([]string{"y.jpg", "x.jpg", "y.jpg"}, "note-a", "converting in/x.dng")
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Keys(); !slices.Equal(got, []string{"x.jpg", "y.jpg"}) {
		t.Errorf("keys %q, want sorted and deduplicated", got)
	}
	// Exclusive per key: b gets none of an overlapping set, and learns
	// who holds the key.
	_, err = b.TryLockAll([]string{"w.jpg", "y.jpg"}, "note-b", "")
	var le *LockedError
	if !errors.Is(err, ErrLocked) || !errors.As(err, &le) || le.Key != "y.jpg" || le.Holder.Note != "note-a" || le.Holder.Doing != "converting in/x.dng" {
		t.Fatalf("overlapping TryLockAll: %v (%+v), want a *LockedError for y.jpg naming the holder", err, le)
	}
	// All or nothing: w.jpg, taken before y.jpg failed, is free again.
	if _, err := b.Lock(context.Background(), "w.jpg", 0); err != nil {
		t.Errorf("w.jpg after a failed TryLockAll: %v, want free", err)
	}
	if _, err := b.Lock(context.Background(), "x.jpg", 0); !errors.Is(err, ErrLocked) {
		t.Errorf("Lock of a held key: %v, want ErrLocked", err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := h.Unlock(); err != nil {
		t.Errorf("second Unlock: %v, want nil", err)
	}
	h2, err := b.TryLockAll([]string{"x.jpg", "y.jpg"}, "", "")
	if err != nil {
		t.Fatalf("after Unlock: %v, want the keys free", err)
	}
	h2.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.Lock(ctx, "z.jpg", 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Lock with an ended ctx: %v, want context.Canceled", err)
	}
}

// TestFlockLockerContract: a Dir's Locker keeps the Locker promises
// between two opens of one lock directory (the release at a holder's
// death, across processes, is TestCrossProcess's).
func TestFlockLockerContract(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	testLockerContract(t, a.Locker(), b.Locker())
}
