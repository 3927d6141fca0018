package pipeline

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/pipeline/rawerr"
)

// TestFailureKinds: every sentinel with a kind maps to its kind when
// wrapped, each kind of FailureKinds is reached, and nothing else is
// returned.
func TestFailureKinds(t *testing.T) {
	sentinels := []error{ErrNotOurs, ErrRecordNotSaved, budget.ErrOverBudget, ErrCrashed, ErrTimeout,
		rawerr.ErrEmpty, rawerr.ErrNotRaw, rawerr.ErrUnsupported, rawerr.ErrCorrupt, errors.New("other")}
	kinds := FailureKinds()
	seen := map[string]bool{}
	for _, e := range sentinels {
		k := errKind(fmt.Errorf("in/a.dng: %w", e))
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
	if errKind(nil) != "" {
		t.Error("nil has a kind")
	}
}
