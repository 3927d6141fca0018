package rawerr

import (
	"errors"
	"fmt"
	"testing"

	"github.com/rawbatch/rawbatch/budget"
)

// TestKindRoundTrip: every kind's name maps back to its sentinel (the
// worker wire), a wrapped sentinel keeps its name, a transient failure is
// reported as "error", and a crash while reading a corrupt file is a
// crash.
func TestKindRoundTrip(t *testing.T) {
	for _, k := range kinds {
		if got := FromKind(k.name); got != k.err {
			t.Errorf("FromKind(%q) = %v, want %v", k.name, got, k.err)
		}
		want := k.name
		if k.wireOnly {
			want = "error"
		}
		if got := Kind(fmt.Errorf("x.dng: %w", k.err)); got != want {
			t.Errorf("Kind(wrapped %v) = %q, want %q", k.err, got, want)
		}
	}
	if Kind(nil) != "" || Kind(errors.New("other")) != "error" || FromKind("error") != nil || FromKind("") != nil {
		t.Error("nil, other errors or unknown names")
	}
	if got := Kind(fmt.Errorf("%w: %w", ErrCrashed, ErrCorrupt)); got != "crashed" {
		t.Errorf("crash on a corrupt file: %q", got)
	}
	if got := Kind(budget.ErrOverBudget); got != "over-budget" {
		t.Errorf("over budget: %q", got)
	}
}
