package lock

import (
	"errors"
	"testing"
)

func TestTryLockAll(t *testing.T) {
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, err := d.TryLockAll([]string{"b", "a", "b"}, "note-a", "converting a")
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Keys(); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("keys %q, want [a b] (sorted, deduplicated)", got)
	}
	// A set sharing one key fails, naming the holder, and holds nothing.
	_, err = d.TryLockAll([]string{"c", "b"}, "note-b", "")
	var le *LockedError
	if !errors.As(err, &le) || le.Key != "b" || le.Holder.Note != "note-a" || le.Holder.Doing != "converting a" {
		t.Fatalf("err %v (%+v), want b locked by note-a", err, le)
	}
	c, err := d.TryLock("c")
	if err != nil {
		t.Fatalf("c still held after a failed TryLockAll: %v", err)
	}
	c.Unlock()
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(); err != nil {
		t.Fatalf("second Unlock: %v", err)
	}
	b, err := d.TryLockAll([]string{"c", "b"}, "", "")
	if err != nil {
		t.Fatalf("after Unlock: %v", err)
	}
	b.Unlock()
}
