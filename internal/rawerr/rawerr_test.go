package rawerr

import (
	"errors"
	"fmt"
	"os"
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

// TestWithKind: an error given a kind keeps its message and its own type,
// and has the kind (Kind, errors.Is).
func TestWithKind(t *testing.T) {
	cause := &os.PathError{Op: "open", Path: "out/x", Err: os.ErrExist}
	err := WithKind(cause, ErrRefused)
	var pe *os.PathError
	if err.Error() != cause.Error() || !errors.As(err, &pe) || !errors.Is(err, ErrRefused) || Kind(err) != "refused" {
		t.Errorf("WithKind: %q (kind %q); want %q, refused, its *os.PathError", err, Kind(err), cause)
	}
}
