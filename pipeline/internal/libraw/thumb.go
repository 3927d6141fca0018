package libraw

/*
#include "rb_libraw.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// ThumbFormat is the encoding of an embedded preview's bytes.
type ThumbFormat int

const (
	// ThumbJPEG is a complete JPEG file (SOI to EOI), as LibRaw's
	// dcraw_make_mem_thumb returns it (LIBRAW_IMAGE_JPEG); LibRaw inserts a
	// minimal EXIF APP1 segment when the preview has none.
	ThumbJPEG ThumbFormat = 1
	// ThumbBitmap is 8-bit interleaved pixels, Colors bytes per pixel
	// (normally 3: R, G, B), rows top to bottom, no padding
	// (LIBRAW_IMAGE_BITMAP).
	ThumbBitmap ThumbFormat = 2
)

func (f ThumbFormat) String() string {
	switch f {
	case ThumbJPEG:
		return "JPEG"
	case ThumbBitmap:
		return "bitmap"
	}
	return fmt.Sprintf("ThumbFormat(%d)", int(f))
}

// Thumb is a raw file's embedded preview as LibRaw extracts it.
type Thumb struct {
	Format ThumbFormat
	// Width and Height are the preview's size in pixels as LibRaw reports
	// it (for JPEG: from the file's thumbnail tags, which may be 0 or differ
	// from the JPEG's own frame size; decode the JPEG for the truth).
	// Colors is the channel count and Bits the bits per channel of a
	// bitmap (0 for JPEG).
	Width, Height, Colors, Bits int
	// Data holds the preview's bytes (a JPEG file or the bitmap's pixels),
	// copied into Go memory.
	Data []byte
	// Count is how many previews the file has according to LibRaw (the
	// entries of thumbs_list that have data, LibRaw ≥ 0.21; 1 or 0 with
	// older LibRaw, which cannot list them: Info.Previews). The largest of
	// them is the one returned.
	Count int
}

// ErrNoThumbnail is returned by Thumbnail when the file has no embedded
// preview (LIBRAW_NO_THUMBNAIL) or LibRaw cannot extract it in a format it
// returns (LIBRAW_UNSUPPORTED_THUMBNAIL).
var ErrNoThumbnail = errors.New("libraw: no usable embedded preview")

// Thumbnail unpacks the embedded preview of the file opened by Open and
// returns its bytes: the largest preview the file lists when the linked
// LibRaw (≥ 0.21) can list them (libraw_unpack_thumb_ex), else the one
// LibRaw picks (libraw_unpack_thumb), converted to a JPEG file or an 8-bit
// RGB bitmap by libraw_dcraw_make_mem_thumb. It may be called before or
// after Unpack and does not disturb it; data errors LibRaw reports while
// reading the preview are not counted against the raw data. Errors:
// ErrWrongThread, ErrNoThumbnail (wrapped), or an *Error for other LibRaw
// failures (op "unpack thumb" or "make thumb").
func (h *Handle) Thumbnail() (Thumb, error) {
	if err := h.checkThread(); err != nil {
		return Thumb{}, err
	}
	if h.info == nil || h.stream == nil {
		return Thumb{}, errors.New("libraw: Thumbnail before Open")
	}
	// The preview's own read errors are not the raw data's: restore the
	// data-error counters afterwards so a later Unpack judges only itself.
	saved := *h.ctl
	defer func() {
		h.ctl.data_errors, h.ctl.data_offset, h.ctl.mem_errors = saved.data_errors, saved.data_offset, saved.mem_errors
		C.rb_stream_reset(h.stream)
	}()
	C.rb_stream_reset(h.stream)
	var count C.int
	if rc := C.rb_thumb_pick(h.lr, &count); rc != C.LIBRAW_SUCCESS {
		if rc == C.LIBRAW_NO_THUMBNAIL || rc == C.LIBRAW_UNSUPPORTED_THUMBNAIL {
			return Thumb{}, fmt.Errorf("%w (%s)", ErrNoThumbnail, C.GoString(C.libraw_strerror(rc)))
		}
		return Thumb{}, h.codeError("unpack thumb", rc)
	}
	var errc C.int
	m := C.libraw_dcraw_make_mem_thumb(h.lr, &errc)
	if m == nil {
		if errc == C.LIBRAW_NO_THUMBNAIL || errc == C.LIBRAW_UNSUPPORTED_THUMBNAIL {
			return Thumb{}, fmt.Errorf("%w (%s)", ErrNoThumbnail, C.GoString(C.libraw_strerror(errc)))
		}
		return Thumb{}, &Error{Op: "make thumb", Code: int(errc), Msg: C.GoString(C.libraw_strerror(errc))}
	}
	defer C.libraw_dcraw_clear_mem(m)
	t := Thumb{
		Width:  int(m.width),
		Height: int(m.height),
		Count:  int(count),
		Data:   C.GoBytes(unsafe.Pointer(&m.data[0]), C.int(m.data_size)),
	}
	switch m._type {
	case C.LIBRAW_IMAGE_JPEG:
		t.Format = ThumbJPEG
	case C.LIBRAW_IMAGE_BITMAP:
		t.Format = ThumbBitmap
		t.Colors, t.Bits = int(m.colors), int(m.bits)
		if t.Colors < 1 || t.Bits != 8 || len(t.Data) < t.Width*t.Height*t.Colors {
			return Thumb{}, fmt.Errorf("%w (bitmap %dx%d, %d colours of %d bits in %d bytes)", ErrNoThumbnail, t.Width, t.Height, t.Colors, t.Bits, len(t.Data))
		}
	default:
		return Thumb{}, fmt.Errorf("%w (image type %d)", ErrNoThumbnail, int(m._type))
	}
	return t, nil
}
