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
	e := &Error{Op: op, Code: int(rc), Msg: C.GoString(C.libraw_strerror(rc)), kind: codeKind(int(rc))}
	if e.kind == rawerr.ErrUnsupported {
		e.Msg = "not supported by LibRaw " + ShortVersion()
	}
	if h.ctl != nil && h.ctl.data_errors > 0 && e.kind != ErrCancelled && e.kind != rawerr.ErrUnsupported {
		e.kind = rawerr.ErrCorrupt
		e.Msg += dataErrorDetail(int(h.ctl.data_offset))
	}
	return e
}

// LibRaw's return codes that codeKind maps.
const (
	codeUnspecified     = int(C.LIBRAW_UNSPECIFIED_ERROR)
	codeUnsupported     = int(C.LIBRAW_FILE_UNSUPPORTED)
	codeNotImplemented  = int(C.LIBRAW_NOT_IMPLEMENTED)
	codeNoImage         = int(C.LIBRAW_REQUEST_FOR_NONEXISTENT_IMAGE)
	codeOutOfOrder      = int(C.LIBRAW_OUT_OF_ORDER_CALL)
	codeInputClosed     = int(C.LIBRAW_INPUT_CLOSED)
	codeNoMemory        = int(C.LIBRAW_UNSUFFICIENT_MEMORY)
	codeDataError       = int(C.LIBRAW_DATA_ERROR)
	codeIOError         = int(C.LIBRAW_IO_ERROR)
	codeCancelled       = int(C.LIBRAW_CANCELLED_BY_CALLBACK)
	codeBadCrop         = int(C.LIBRAW_BAD_CROP)
	codeTooBig          = int(C.LIBRAW_TOO_BIG)
	codeMempoolOverflow = int(C.LIBRAW_MEMPOOL_OVERFLOW)
)

// codeKind is the error kind of LibRaw's return code rc: ErrUnsupported,
// ErrCorrupt, ErrCancelled, or nil (a plain error: LibRaw ran out of
// memory, or a code of no known cause).
//
// rawbatch calls LibRaw's functions in their order (open, unpack,
// process, ...), so an "out of order call", an "unspecified error", a
// closed input stream or an overflowed memory pool comes from the file's
// data having left LibRaw's state inconsistent (an open that succeeded
// on a damaged header, a decoder that gave up without a code): corrupt.
func codeKind(rc int) error {
	switch rc {
	case codeUnsupported, codeNotImplemented:
		return rawerr.ErrUnsupported
	case codeDataError, codeIOError, codeNoImage, codeTooBig, codeBadCrop,
		codeOutOfOrder, codeUnspecified, codeInputClosed, codeMempoolOverflow:
		return rawerr.ErrCorrupt
	case codeCancelled:
		return ErrCancelled
	}
	return nil
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

// levelsError is an ErrCorrupt error when the black level in c (black,
// plus the largest of the per-colour cblack[0..3] and of the cblack[6..]
// pattern) lies above the white level (maximum) or above the 16-bit
// sample range: no sample could then be brighter than black. Such levels
// come from a damaged header (a Sony ARW whose raw tile header is
// overwritten reads a black level of 2^27 with a white level of 4095).
func levelsError(op string, c *C.libraw_colordata_t) error {
	black := int64(c.black)
	var most int64
	for k := range 4 {
		most = max(most, int64(c.cblack[k]))
	}
	rows, cols := int64(c.cblack[4]), int64(c.cblack[5])
	if rows > 0 && cols > 0 && rows*cols <= C.LIBRAW_CBLACK_SIZE-6 {
		for i := range rows * cols {
			most = max(most, int64(c.cblack[6+i]))
		}
	}
	black += most
	white := int64(c.maximum)
	switch {
	case black > 65535:
		return &Error{Op: op, Msg: fmt.Sprintf("black level %d beyond the 16-bit sample range", black), kind: rawerr.ErrCorrupt}
	case white > 0 && black > white:
		return &Error{Op: op, Msg: fmt.Sprintf("black level %d above the white level %d", black, white), kind: rawerr.ErrCorrupt}
	}
	return nil
}
