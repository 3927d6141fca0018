package lensfun

/*
#include "rb_lensfun.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
)

// The kinds of lensfun's failures; errors wrap one of them (errors.Is).
var (
	// ErrNoDatabase: lensfun found no database (LF_NO_DATABASE: the
	// system database is not installed, liblensfun-data-v1).
	ErrNoDatabase = errors.New("no lensfun database")
	// ErrFormat: a file is not a lensfun XML database (LF_WRONG_FORMAT).
	ErrFormat = errors.New("not a lensfun database")
	// ErrApply: lensfun refused to compute a correction.
	ErrApply = errors.New("lensfun correction failed")
)

// dbError maps a lensfun lfError of loading what (a file, "the system
// database") to a Go error, nil for LF_NO_ERROR. This, with applyError,
// is the one place where lensfun's codes become Go errors.
func dbError(what string, e C.lfError) error {
	switch e {
	case C.LF_NO_ERROR:
		return nil
	case C.LF_NO_DATABASE:
		return fmt.Errorf("lensfun: %s: %w", what, ErrNoDatabase)
	case C.LF_WRONG_FORMAT:
		if msg := strings.TrimRight(lastMessage(), "\n"); msg != "" {
			return fmt.Errorf("lensfun: %s: %w: %s", what, ErrFormat, msg)
		}
		return fmt.Errorf("lensfun: %s: %w", what, ErrFormat)
	}
	// lensfun 0.3.3 returns -errno for a file it cannot read
	// (lfError (-ENOENT)), which is 4294967294 read as the unsigned enum.
	if n := int32(e); n < 0 {
		return fmt.Errorf("lensfun: %s: %w", what, syscall.Errno(-n))
	}
	return fmt.Errorf("lensfun: %s: error code %d", what, int(e))
}

// applyError is a failed lf_modifier_apply_* call for the correction what.
func applyError(what string) error {
	return fmt.Errorf("lensfun: %s: %w", what, ErrApply)
}
