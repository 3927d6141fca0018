package libraw

// In-place access to the unpacked Bayer data and the LibRaw state that
// decides how LibRaw's own processing would scale it (scale_colors), for
// rawbatch's own demosaic: the samples are read where
// LibRaw keeps them, without a copy.

/*
#include "rb_libraw.h"
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// bayerReasons name why rb_bayer_reason refused a file.
var bayerReasons = map[C.int]string{
	1: "no single-sample raw data",
	2: "not a 2×2 Bayer mosaic (X-Trans, Leaf, or demosaiced data)",
	3: "not three colours (a four-colour or monochrome sensor)",
	4: "a Fuji SuperCCD layout (stored rotated by 45°)",
	5: "zero samples mark bad photosites (LibRaw interpolates them)",
	6: "a Phase One black-level table",
	7: "non-square photosites (LibRaw stretches the image)",
}

// BayerView is the visible area of LibRaw's unpacked Bayer data seen in
// place, with what LibRaw's processing would apply to it.
type BayerView struct {
	// Pix holds the samples (DN, black included) of the visible area:
	// photosite (x, y) is Pix[y*Stride+x], 0 ≤ x < W, 0 ≤ y < H. It points
	// into LibRaw's raw buffer (C memory): valid only until the handle's
	// next Process, CopyImage, Open or Close; never keep it past them.
	Pix    []uint16
	Stride int
	W, H   int
	// Colour is libraw_COLOR of the top-left 2×2 photosites, indexed
	// (y&1)*2 + (x&1): 0 red, 1 green, 2 blue, 3 the second green.
	Colour [4]uint8
	// Black is color.black, CBlack color.cblack[0..3] (per colour index),
	// Pattern the cblack[6..] pattern of PatternRows × PatternCols cells
	// (nil when none), all DN and as LibRaw holds them in rawdata.color
	// after the file's own levels were read.
	Black                    float64
	CBlack                   [4]float64
	Pattern                  []float64
	PatternRows, PatternCols int
	// Maximum is the white level (DN, black included) LibRaw's processing
	// starts from (rawdata.color.maximum, set by RescaleRaw when called);
	// AdjustMaximum its data-maximum threshold (params.adjust_maximum_thr;
	// 0: off), which LibRaw skips for decoders that fix the maximum
	// (FixedMaximum: LIBRAW_DECODER_FIXEDMAXC).
	Maximum       float64
	AdjustMaximum float64
	FixedMaximum  bool
	// CamMul and PreMul are the as-shot and daylight multipliers R, G, B,
	// G2 (rawdata.color.cam_mul, pre_mul).
	CamMul, PreMul [4]float64
}

// Bayer returns the view of the unpacked data for rawbatch's own
// demosaic, after Unpack and before Process. It fails with an error
// wrapping ErrNoCFA that says why when LibRaw's processing would do more
// than subtract the black level and scale the data before demosaicing it
// (X-Trans and other non-Bayer mosaics, four colours, Fuji SuperCCD,
// bad-pixel zeros, Phase One black tables, non-square pixels), or
// ErrWrongThread.
func (h *Handle) Bayer() (BayerView, error) {
	var v BayerView
	if err := h.checkThread(); err != nil {
		return v, err
	}
	if r := C.rb_bayer_reason(h.lr); r != 0 {
		return v, fmt.Errorf("%w: %s", ErrNoCFA, bayerReasons[r])
	}
	s := &h.lr.rawdata.sizes
	v.W, v.H, v.Stride = int(s.width), int(s.height), int(s.raw_pitch)/2
	if v.W > 0 && v.H > 0 {
		v.Pix = unsafe.Slice((*uint16)(unsafe.Pointer(C.rb_visible_origin(h.lr))), (v.H-1)*v.Stride+v.W)
	}
	C.rb_raw_colours(h.lr, 2, 2, (*C.uchar)(unsafe.Pointer(&v.Colour[0])))
	col := &h.lr.rawdata.color
	for i := range 4 {
		v.CBlack[i] = float64(col.cblack[i])
		v.CamMul[i] = float64(col.cam_mul[i])
		v.PreMul[i] = float64(col.pre_mul[i])
	}
	v.Black, v.Maximum = float64(col.black), float64(col.maximum)
	v.AdjustMaximum = float64(h.lr.params.adjust_maximum_thr)
	v.FixedMaximum = C.rb_fixed_maximum(h.lr) != 0
	v.Pattern, v.PatternRows, v.PatternCols = h.blackPattern()
	return v, nil
}

// RawDiscarder gives the memory of LibRaw's raw rows back to the system
// while rawbatch's demosaic runs through them top to bottom
// (madvise(MADV_DONTNEED) on the whole pages of the raw buffer above a
// row): the pages read as zeros afterwards, so nothing may read those rows
// again. Its Discard may be called from any goroutine (it does not touch
// the handle), only while the handle is open and before its next Process
// or CopyImage.
type RawDiscarder struct {
	mu    sync.Mutex
	start unsafe.Pointer // the raw buffer's first byte (raw row 0)
	pitch int            // bytes per raw row
	top   int            // top_margin: raw rows above the visible area
	rows  int            // raw rows in the buffer
	done  int            // bytes from start already discarded (page-aligned end)
	page  int
}

// RawDiscarder returns the discarder of the handle's unpacked raw data,
// after Unpack; errors as Bayer's.
func (h *Handle) RawDiscarder() (*RawDiscarder, error) {
	if _, err := h.Bayer(); err != nil {
		return nil, err
	}
	s := &h.lr.rawdata.sizes
	return &RawDiscarder{start: unsafe.Pointer(h.lr.rawdata.raw_image), pitch: int(s.raw_pitch), top: int(s.top_margin),
		rows: int(s.raw_height), page: os.Getpagesize()}, nil
}

// Discard releases the pages that lie wholly within the raw rows above
// visible row y (the margin rows above the visible area included). It
// returns the bytes released by this call.
func (d *RawDiscarder) Discard(y int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	end := min(d.top+y, d.rows) * d.pitch
	// Whole pages only: the first page may hold malloc's chunk header,
	// the last one the next chunk.
	first := (d.page - int(uintptr(d.start))%d.page) % d.page
	lo := max(first, d.done)
	hi := end - (int(uintptr(d.start))+end)%d.page
	if hi <= lo {
		return 0
	}
	b := unsafe.Slice((*byte)(unsafe.Add(d.start, lo)), hi-lo)
	if syscall.Madvise(b, syscall.MADV_DONTNEED) != nil {
		return 0
	}
	d.done = hi
	return hi - lo
}
