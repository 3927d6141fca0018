package lock

import (
	"errors"
	"slices"
	"sync"
)

// Set is a group of locks held together (TryLockAll). Its methods are safe
// for concurrent use.
type Set struct {
	mu    sync.Mutex
	locks []*Lock
}

// TryLockAll takes the locks of every key without blocking: the keys are
// sorted and deduplicated, then locked one by one in that order, each with
// note and doing in its holder record (Holder.Note, Holder.Doing). If one
// is held by someone else, the locks already taken are released and the
// *LockedError of the held key is returned (errors.Is(err, ErrLocked));
// other errors are those of TryLock, with nothing held either. Since every
// locker takes keys in the same order and gives up everything on the first
// held one, two lockers of overlapping key sets never deadlock; one of
// them gets them all. An empty keys holds nothing and succeeds.
func (d *Dir) TryLockAll(keys []string, note, doing string) (*Set, error) {
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	s := &Set{}
	for _, k := range keys {
		l, err := d.tryLock(k, note, doing)
		if err != nil {
			s.Unlock()
			return nil, err
		}
		s.locks = append(s.locks, l)
	}
	return s, nil
}

// Keys returns the keys held, in the order they were locked.
func (s *Set) Keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var k []string
	for _, l := range s.locks {
		k = append(k, l.Key())
	}
	return k
}

// Unlock releases every lock of the set, the last taken first (see
// Lock.Unlock). It returns the errors joined; a second Unlock does nothing
// and returns nil.
func (s *Set) Unlock() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for i := len(s.locks) - 1; i >= 0; i-- {
		if err := s.locks[i].Unlock(); err != nil && !errors.Is(err, errUnlocked) {
			errs = append(errs, err)
		}
	}
	s.locks = nil
	return errors.Join(errs...)
}
