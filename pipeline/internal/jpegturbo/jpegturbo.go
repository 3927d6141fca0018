// Package jpegturbo is rawbatch's binding to the libjpeg API of
// libjpeg-turbo (Debian: libjpeg62-turbo-dev, pkg-config "libjpeg"), for
// writing baseline JPEG files row by row and decoding JPEG previews at a
// DCT scale (DecodeRGB).
//
// Rules kept here, as in pipeline/internal/libraw:
//   - one Compressor per goroutine, created, used and closed on one locked
//     OS thread (runtime.LockOSThread); calls from another thread fail with
//     ErrWrongThread;
//   - explicit Close, no finalizers; C keeps no Go pointer past a call:
//     rows are read during rb_jpeg_rows, and the writer is reached through
//     a cgo.Handle that Close deletes;
//   - libjpeg never exits the process: its error_exit is replaced by one
//     that longjmps back to the setjmp of the C entry point that is
//     running (jpegturbo.c), so the jump never crosses a Go frame, and the
//     message comes back as a Go error; its warnings are counted, never
//     printed;
//   - every C allocation is freed next to its creation or by Close (the
//     rb_jpeg struct, its 64 KiB output buffer, libjpeg's own pools).
//
// Output goes through a destination manager whose C buffer (RB_JPEG_BUF,
// 64 KiB) is handed to the Go io.Writer each time it fills and at the end:
// the file is never held whole, in C or in Go. With optimised Huffman
// tables (Optimized: images of at most OptimizeMaxPixels) libjpeg keeps
// the quantised DCT coefficients of the whole image until Finish (2 bytes
// per coefficient: 6 bytes per pixel at 4:4:4, 4 at 4:2:2, 3 at 4:2:0;
// WorkingBytes) and writes the entropy-coded data then; with the standard
// tables (Annex K of ITU-T T.81) it writes each MCU row as it comes.
package jpegturbo

/*
#cgo pkg-config: libjpeg
#include <stdlib.h>
#include "jpegturbo.h"
*/
import "C"

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/cgo"
	"strings"
	"syscall"
	"unsafe"
)

// MaxRows is the most rows one WriteRows call takes.
const MaxRows = C.RB_JPEG_MAXROWS

// ErrWrongThread is returned when a Compressor is used from an OS thread
// other than the one that created it.
var ErrWrongThread = errors.New("jpegturbo: compressor used from another OS thread (lock the goroutine's thread with runtime.LockOSThread from New to Close)")

// Options are the settings of one compression.
type Options struct {
	// Quality on the IJG scale, 1..100 (jpeg_set_quality, baseline
	// quantisation tables: every table entry within 1..255).
	Quality int
	// HSamp and VSamp are the luma plane's sampling factors against the
	// two chroma planes (which have 1×1): 1×1 is 4:4:4, 2×1 4:2:2, 2×2
	// 4:2:0.
	HSamp, VSamp int
	// Gray makes a one-component (greyscale) JPEG of 1-byte samples;
	// HSamp and VSamp must then be 1.
	Gray bool
}

// Marker is an application marker segment written right after SOI, in
// order: Code is the marker (0xE0..0xEF for APPn), Data the payload
// without the marker and length bytes (at most 65533 bytes).
type Marker struct {
	Code byte
	Data []byte
}

// Compressor is one libjpeg compression object (jpeg_compress_struct),
// reusable for several images in sequence.
type Compressor struct {
	j    *C.rb_jpeg
	tid  int
	h    cgo.Handle
	w    io.Writer
	werr error // the writer's error, kept while C unwinds
	busy bool  // between a successful Start and Finish
	rows int   // rows written since Start
	hgt  int   // image height of the compression under way
	wid  int   // image width
	comp int   // bytes a pixel: 3 (RGB) or 1 (Gray)
}

// New creates a Compressor bound to the calling OS thread; the caller
// must hold the thread (runtime.LockOSThread) until Close. It fails when C
// memory cannot be allocated or libjpeg refuses the compression object
// (an API version mismatch, for example).
func New() (*Compressor, error) {
	j := C.rb_jpeg_new()
	if j == nil {
		return nil, errors.New("jpegturbo: out of C memory for the compressor")
	}
	if j.created == 0 {
		err := fmt.Errorf("jpegturbo: jpeg_create_compress: %s", C.GoString(&j.msg[0]))
		C.rb_jpeg_free(j)
		return nil, err
	}
	c := &Compressor{j: j, tid: syscall.Gettid()}
	c.h = cgo.NewHandle(c)
	j.writer = C.uintptr_t(c.h)
	return c, nil
}

func (c *Compressor) check() error {
	if c.j == nil {
		return errors.New("jpegturbo: compressor used after Close")
	}
	if syscall.Gettid() != c.tid {
		return ErrWrongThread
	}
	return nil
}

// fail turns a failed C call into an error: the writer's own error when
// the destination manager failed on it (wrapped, so errors.Is finds it),
// else libjpeg's message. The compression is over either way.
func (c *Compressor) fail(what string) error {
	c.busy = false
	if c.j.write_failed != 0 && c.werr != nil {
		err := c.werr
		c.werr = nil
		return fmt.Errorf("jpegturbo: %s: writing the output: %w", what, err)
	}
	return fmt.Errorf("jpegturbo: %s: %s", what, C.GoString(&c.j.msg[0]))
}

// Start begins a width×height 8-bit RGB image (or greyscale with o.Gray; sRGB-like primaries are
// not assumed: the samples are encoded as given, converted to YCbCr with
// the JFIF matrix) written to w, with o's settings, optimised Huffman
// tables, baseline sequential (not progressive), no JFIF APP0, and the
// markers right after SOI. w must not keep the slices it is given.
func (c *Compressor) Start(w io.Writer, width, height int, o Options, markers []Marker) error {
	if err := c.check(); err != nil {
		return err
	}
	if width <= 0 || height <= 0 || width > 65500 || height > 65500 {
		return fmt.Errorf("jpegturbo: image of %d×%d pixels: each side must be 1..65500", width, height)
	}
	if o.Quality < 1 || o.Quality > 100 {
		return fmt.Errorf("jpegturbo: quality %d out of range 1..100", o.Quality)
	}
	switch [2]int{o.HSamp, o.VSamp} {
	case [2]int{1, 1}:
	case [2]int{2, 1}, [2]int{2, 2}:
		if o.Gray {
			return errors.New("jpegturbo: a greyscale image has no chroma to subsample: want 1×1")
		}
	default:
		return fmt.Errorf("jpegturbo: luma sampling %d×%d: want 1×1, 2×1 or 2×2", o.HSamp, o.VSamp)
	}
	for _, m := range markers {
		if m.Code < 0xE0 || m.Code > 0xEF || len(m.Data) > 65533 {
			return fmt.Errorf("jpegturbo: marker %#x of %d bytes: want APP0..APP15 of at most 65533 bytes", m.Code, len(m.Data))
		}
	}
	c.w, c.werr, c.rows, c.wid, c.hgt, c.comp = w, nil, 0, width, height, 3
	gray := 0
	if o.Gray {
		gray, c.comp = 1, 1
	}
	if C.rb_jpeg_start(c.j, c.j.writer, C.int(width), C.int(height), C.int(o.Quality), C.int(o.HSamp), C.int(o.VSamp), C.int(gray), C.int(b2i(Optimized(width, height)))) != 0 {
		return c.fail("start")
	}
	c.busy = true
	for _, m := range markers {
		var p *C.uchar
		if len(m.Data) > 0 {
			p = (*C.uchar)(unsafe.Pointer(&m.Data[0]))
		}
		if C.rb_jpeg_marker(c.j, C.int(m.Code), p, C.uint(len(m.Data))) != 0 {
			return c.fail("marker")
		}
	}
	return nil
}

// WriteRows compresses the next n rows (1..MaxRows) of the image, row i at
// rows[i·stride:], 3·width bytes of R, G, B each (width grey bytes for a
// Gray image); rows are taken in order
// and the buffer may be reused as soon as WriteRows returns.
func (c *Compressor) WriteRows(rows []byte, n, stride int) error {
	if err := c.check(); err != nil {
		return err
	}
	if !c.busy {
		return errors.New("jpegturbo: WriteRows without a successful Start")
	}
	if n < 1 || n > MaxRows || c.rows+n > c.hgt {
		return fmt.Errorf("jpegturbo: %d rows at row %d of %d (1..%d a call)", n, c.rows, c.hgt, MaxRows)
	}
	if stride < c.comp*c.wid || len(rows) < (n-1)*stride+c.comp*c.wid {
		return fmt.Errorf("jpegturbo: %d rows of stride %d in %d bytes: want rows of %d bytes", n, stride, len(rows), c.comp*c.wid)
	}
	if C.rb_jpeg_rows(c.j, (*C.uchar)(unsafe.Pointer(&rows[0])), C.int(n), C.size_t(stride)) != 0 {
		return c.fail("write_scanlines")
	}
	c.rows += n
	return nil
}

// Finish writes the rest of the file (with optimised Huffman tables, all
// of the entropy-coded data) and EOI to the writer. Every row must have
// been written.
func (c *Compressor) Finish() error {
	if err := c.check(); err != nil {
		return err
	}
	if !c.busy {
		return errors.New("jpegturbo: Finish without a successful Start")
	}
	if c.rows != c.hgt {
		c.busy = false
		C.rb_jpeg_abort(c.j)
		return fmt.Errorf("jpegturbo: finish after %d of %d rows", c.rows, c.hgt)
	}
	c.busy = false
	if C.rb_jpeg_finish(c.j) != 0 {
		return c.fail("finish")
	}
	c.w = nil
	return nil
}

// Warnings is the number of libjpeg warnings of the last compression
// (never printed; a compression has none in normal use); 0 after Close
// or on another thread than the Compressor's.
func (c *Compressor) Warnings() int {
	if c.check() != nil {
		return 0
	}
	return int(c.j.warnings)
}

// Sampling returns the sampling factors of component comp (0 luma, 1 and
// 2 chroma) as set for the compression under way or last started; ok is
// false after Close or on another thread than the Compressor's.
func (c *Compressor) Sampling(comp int) (h, v int, ok bool) {
	if c.check() != nil {
		return 0, 0, false
	}
	var ch, cv C.int
	if C.rb_jpeg_comp_samp(c.j, C.int(comp), &ch, &cv) != 0 {
		return 0, 0, false
	}
	return int(ch), int(cv), true
}

// Close frees the compressor (also in the middle of an image, abandoning
// it). It must run on the thread of New; it is a no-op after the first
// call.
func (c *Compressor) Close() error {
	if c.j == nil {
		return nil
	}
	if err := c.check(); err != nil {
		return err
	}
	C.rb_jpeg_free(c.j)
	c.j = nil
	c.h.Delete()
	c.w = nil
	return nil
}

//export rbJPEGWrite
func rbJPEGWrite(h C.uintptr_t, p *C.uchar, n C.size_t) (failed C.int) {
	c := cgo.Handle(h).Value().(*Compressor)
	defer func() {
		// A panic must not unwind through libjpeg's C frames.
		if x := recover(); x != nil {
			c.werr = fmt.Errorf("writer panicked: %v", x)
			failed = 1
		}
	}()
	if c.w == nil {
		c.werr = errors.New("no writer")
		return 1
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(p)), int(n))
	for len(b) > 0 {
		k, err := c.w.Write(b)
		if err == nil && k == 0 {
			err = io.ErrShortWrite
		}
		if err != nil {
			c.werr = err
			return 1
		}
		b = b[k:]
	}
	return 0
}

// Version returns the version of the libjpeg linked at run time:
// libjpeg-turbo's own version string as its shared object carries it
// ("libjpeg-turbo version 2.1.5 (build 20230203)": the API offers no
// call for it, so the file that dladdr names is searched), else the
// version message of its libjpeg API (JMSG_VERSION, e.g. "6b 27-Mar-1998",
// which libjpeg-turbo keeps at the emulated libjpeg release), spaces
// collapsed.
func Version() string {
	if b, err := os.ReadFile(LibraryPath()); err == nil {
		const sig = "libjpeg-turbo version "
		if i := bytes.Index(b, []byte(sig)); i >= 0 {
			v := b[i:]
			if end := bytes.IndexByte(v, 0); end >= 0 && end < 200 {
				return string(v[:end])
			}
		}
	}
	return strings.Join(strings.Fields(C.GoString(C.rb_jpeg_version())), " ")
}

// LibraryPath returns the file name of the shared object that provides
// libjpeg in this process (dladdr of jpeg_std_error), or the executable
// for a static link.
func LibraryPath() string { return C.GoString(C.rb_jpeg_lib_path()) }

// APIVersion is the libjpeg API version compiled against
// (JPEG_LIB_VERSION: 62, 70 or 80); libjpeg refuses a different one at
// run time (New fails).
func APIVersion() int { return int(C.rb_jpeg_lib_version()) }

// OptimizeMaxPixels is the largest image (width×height, pixels) written
// with Huffman tables optimised for it. A larger one gets the standard
// tables: the optimising pass costs about five times the encode itself
// and keeps the whole image's coefficients (144 MB for 24 MP at 4:4:4) to
// save 1–4 % of the file (measured with cjpeg -quality 90 with and
// without -optimize: 1.1 % on a realistic 24 MP ISO 1600 picture at
// 4:4:4, 0.65 s against 0.12 s; 3.4–4.4 % on the sample files).
const OptimizeMaxPixels = 4 << 20

// Optimized reports whether a width×height image is written with
// optimised Huffman tables (at most OptimizeMaxPixels pixels).
func Optimized(width, height int) bool {
	return int64(width)*int64(height) <= OptimizeMaxPixels
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// WorkingBytes is libjpeg's memory in bytes for a width×height image with
// luma sampling hSamp×vSamp: with optimised Huffman tables (Optimized)
// the whole-image coefficient buffer (2 bytes per coefficient, each plane
// padded to whole MCUs), and a fixed 256 KiB for its tables and row
// buffers (about 125 KB in use) and this package's 64 KiB output buffer.
// An estimate from libjpeg's design (jccoefct.c), checked against the
// heap growth in this package's tests.
func WorkingBytes(width, height, hSamp, vSamp int) int64 {
	if !Optimized(width, height) {
		return 256<<10 + C.RB_JPEG_BUF
	}
	mcuW, mcuH := 8*hSamp, 8*vSamp
	pw := int64((width + mcuW - 1) / mcuW * mcuW)
	ph := int64((height + mcuH - 1) / mcuH * mcuH)
	luma := pw * ph
	chroma := 2 * (pw / int64(hSamp)) * (ph / int64(vSamp))
	return 2*(luma+chroma) + 256<<10 + C.RB_JPEG_BUF
}

// cHeapInUse is the C heap in use in bytes (glibc mallinfo2), for the
// tests of libjpeg's working memory and of leaks.
func cHeapInUse() int64 { return int64(C.rb_jpeg_heap_in_use()) }
