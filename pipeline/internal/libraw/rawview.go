package libraw

// In-place access to the unpacked Bayer data and the LibRaw state that
// decides how LibRaw's own processing would scale it (scale_colors), for
// rawbatch's own demosaic (issue 14 point 4): the samples are read where
// LibRaw keeps them, without a copy.

/*
#include <libraw/libraw.h>

// rb_bayer_reason returns 0 when raw_image holds 3-colour Bayer data that
// LibRaw's processing would only black-subtract and scale before its
// demosaic, else a code naming what differs (see bayerReasons).
static int rb_bayer_reason(libraw_data_t *lr) {
	libraw_rawdata_t *rd = &lr->rawdata;
	if (!rd->raw_image || rd->color4_image || rd->color3_image) return 1;
	if (lr->idata.filters <= 1000) return 2;
	if (lr->idata.colors != 3) return 3;
	if (rd->ioparams.fuji_width) return 4;
	if (rd->ioparams.zero_is_bad) return 5;
	if (rd->ph1_cblack || rd->ph1_rblack) return 6;
	if (lr->sizes.pixel_aspect < 0.999 || lr->sizes.pixel_aspect > 1.001) return 7;
	if (rd->sizes.raw_pitch < (unsigned)rd->sizes.raw_width * 2) return 1;
	if ((int)rd->sizes.top_margin + rd->sizes.height > rd->sizes.raw_height) return 1;
	if ((int)rd->sizes.left_margin + rd->sizes.width > rd->sizes.raw_width) return 1;
	return 0;
}

static ushort *rb_visible_origin(libraw_data_t *lr) {
	libraw_image_sizes_t *s = &lr->rawdata.sizes;
	return (ushort *)((char *)lr->rawdata.raw_image + (size_t)s->top_margin * s->raw_pitch) + s->left_margin;
}

static int rb_bv_colour(libraw_data_t *lr, int r, int c) { return libraw_COLOR(lr, r, c); }
static int rb_fixed_maximum(libraw_data_t *lr) {
	libraw_decoder_info_t di;
	if (libraw_get_decoder_info(lr, &di) != LIBRAW_SUCCESS) return 0;
	return (di.decoder_flags & LIBRAW_DECODER_FIXEDMAXC) != 0;
}
static unsigned rb_rd_cblack(libraw_data_t *lr, int i) { return lr->rawdata.color.cblack[i]; }
static float rb_rd_cam_mul(libraw_data_t *lr, int i) { return lr->rawdata.color.cam_mul[i]; }
static float rb_rd_pre_mul(libraw_data_t *lr, int i) { return lr->rawdata.color.pre_mul[i]; }
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
	for i := range 4 {
		v.Colour[i] = uint8(C.rb_bv_colour(h.lr, C.int(i/2), C.int(i%2)))
		v.CBlack[i] = float64(C.rb_rd_cblack(h.lr, C.int(i)))
		v.CamMul[i] = float64(C.rb_rd_cam_mul(h.lr, C.int(i)))
		v.PreMul[i] = float64(C.rb_rd_pre_mul(h.lr, C.int(i)))
	}
	col := &h.lr.rawdata.color
	v.Black, v.Maximum = float64(col.black), float64(col.maximum)
	v.AdjustMaximum = float64(h.lr.params.adjust_maximum_thr)
	v.FixedMaximum = C.rb_fixed_maximum(h.lr) != 0
	pr, pc := int(C.rb_rd_cblack(h.lr, 4)), int(C.rb_rd_cblack(h.lr, 5))
	if pr > 0 && pc > 0 && pr*pc <= C.LIBRAW_CBLACK_SIZE-6 {
		v.Pattern = make([]float64, pr*pc)
		for i := range v.Pattern {
			v.Pattern[i] = float64(C.rb_rd_cblack(h.lr, C.int(6+i)))
		}
		v.PatternRows, v.PatternCols = pr, pc
	}
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
