package jpegturbo

/*
#include <stdlib.h>
#include "decode.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// ErrDecode is wrapped by DecodeRGB's errors: the data is no JPEG libjpeg
// can decode (the message says why).
var ErrDecode = errors.New("jpegturbo: cannot decode")

// Size returns the size in pixels of the JPEG file data decoded at the
// DCT scale 1/denom (1, 2, 4 or 8; 1: the frame's own size), from its
// header (libjpeg's jpeg_calc_output_dimensions: each side divided,
// rounded up). Errors wrap ErrDecode.
func Size(data []byte, denom int) (w, h int, err error) {
	switch denom {
	case 1, 2, 4, 8:
	default:
		return 0, 0, fmt.Errorf("%w: scale 1/%d (1, 2, 4 or 8)", ErrDecode, denom)
	}
	if len(data) == 0 {
		return 0, 0, fmt.Errorf("%w: no data", ErrDecode)
	}
	msg := (*C.char)(C.malloc(C.JMSG_LENGTH_MAX))
	defer C.free(unsafe.Pointer(msg))
	var cw, ch C.int
	if C.rb_jpeg_size((*C.uchar)(unsafe.Pointer(&data[0])), C.ulong(len(data)), C.int(denom), &cw, &ch, msg) != 0 {
		return 0, 0, fmt.Errorf("%w: %s", ErrDecode, C.GoString(msg))
	}
	return int(cw), int(ch), nil
}

// ScaledSize returns the size in pixels of a w×h JPEG decoded at the DCT
// scale 1/denom (each side divided, rounded up: what Size reads for 1/1
// gives for 1/denom).
func ScaledSize(w, h, denom int) (int, int) {
	return (w + denom - 1) / denom, (h + denom - 1) / denom
}

// DenomFor returns the largest DCT scale denominator (1, 2, 4 or 8) at
// which a w×h JPEG still decodes to at least minW×minH pixels: the
// smallest decode that holds what a downscale to minW×minH needs.
func DenomFor(w, h, minW, minH int) int {
	d := 1
	for _, n := range []int{2, 4, 8} {
		if sw, sh := ScaledSize(w, h, n); sw >= minW && sh >= minH {
			d = n
		}
	}
	return d
}

// DecodeRGB decodes the JPEG file data to 8-bit RGB (W×H×3 bytes,
// interleaved, rows top to bottom) at the DCT scale 1/denom (1, 2, 4 or
// 8), returning the pixels and their size. A JPEG of any colour model
// libjpeg reads (greyscale, YCbCr, CMYK is not) comes out as RGB. The
// pixels are Go memory that C fills during the one call; nothing is kept
// in C. Errors wrap ErrDecode.
func DecodeRGB(data []byte, denom int) (pix []byte, w, h int, err error) {
	if w, h, err = Size(data, denom); err != nil {
		return nil, 0, 0, err
	}
	if w <= 0 || h <= 0 {
		return nil, 0, 0, fmt.Errorf("%w: a %d×%d image", ErrDecode, w, h)
	}
	pix = make([]byte, 3*w*h)
	msg := (*C.char)(C.malloc(C.JMSG_LENGTH_MAX))
	defer C.free(unsafe.Pointer(msg))
	var warnings C.int
	if C.rb_jpeg_decode((*C.uchar)(unsafe.Pointer(&data[0])), C.ulong(len(data)), C.int(denom),
		(*C.uchar)(unsafe.Pointer(&pix[0])), C.int(w), C.int(h), &warnings, msg) != 0 {
		return nil, 0, 0, fmt.Errorf("%w: %s", ErrDecode, C.GoString(msg))
	}
	return pix, w, h, nil
}
