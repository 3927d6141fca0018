// Package rawerr holds every kind of per-file failure that rawbatch
// reports, as sentinel errors to test with errors.Is, and the one mapping
// between them and their names (Kind, FromKind): the report's "kind",
// failed.jsonl, the dry run's and progress's events and the worker and
// header-helper wire replies all use it. It imports only package budget
// (a leaf, for budget.ErrOverBudget), so every package, including the cgo
// binding, can wrap them.
package rawerr

import (
	"errors"

	"github.com/rawbatch/rawbatch/budget"
)

var (
	// ErrEmpty: the input file has no bytes.
	ErrEmpty = errors.New("empty file")
	// ErrNotRaw: the file's first bytes show another kind of file (text,
	// JPEG, PNG, ...), so it is not a camera RAW container.
	ErrNotRaw = errors.New("not a raw file")
	// ErrUnsupported: a RAW format, variant or compression that the linked
	// LibRaw cannot decode. Not a sign of damage.
	ErrUnsupported = errors.New("unsupported format or compression")
	// ErrCorrupt: the file claims to be a supported RAW but its data is
	// damaged or truncated.
	ErrCorrupt = errors.New("corrupt or truncated data")

	// ErrCrashed: the worker converting a file died of a signal it was
	// not sent by rawbatch (SIGSEGV, SIGBUS, SIGABRT, ...), or was
	// OOM-killed (batch.ErrCrashed).
	ErrCrashed = errors.New("decoder crashed")
	// ErrTimeout: the worker converting a file ran past its timeout and
	// was killed (batch.ErrTimeout).
	ErrTimeout = errors.New("timed out")
	// ErrTransient marks failures worth retrying: no space left on the
	// output device, interrupted or would-block system calls, I/O
	// timeouts (batch.ErrTransient). Its name travels on the worker
	// wire only; the report calls such a failure "error".
	ErrTransient = errors.New("transient failure")
	// ErrNeedsWhole: a conversion admitted at the memory estimate of a
	// streamed conversion found, once its file was read, that it must
	// make the whole image (a fallback to LibRaw's demosaic the header did
	// not predict, a stage cache hit), which its admission does not cover:
	// it stops before allocating it, and the runner admits the file again
	// at its whole-image estimate (pipeline.Memory.Whole) and converts it
	// again. Its name travels on the worker wire only.
	ErrNeedsWhole = errors.New("needs its whole-image memory, more than it was admitted with")
	// ErrNotOurs: an output path holds a file rawbatch did not write
	// (batch.ErrNotOurs).
	ErrNotOurs = errors.New("not written by rawbatch")
	// ErrRecordNotSaved: the file was converted but its up-to-date record
	// could not be saved (batch.ErrRecordNotSaved).
	ErrRecordNotSaved = errors.New("its up-to-date record could not be saved")
	// ErrRefused: a worker of the multi-host mode refused a job whose
	// input or output directory lies outside the directories it is
	// allowed (`rawbatch work --allow`); nothing was read or written.
	ErrRefused = errors.New("refused: outside the worker's allowed directories")
)

// kinds is the one table of kinds and their names, in the order Kind
// tests them (the runner's kinds first: a crash while reading a corrupt
// file is a crash).
var kinds = []struct {
	err  error
	name string
	// wireOnly: FromKind knows the name, Kind does not report it.
	wireOnly bool
}{
	{ErrNotOurs, "not-ours", false},
	{ErrRecordNotSaved, "record-not-saved", false},
	{budget.ErrOverBudget, "over-budget", false},
	{ErrCrashed, "crashed", false},
	{ErrTimeout, "timeout", false},
	{ErrRefused, "refused", false},
	{ErrEmpty, "empty", false},
	{ErrNotRaw, "not-raw", false},
	{ErrUnsupported, "unsupported", false},
	{ErrCorrupt, "corrupt", false},
	{ErrTransient, KindTransient, true},
	{ErrNeedsWhole, KindNeedsWhole, true},
}

// KindTransient is the wire name of ErrTransient (see FromKind).
const KindTransient = "transient"

// KindNeedsWhole is the wire name of ErrNeedsWhole (see FromKind).
const KindNeedsWhole = "needs-whole"

// Kind returns a short machine-readable name of err's kind, as the report
// and failed.jsonl give it: "not-ours", "record-not-saved",
// "over-budget", "crashed", "timeout", "refused", "empty", "not-raw", "unsupported",
// "corrupt", "error" for anything else, and "" for nil.
func Kind(err error) string {
	if err == nil {
		return ""
	}
	for _, k := range kinds {
		if !k.wireOnly && errors.Is(err, k.err) {
			return k.name
		}
	}
	return "error"
}

// Kinds lists every name Kind returns for a non-nil error, as the docs
// list them: the file's own kinds (empty, not-raw, unsupported, corrupt),
// then the runner's, "error" (anything else) last.
func Kinds() []string {
	file := map[error]bool{ErrEmpty: true, ErrNotRaw: true, ErrUnsupported: true, ErrCorrupt: true}
	var names, runner []string
	for _, k := range kinds {
		switch {
		case k.wireOnly:
		case file[k.err]:
			names = append(names, k.name)
		default:
			runner = append(runner, k.name)
		}
	}
	return append(append(names, runner...), "error")
}

// FromKind returns the sentinel error named name by Kind, or ErrTransient
// for KindTransient; nil for "error", "" and unknown names. A worker's
// reply carries the name, and the parent rebuilds the error with it.
func FromKind(name string) error {
	for _, k := range kinds {
		if k.name == name {
			return k.err
		}
	}
	return nil
}

// Code returns the reason code of the first error in err's chain that
// has one (a ReasonCode method), "" when none has. A reason code is a
// short stable name of a failure more specific than its kind (say
// "no-preview", an unsupported failure of a variant made from the
// embedded preview); the worker wire carries it beside the kind and the
// text, so the parent knows the failure by it, not by its wording.
func Code(err error) string {
	var c interface{ ReasonCode() string }
	if errors.As(err, &c) {
		return c.ReasonCode()
	}
	return ""
}

// WithKind returns err with the kind kind (one of the Err values above)
// as well: its message is err's, and it unwraps to both (errors.Is finds
// the kind, errors.As err's own type).
func WithKind(err, kind error) error { return &withKind{err, kind} }

type withKind struct{ err, kind error }

func (e *withKind) Error() string   { return e.err.Error() }
func (e *withKind) Unwrap() []error { return []error{e.err, e.kind} }
