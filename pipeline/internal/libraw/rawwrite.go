package libraw

// Writing the visible area of the unpacked raw CFA data back, for the DNG
// opcode stage that applies GainMap to the CFA.

/*
#include "rb_libraw.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// StoreRaw writes src (the visible area, width × height photosites as
// RawSize gives them, row-major, raw DN including the black level) into
// the unpacked raw data in place of what CopyRaw read. Call after Unpack
// and before Process. Errors: ErrNoCFA, ErrWrongThread, a src of another
// size.
func (h *Handle) StoreRaw(src []uint16) error {
	w, h2, err := h.RawSize()
	if err != nil {
		return err
	}
	if len(src) != w*h2 {
		return fmt.Errorf("libraw: %d raw values for a %d×%d visible area", len(src), w, h2)
	}
	if len(src) > 0 {
		C.rb_raw_store(h.lr, (*C.ushort)(unsafe.Pointer(&src[0])))
	}
	return nil
}

// RawMargins returns the top and left margins of the visible area in the
// stored raw image (rawdata.sizes.top_margin, left_margin) in photosites,
// and the stored raw size (raw_width, raw_height). Errors: ErrNoCFA,
// ErrWrongThread.
func (h *Handle) RawMargins() (top, left, rawW, rawH int, err error) {
	if err := h.checkRaw(); err != nil {
		return 0, 0, 0, 0, err
	}
	s := &h.lr.rawdata.sizes
	return int(s.top_margin), int(s.left_margin), int(s.raw_width), int(s.raw_height), nil
}
