package batch

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/lock"
)

// TestFailureKinds: every sentinel with a kind maps to its kind when
// wrapped, each kind of FailureKinds is reached, and nothing else is
// returned.
func TestFailureKinds(t *testing.T) {
	sentinels := []error{ErrNotOurs, ErrRecordNotSaved, budget.ErrOverBudget, ErrCrashed, ErrTimeout,
		rawerr.ErrRefused, rawerr.ErrEmpty, rawerr.ErrNotRaw, rawerr.ErrUnsupported, rawerr.ErrCorrupt, errors.New("other")}
	kinds := FailureKinds()
	seen := map[string]bool{}
	for _, e := range sentinels {
		k := FailureKind(fmt.Errorf("in/a.dng: %w", e))
		if !slices.Contains(kinds, k) {
			t.Errorf("%v: kind %q is not in FailureKinds %v", e, k, kinds)
		}
		if seen[k] {
			t.Errorf("%v: kind %q given to two sentinels", e, k)
		}
		seen[k] = true
	}
	for _, k := range kinds {
		if !seen[k] {
			t.Errorf("kind %q of FailureKinds is never returned", k)
		}
	}
	if FailureKind(nil) != "" {
		t.Error("nil has a kind")
	}
}

// TestDurationText: durations in messages are rounded as elsewhere.
func TestDurationText(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0 s", 100 * time.Microsecond: "0 s", 300 * time.Millisecond: "300 ms", 999*time.Millisecond + 600*time.Microsecond: "1 s",
		1001 * time.Millisecond: "1 s", 2500 * time.Millisecond: "2.5 s", 63 * time.Second: "63 s",
	} {
		if got := durationText(d); got != want {
			t.Errorf("durationText(%v) = %q, want %q", d, got, want)
		}
	}
	le := &lock.LockedError{}
	if got := lockedOtherErr(le, 1001*time.Millisecond).Error(); !strings.Contains(got, "gave up after waiting 1 s (--lock-wait)") {
		t.Errorf("lockedOtherErr: %q", got)
	}
}
