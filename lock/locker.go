package lock

import (
	"context"
	"errors"
	"time"
)

// Locker gives out exclusive locks by key (rawbatch takes one per output
// path, all of a file's at once). Dir's flock locks are one implementation
// (Dir.Locker); a lease store shared by several hosts is another kind it
// admits.
//
// What every Locker promises:
//
//   - Exclusive per key while held: from a successful TryLockAll (or
//     Lock) until its Held is unlocked, no other Held for any of its keys
//     exists, whoever asks (another goroutine, process or host sharing the
//     Locker's store).
//   - All or nothing: TryLockAll holds every key or none; a key held by
//     someone else gives a *LockedError naming that key and its Holder
//     (errors.Is(err, ErrLocked)), and any other error holds nothing
//     either.
//   - Released when the holder dies: flock's locks are dropped by the
//     kernel the moment the holding process exits or is killed; a lease
//     would end at its deadline unless renewed, so a holder that may run
//     past it must renew it (or give up its work) before then.
//   - Unlock releases every key of the Held; a second Unlock does nothing
//     and returns nil.
//
// Implementations are safe for concurrent use.
type Locker interface {
	// TryLockAll takes the locks of every key without blocking (keys are
	// sorted and deduplicated; an empty list holds nothing and succeeds),
	// each with note (Holder.Note, for lockers deciding whether to wait)
	// and doing (Holder.Doing, for messages) in its holder record.
	TryLockAll(keys []string, note, doing string) (Held, error)
	// Lock takes the lock of key, retrying with Backoff while it is held,
	// until wait has elapsed (0: one try) or ctx ends (ctx.Err()).
	Lock(ctx context.Context, key string, wait time.Duration) (Held, error)
}

// Held is one or more locks held together, from a Locker.
type Held interface {
	// Keys returns the keys held, in the order they were locked.
	Keys() []string
	// Unlock releases every lock held, the last taken first. A second
	// Unlock does nothing and returns nil.
	Unlock() error
}

// Locker returns d as a Locker: one flock(2) per key on a file of d.
func (d *Dir) Locker() Locker { return flockLocker{d} }

// flockLocker is the Locker of a Dir.
type flockLocker struct{ d *Dir }

func (f flockLocker) TryLockAll(keys []string, note, doing string) (Held, error) {
	s, err := f.d.TryLockAll(keys, note, doing)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (f flockLocker) Lock(ctx context.Context, key string, wait time.Duration) (Held, error) {
	l, err := f.d.Lock(ctx, key, wait)
	if err != nil {
		return nil, err
	}
	return heldOne{l}, nil
}

// heldOne is a single Lock as a Held.
type heldOne struct{ l *Lock }

func (h heldOne) Keys() []string { return []string{h.l.Key()} }

func (h heldOne) Unlock() error {
	if err := h.l.Unlock(); !errors.Is(err, errUnlocked) {
		return err
	}
	return nil
}
