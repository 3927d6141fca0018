// Package rawerr holds the kinds of per-file failure that rawbatch reports,
// as sentinel errors to test with errors.Is. It imports nothing of ours so
// every package, including the cgo binding, can wrap them.
package rawerr

import "errors"

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
)

// Kind returns a short machine-readable name of err's kind: "empty",
// "not-raw", "unsupported", "corrupt", or "error" for anything else.
func Kind(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrEmpty):
		return "empty"
	case errors.Is(err, ErrNotRaw):
		return "not-raw"
	case errors.Is(err, ErrUnsupported):
		return "unsupported"
	case errors.Is(err, ErrCorrupt):
		return "corrupt"
	}
	return "error"
}
