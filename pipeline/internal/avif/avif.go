// Package avif is rawbatch's binding to libavif (Debian 12: libavif-dev
// 0.11, pkg-config "libavif"), for writing still AVIF images from whole RGB
// frames.
//
// Rules kept here, as in pipeline/internal/jpegturbo:
//   - one Encoder per goroutine, created, used and closed on one locked OS
//     thread (runtime.LockOSThread); calls from another thread fail with
//     ErrWrongThread;
//   - explicit Close, no finalizers; C keeps no Go pointer past a call: the
//     RGB samples and the ICC, EXIF and XMP bytes are read during Encode;
//   - libavif reports errors as result codes and never prints or exits;
//     its message (and its encoder's diagnostics) come back as Go errors;
//   - every C allocation is freed next to its creation or by Close (the
//     rb_avif struct, libavif's image, encoder and output buffer).
//
// libavif takes a whole frame: it converts the RGB samples to YUV planes
// (avifImageRGBToYUV) and hands them to its AV1 encoder (aom, rav1e or
// SVT-AV1, whichever it was built with first: Codec), which keeps its own
// frame buffers; the encoded file is held whole in C memory and copied
// out (WorkingBytes).
package avif

/*
#cgo pkg-config: libavif
#include <stdlib.h>
#include "avif.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"
)

// ErrWrongThread is returned when an Encoder is used from an OS thread
// other than the one that created it.
var ErrWrongThread = errors.New("avif: encoder used from another OS thread (lock the goroutine's thread with runtime.LockOSThread from New to Close)")

// CICP code points (ITU-T H.273) used by rawbatch's outputs.
const (
	PrimariesBT709   = 1  // sRGB / BT.709 primaries, D65
	PrimariesUnspec  = 2  // unspecified: the ICC profile says
	PrimariesBT2020  = 9  // BT.2020 / BT.2100
	PrimariesP3D65   = 12 // SMPTE EG 432-1 (Display P3)
	TransferUnspec   = 2  // unspecified: the ICC profile says
	TransferBT709    = 1  // BT.709 (also BT.2020's SDR curve at 10 bits: 14)
	TransferSRGB     = 13 // IEC 61966-2-1
	TransferBT2020   = 14 // BT.2020 10-bit
	TransferPQ       = 16 // SMPTE ST 2084
	TransferHLG      = 18 // ARIB STD-B67 / BT.2100 HLG
	MatrixIdentity   = 0  // RGB coded as GBR
	MatrixBT601      = 6  // BT.601 (libavif's default for RGB input)
	MatrixBT2020NCL  = 9  // BT.2020 non-constant luminance
	MaxQuantizer     = 63 // AV1 quantizer range 0..63
	MaxSpeed         = 10 // libavif speed 0 (slowest) .. 10 (fastest)
	DefaultSpeed     = 6  // libavif's speed used when none is given
	maxSide          = 65536
	maxMetadataBytes = 64 << 20
)

// Options are the settings of one AVIF image.
type Options struct {
	// Depth is the bit depth per sample: 8, 10 or 12.
	Depth int
	// YUV is the chroma subsampling: 444, 422 or 420.
	YUV int
	// Quality is 1..100, mapped to the AV1 quantizer as libavif 1.x maps
	// its quality: q = ((100 − Quality)·63 + 50) / 100 (100 → 0).
	Quality int
	// Speed is libavif's speed, 0..10 (slower is smaller).
	Speed int
	// Threads is the most threads the AV1 encoder may use (≥ 1).
	Threads int
	// Primaries, Transfer and Matrix are the CICP code points (ITU-T
	// H.273) in the AV1 sequence header and, without an ICC profile, in
	// the container's nclx colr box.
	Primaries, Transfer, Matrix int
	// FullRange codes YUV with the full range of code values.
	FullRange bool
	// ICC is the ICC profile (colr box of type prof), none when empty.
	ICC []byte
	// EXIF is a TIFF-structured EXIF block (starting "MM" or "II"), none
	// when empty; XMP an XMP packet, none when empty.
	EXIF, XMP []byte
}

// Encoder is one libavif encoding context, for several images in
// sequence.
type Encoder struct {
	a   *C.rb_avif
	tid int
}

// New creates an Encoder bound to the calling OS thread; the caller must
// hold the thread (runtime.LockOSThread) until Close.
func New() (*Encoder, error) {
	a := C.rb_avif_new()
	if a == nil {
		return nil, errors.New("avif: out of C memory for the encoder")
	}
	return &Encoder{a: a, tid: syscall.Gettid()}, nil
}

func (e *Encoder) check() error {
	if e.a == nil {
		return errors.New("avif: encoder used after Close")
	}
	if syscall.Gettid() != e.tid {
		return ErrWrongThread
	}
	return nil
}

// Quantizer returns the AV1 quantizer (0..63) of quality 1..100.
func Quantizer(quality int) int { return ((100-quality)*MaxQuantizer + 50) / 100 }

// Encode encodes a width×height RGB image and returns the AVIF file. With
// o.Depth 8 the samples are pix8 (3 bytes a pixel, row y at
// pix8[y·stride:]); with 10 or 12 they are pix16 (3 uint16 a pixel in
// 0..2^Depth−1, row y at pix16[y·stride:], stride in samples). Errors: bad
// options or sizes, and libavif's own (its result and diagnostics).
func (e *Encoder) Encode(width, height int, pix8 []byte, pix16 []uint16, stride int, o Options) ([]byte, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	if width <= 0 || height <= 0 || width > maxSide || height > maxSide {
		return nil, fmt.Errorf("avif: image of %d×%d pixels: each side must be 1..%d", width, height, maxSide)
	}
	if o.Quality < 1 || o.Quality > 100 {
		return nil, fmt.Errorf("avif: quality %d out of range 1..100", o.Quality)
	}
	if o.Speed < 0 || o.Speed > MaxSpeed {
		return nil, fmt.Errorf("avif: speed %d out of range 0..%d", o.Speed, MaxSpeed)
	}
	switch o.YUV {
	case 444, 422, 420:
	default:
		return nil, fmt.Errorf("avif: chroma subsampling %d: want 444, 422 or 420", o.YUV)
	}
	if len(o.ICC) > maxMetadataBytes || len(o.EXIF) > maxMetadataBytes || len(o.XMP) > maxMetadataBytes {
		return nil, errors.New("avif: ICC, EXIF or XMP block too large")
	}
	var p unsafe.Pointer
	var rowBytes int
	switch o.Depth {
	case 8:
		if stride < 3*width || len(pix8) < (height-1)*stride+3*width {
			return nil, fmt.Errorf("avif: %d bytes of stride %d for %d×%d 8-bit RGB", len(pix8), stride, width, height)
		}
		p, rowBytes = unsafe.Pointer(&pix8[0]), stride
	case 10, 12:
		if stride < 3*width || len(pix16) < (height-1)*stride+3*width {
			return nil, fmt.Errorf("avif: %d samples of stride %d for %d×%d %d-bit RGB", len(pix16), stride, width, height, o.Depth)
		}
		p, rowBytes = unsafe.Pointer(&pix16[0]), 2*stride
	default:
		return nil, fmt.Errorf("avif: depth %d: want 8, 10 or 12", o.Depth)
	}
	params := C.rb_avif_params{
		width: C.int(width), height: C.int(height), depth: C.int(o.Depth), yuv: C.int(o.YUV),
		quantizer: C.int(Quantizer(o.Quality)), speed: C.int(o.Speed), threads: C.int(max(1, o.Threads)),
		primaries: C.int(o.Primaries), transfer: C.int(o.Transfer), matrix: C.int(o.Matrix),
	}
	if o.FullRange {
		params.full_range = 1
	}
	icc, iccN := bytesArg(o.ICC)
	exif, exifN := bytesArg(o.EXIF)
	xmp, xmpN := bytesArg(o.XMP)
	if rc := C.rb_avif_encode(e.a, &params, p, C.size_t(rowBytes), icc, iccN, exif, exifN, xmp, xmpN); rc != 0 {
		return nil, fmt.Errorf("avif: %s", C.GoString(&e.a.msg[0]))
	}
	defer C.rb_avif_out_free(e.a)
	return C.GoBytes(unsafe.Pointer(e.a.out.data), C.int(e.a.out.size)), nil
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
	if e.a == nil {
		return nil
	}
	if err := e.check(); err != nil {
		return err
	}
	C.rb_avif_free(e.a)
	e.a = nil
	return nil
}

// Codec names the AV1 encoder libavif uses ("aom", "rav1e", "svt"), ""
// when it has none.
func Codec() string { return C.GoString(C.rb_avif_codec()) }

// Version is libavif's version ("0.11.1").
func Version() string { return C.GoString(C.rb_avif_version()) }

// WorkingBytes is the memory in bytes that encoding a width×height image
// at depth bits and subsampling yuv (444, 422, 420) makes resident:
// libavif's YUV planes and the AV1 encoder's frames and buffers (aom),
// 5 bytes per YUV sample at 8 bits and 8 at 10 and 12, plus 32 MiB. aom
// allocates more than it touches (C heap in use at 8-bit 4:4:4: 36 to 39
// bytes a pixel at 6 to 12 MP, content-dependent, TestWorkingBytes logs
// it); the resident figure is calibrated against the measured peak RSS of
// whole conversions (pipeline's TestEstimateCalibrationWholeFrame and a
// 24 MP camera file: about 17 bytes a pixel at 8-bit 4:4:4).
func WorkingBytes(width, height, depth, yuv int) int64 {
	px := int64(width) * int64(height)
	samples := px * 3 // 444
	switch yuv {
	case 422:
		samples = px * 2
	case 420:
		samples = px * 3 / 2
	}
	per := int64(5)
	if depth > 8 {
		per = 8
	}
	return samples*per + 32<<20
}

// cHeapInUse is the C heap in use in bytes (glibc mallinfo2), for the
// tests of the working memory.
func cHeapInUse() int64 { return int64(C.rb_avif_heap_in_use()) }
