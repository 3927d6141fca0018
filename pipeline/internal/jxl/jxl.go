// Package jxl is rawbatch's binding to libjxl's encoder API (Debian 12:
// libjxl-dev 0.7, pkg-config "libjxl" and "libjxl_threads"), for writing
// still JPEG XL images from whole RGB frames.
//
// Rules kept here, as in pipeline/internal/jpegturbo:
//   - one Encoder per goroutine, created, used and closed on one locked OS
//     thread (runtime.LockOSThread); calls from another thread fail with
//     ErrWrongThread;
//   - explicit Close, no finalizers; C keeps no Go pointer past a call:
//     libjxl copies the frame, the ICC profile and the boxes when they
//     are added (rb_jxl_start), and output is handed to the Go writer
//     from a C buffer of RB_JXL_BUF bytes;
//   - libjxl reports errors as status codes and never prints or exits;
//   - every C allocation is freed next to its creation or by Close (the
//     rb_jxl struct and its buffer, libjxl's encoder and thread runner).
//
// libjxl takes a whole frame and converts it to float planes (12 bytes a
// pixel) before it encodes (WorkingBytes).
package jxl

/*
#cgo pkg-config: libjxl libjxl_threads
#include <stdlib.h>
#include "jxl.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"io"
	"syscall"
	"unsafe"
)

// ErrWrongThread is returned when an Encoder is used from an OS thread
// other than the one that created it.
var ErrWrongThread = errors.New("jxl: encoder used from another OS thread (lock the goroutine's thread with runtime.LockOSThread from New to Close)")

// Colour encodings of Options.Colour.
const (
	// ColourICC: the pixels are in the colour space of Options.ICC.
	ColourICC = C.RB_JXL_ICC
	// ColourPQ: BT.2100 primaries, D65, SMPTE ST 2084 (PQ) transfer.
	ColourPQ = C.RB_JXL_PQ
	// ColourHLG: BT.2100 primaries, D65, BT.2100 HLG transfer.
	ColourHLG = C.RB_JXL_HLG
)

// DefaultEffort is libjxl's default effort (1 fastest .. 9 slowest).
const DefaultEffort = 7

const maxMetadataBytes = 64 << 20

// Options are the settings of one JPEG XL image.
type Options struct {
	// Bits per sample: 8 or 16.
	Bits int
	// Lossless codes the samples exactly (modular mode, the original
	// colour space); otherwise Quality (1..100) sets the butteraugli
	// distance (Distance).
	Lossless bool
	Quality  int
	// Effort is 1..9.
	Effort int
	// Threads is the most threads libjxl may use (≥ 1).
	Threads int
	// Colour is ColourICC, ColourPQ or ColourHLG.
	Colour int
	// IntensityTarget is the peak luminance in nits (cd/m²) the samples'
	// 1.0 stands for with PQ and HLG; 0 for libjxl's default (255 for
	// SDR, 10000 for PQ).
	IntensityTarget float64
	// ICC is the ICC profile of ColourICC (required with it).
	ICC []byte
	// EXIF is a TIFF-structured EXIF block (starting "MM" or "II") for the
	// Exif box, none when empty; XMP the packet of the "xml " box.
	EXIF, XMP []byte
}

// Distance returns the butteraugli distance of quality 1..100 (the
// mapping of libjxl's JxlEncoderDistanceFromQuality, libjxl 0.9: 0.1 +
// (100 − q)·0.09 from quality 30, a quadratic below; at least 0.1).
func Distance(quality int) float64 {
	q := float64(quality)
	var d float64
	switch {
	case q >= 30:
		d = 0.1 + (100-q)*0.09
	default:
		d = 53.0/3000.0*q*q - 23.0/20.0*q + 25
	}
	return max(0.1, d)
}

// Encoder is one libjxl encoder, for several images in sequence.
type Encoder struct {
	j       *C.rb_jxl
	tid     int
	threads int
}

// New creates an Encoder using up to threads threads, bound to the calling
// OS thread; the caller must hold the thread (runtime.LockOSThread) until
// Close.
func New(threads int) (*Encoder, error) {
	threads = max(1, threads)
	j := C.rb_jxl_new(C.int(threads))
	if j == nil {
		return nil, errors.New("jxl: out of C memory for the encoder")
	}
	return &Encoder{j: j, tid: syscall.Gettid(), threads: threads}, nil
}

func (e *Encoder) check() error {
	if e.j == nil {
		return errors.New("jxl: encoder used after Close")
	}
	if syscall.Gettid() != e.tid {
		return ErrWrongThread
	}
	return nil
}

// Encode encodes a width×height RGB image, tightly packed (pix8: 3 bytes a
// pixel when o.Bits is 8; pix16: 3 uint16 a pixel when 16), and writes the
// JPEG XL file to w (a container: ftyp, jxlc and the boxes, when there is
// EXIF or XMP; a bare codestream otherwise). Errors: bad options or sizes,
// libjxl's, and w's, wrapped.
func (e *Encoder) Encode(w io.Writer, width, height int, pix8 []byte, pix16 []uint16, o Options) error {
	if err := e.check(); err != nil {
		return err
	}
	if width <= 0 || height <= 0 || width > 1<<30 || height > 1<<30 {
		return fmt.Errorf("jxl: image of %d×%d pixels", width, height)
	}
	if o.Effort < 1 || o.Effort > 9 {
		return fmt.Errorf("jxl: effort %d out of range 1..9", o.Effort)
	}
	if !o.Lossless && (o.Quality < 1 || o.Quality > 100) {
		return fmt.Errorf("jxl: quality %d out of range 1..100", o.Quality)
	}
	if o.Colour == ColourICC && len(o.ICC) == 0 {
		return errors.New("jxl: no ICC profile for the pixels' colour space")
	}
	if len(o.ICC) > maxMetadataBytes || len(o.EXIF) > maxMetadataBytes || len(o.XMP) > maxMetadataBytes {
		return errors.New("jxl: ICC, EXIF or XMP block too large")
	}
	n := 3 * width * height
	var p unsafe.Pointer
	var size int
	switch o.Bits {
	case 8:
		if len(pix8) < n {
			return fmt.Errorf("jxl: %d bytes for %d×%d 8-bit RGB", len(pix8), width, height)
		}
		p, size = unsafe.Pointer(&pix8[0]), n
	case 16:
		if len(pix16) < n {
			return fmt.Errorf("jxl: %d samples for %d×%d 16-bit RGB", len(pix16), width, height)
		}
		p, size = unsafe.Pointer(&pix16[0]), 2*n
	default:
		return fmt.Errorf("jxl: %d bits per sample: want 8 or 16", o.Bits)
	}
	params := C.rb_jxl_params{
		width: C.int(width), height: C.int(height), bits: C.int(o.Bits),
		effort: C.int(o.Effort), threads: C.int(e.threads), colour: C.int(o.Colour),
		distance: C.float(Distance(max(1, o.Quality))), intensity_target: C.float(o.IntensityTarget),
	}
	if o.Lossless {
		params.lossless = 1
	}
	icc, iccN := bytesArg(o.ICC)
	exif, exifN := bytesArg(o.EXIF)
	xmp, xmpN := bytesArg(o.XMP)
	if C.rb_jxl_start(e.j, &params, p, C.size_t(size), icc, iccN, exif, exifN, xmp, xmpN) != 0 {
		return fmt.Errorf("jxl: %s", C.GoString(&e.j.msg[0]))
	}
	for {
		st := C.rb_jxl_out(e.j)
		if st < 0 {
			return fmt.Errorf("jxl: %s", C.GoString(&e.j.msg[0]))
		}
		if e.j.n > 0 {
			if _, err := w.Write(unsafe.Slice((*byte)(unsafe.Pointer(e.j.buf)), int(e.j.n))); err != nil {
				return fmt.Errorf("jxl: writing the output: %w", err)
			}
		}
		if st == 0 {
			return nil
		}
	}
}

func bytesArg(b []byte) (*C.uint8_t, C.size_t) {
	if len(b) == 0 {
		return nil, 0
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0])), C.size_t(len(b))
}

// Close frees the encoder. It must run on the thread of New; it is a
// no-op after the first call.
func (e *Encoder) Close() error {
	if e.j == nil {
		return nil
	}
	if err := e.check(); err != nil {
		return err
	}
	C.rb_jxl_free(e.j)
	e.j = nil
	return nil
}

// Version is libjxl's encoder version ("0.7.0").
func Version() string {
	v := uint(C.rb_jxl_version())
	return fmt.Sprintf("%d.%d.%d", v/1000000, v/1000%1000, v%1000)
}

// WorkingBytes is the memory in bytes that libjxl makes resident
// encoding a width×height image at effort (1..9), lossless or not: its
// float copy of the frame (12 bytes a pixel), lossy its XYB image,
// quantised coefficients and per-block fields (80 bytes a pixel from
// effort 4 on, 30 at efforts 1..3, which skip most of the block-size and
// adaptive-quantisation search), lossless its modular channels,
// tree-learning samples and residuals (64 bytes a pixel); plus 16 MiB.
// Measured: the C heap's peak growth at effort 7 (TestWorkingBytes, about
// 106 bytes a pixel on a textured image, lossy or lossless), and whole
// conversions' peak RSS (pipeline's TestEstimateCalibrationWholeFrame;
// on a 24 MP camera file about 67 bytes a pixel at effort 7, 26 at
// effort 3, 55 lossless at effort 3).
func WorkingBytes(width, height, effort int, lossless bool) int64 {
	per := int64(80)
	switch {
	case lossless:
		per = 64
	case effort <= 3:
		per = 30
	}
	return per*int64(width)*int64(height) + 16<<20
}

// cHeapInUse is the C heap in use in bytes (glibc mallinfo2), for the
// tests of the working memory.
func cHeapInUse() int64 { return int64(C.rb_jxl_heap_in_use()) }
