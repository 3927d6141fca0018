package jpegturbo

/*
#include <stdlib.h>
#include "decode.h"
*/
import "C"

import (
	"bytes"
	"errors"
	"fmt"
	"image/jpeg"
	"unsafe"
)

// ErrDecode is wrapped by DecodeRGB's errors: the data is no JPEG libjpeg
// can decode (the message says why).
var ErrDecode = errors.New("jpegturbo: cannot decode")

// ScaledSize returns the size in pixels of a w×h JPEG decoded at the DCT
// scale 1/denom (libjpeg's jpeg_calc_output_dimensions: each side divided,
// rounded up).
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
	switch denom {
	case 1, 2, 4, 8:
	default:
		return nil, 0, 0, fmt.Errorf("%w: scale 1/%d (1, 2, 4 or 8)", ErrDecode, denom)
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%w: %v", ErrDecode, err)
	}
	w, h = ScaledSize(cfg.Width, cfg.Height, denom)
	if w <= 0 || h <= 0 || len(data) == 0 {
		return nil, 0, 0, fmt.Errorf("%w: a %d×%d image", ErrDecode, cfg.Width, cfg.Height)
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
