package libraw

/*
#include "rb_libraw.h"
*/
import "C"

import (
	"errors"
	"fmt"

	"github.com/rawbatch/rawbatch/internal/rawerr"
)

// ErrCancelled is wrapped by errors of calls stopped through Cancel.
var ErrCancelled = errors.New("cancelled")

// Error is a failed LibRaw call. It unwraps to one of rawerr's kinds
// (ErrUnsupported, ErrCorrupt), to ErrCancelled, or to nothing for other
// failures, so callers test it with errors.Is.
type Error struct {
	Op   string // "open", "unpack", "process", ...
	Code int    // LibRaw return code (LibRaw_errors), 0 for data errors
	// Msg is the reason in words: libraw_strerror for codes, a description
	// for data errors.
	Msg  string
	kind error
}

func (e *Error) Error() string {
	switch {
	case e.kind == rawerr.ErrUnsupported:
		return fmt.Sprintf("%s: %s", e.kind, e.Msg) // Msg names the LibRaw version
	case e.kind != nil && e.kind != ErrCancelled:
		return fmt.Sprintf("%s: %s (LibRaw %s, %s)", e.kind, e.Msg, ShortVersion(), e.Op)
	}
	return fmt.Sprintf("LibRaw %s: %s: %s", ShortVersion(), e.Op, e.Msg)
}

func (e *Error) Unwrap() error { return e.kind }

// codeError maps a LibRaw return code to an Error. This, with dataError, is
// the one place where LibRaw's codes become Go errors.
func (h *Handle) codeError(op string, rc C.int) error {
	e := &Error{Op: op, Code: int(rc), Msg: C.GoString(C.libraw_strerror(rc))}
	switch rc {
	case C.LIBRAW_FILE_UNSUPPORTED, C.LIBRAW_NOT_IMPLEMENTED:
		e.kind = rawerr.ErrUnsupported
		e.Msg = "not supported by LibRaw " + ShortVersion()
	case C.LIBRAW_DATA_ERROR, C.LIBRAW_IO_ERROR, C.LIBRAW_REQUEST_FOR_NONEXISTENT_IMAGE,
		C.LIBRAW_TOO_BIG, C.LIBRAW_BAD_CROP:
		e.kind = rawerr.ErrCorrupt
	case C.LIBRAW_CANCELLED_BY_CALLBACK:
		e.kind = ErrCancelled
	}
	if h.ctl != nil && h.ctl.data_errors > 0 && e.kind != ErrCancelled && e.kind != rawerr.ErrUnsupported {
		e.kind = rawerr.ErrCorrupt
		e.Msg += dataErrorDetail(int(h.ctl.data_offset))
	}
	return e
}

// dataError turns calls of LibRaw's data-error callback during op into an
// ErrCorrupt error: LibRaw can return LIBRAW_SUCCESS on truncated or damaged
// data and report it only through that callback.
func (h *Handle) dataError(op string) error {
	if h.ctl == nil || h.ctl.data_errors == 0 {
		return nil
	}
	return &Error{Op: op, Msg: "damaged data" + dataErrorDetail(int(h.ctl.data_offset)), kind: rawerr.ErrCorrupt}
}

func dataErrorDetail(off int) string {
	if off < 0 {
		return ": unexpected end of file"
	}
	return fmt.Sprintf(" at offset %d", off)
}
