package libraw

// Access to the unpacked raw CFA data between Unpack and Process: the data
// itself, the colour of each photosite, the black and white levels, and a
// way to change the white level LibRaw's Process uses.
//
// Supported: single-sample mosaic data in rawdata.raw_image, that is Bayer
// (filters > 1000) and X-Trans (filters 9) sensors, and Leaf-style 16×16
// patterns (filters 1). Not supported (ErrNoCFA): files LibRaw unpacks into
// rawdata.color4_image or color3_image (linear DNG, sRAW/mRAW, Foveon,
// some Sinar/Phase One multi-shot), floating-point DNGs, and old Fuji
// SuperCCD files whose raw_image is stored rotated by 45° (fuji_width,
// which LibRaw does not expose; such files have raw_width != width and
// are rare). Such files keep LibRaw's own white level.
//
// Every function here copies or changes data inside one C call and keeps no
// pointer; none of them allocates C memory (RescaleRaw's table is Go
// memory lent for the call).

/*
#include "rb_libraw.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"
)

// ErrNoCFA is returned by the raw-data functions when the unpacked file has
// no single-sample mosaic data LibRaw keeps in raw_image (see the list at
// the top of rawdata.go), or when they are called before Unpack or after
// CopyImage.
var ErrNoCFA = errors.New("libraw: no raw CFA data (not unpacked, or not a Bayer/X-Trans mosaic)")

// RawLevels are the black and white levels of the unpacked raw data, in raw
// units (DN), as LibRaw holds them in rawdata.color after Unpack.
type RawLevels struct {
	// Black is the black level per colour index 0..3 of Colour (R, G, B,
	// G2/fourth colour): color.black + color.cblack[k], plus the mean of
	// the cblack[6..] pattern when LibRaw keeps a pattern whose cells do not
	// depend on the colour (BlackPattern).
	Black [4]float64
	// BlackPattern is LibRaw's black-level pattern cblack[6..] of
	// BlackPatternRows × BlackPatternCols cells (cblack[4], cblack[5]) in
	// DN, added to Black per photosite (row % rows, col % cols); nil when
	// LibRaw has none. Black already includes its mean.
	BlackPattern                       []float64
	BlackPatternRows, BlackPatternCols int
	// White is the white level LibRaw would use (color.maximum, before its
	// data-maximum adjustment at Process), including the black level.
	White int
	// LinearMax is the per-channel white level the file tags
	// (color.linear_max: the DNG WhiteLevel per sample, or a maker-note
	// value); 0 where the file tags none.
	LinearMax [4]int
	// DataMaximum is the largest raw value of the visible area (what
	// LibRaw's adjust_maximum would take), computed here from the data.
	DataMaximum int
}

// RawSize returns the visible area of the raw data in photosites
// (rawdata.sizes.width, height) after Unpack, or ErrNoCFA.
func (h *Handle) RawSize() (w, h2 int, err error) {
	if err := h.checkRaw(); err != nil {
		return 0, 0, err
	}
	s := &h.lr.rawdata.sizes
	return int(s.width), int(s.height), nil
}

func (h *Handle) checkRaw() error {
	if err := h.checkThread(); err != nil {
		return err
	}
	if C.rb_raw_ok(h.lr) == 0 {
		return ErrNoCFA
	}
	return nil
}

// CopyRaw copies the visible area of the raw CFA data (width × height
// photosites, row-major, raw DN including the black level) into dst,
// allocating it when too small, and returns it with its size. Call it
// after Unpack and before Process; errors: ErrNoCFA, ErrWrongThread.
func (h *Handle) CopyRaw(dst []uint16) (raw []uint16, w, h2 int, err error) {
	if w, h2, err = h.RawSize(); err != nil {
		return nil, 0, 0, err
	}
	n := w * h2
	if cap(dst) < n {
		dst = make([]uint16, n)
	}
	dst = dst[:n]
	if n > 0 {
		C.rb_raw_copy(h.lr, (*C.ushort)(unsafe.Pointer(&dst[0])))
	}
	return dst, w, h2, nil
}

// CFAPattern returns the colour index (libraw_COLOR: 0 R, 1 G, 2 B, 3 the
// second green or fourth colour) of the photosites in the top-left rows ×
// cols corner of the visible area, row-major. The pattern repeats with a
// period of 2 (Bayer), 6 (X-Trans) or 16 (Leaf), so a 48 × 48 corner
// describes every photosite: Colour(r, c) = p[(r%48)*48 + c%48].
// Errors: ErrNoCFA, ErrWrongThread.
func (h *Handle) CFAPattern(rows, cols int) ([]uint8, error) {
	if err := h.checkRaw(); err != nil {
		return nil, err
	}
	if rows <= 0 || cols <= 0 {
		return nil, fmt.Errorf("libraw: CFA pattern of %d×%d photosites", rows, cols)
	}
	p := make([]uint8, rows*cols)
	C.rb_raw_colours(h.lr, C.int(rows), C.int(cols), (*C.uchar)(unsafe.Pointer(&p[0])))
	return p, nil
}

// RawHistogram counts the raw values (DN, including black) of the visible
// area per colour index 0..3 of CFAPattern: hist[k][v] is the number of
// photosites of colour k with value v. Counted in C without copying the
// data (4 × 65536 counters, 1 MiB). Errors: ErrNoCFA, ErrWrongThread.
func (h *Handle) RawHistogram() (hist [4][]uint32, err error) { return h.RawHistogramOn(1) }

// RawHistogramOn is RawHistogram counted on up to threads goroutines
// (≤ 0: GOMAXPROCS) over bands of rows, each into its own 1 MiB of
// counters, summed at the end: the same counts.
func (h *Handle) RawHistogramOn(threads int) (hist [4][]uint32, err error) {
	return h.rawHistogramInto(threads, nil)
}

// HistogramCounters is the length of a raw histogram's buffer: 65536
// counters of each of 4 colours (1 MiB).
const HistogramCounters = 4 * 65536

// rawHistogramInto is RawHistogramOn counting into buf when it holds
// HistogramCounters zeroed counters (else into a new buffer): the
// histogram returned is buf.
func (h *Handle) rawHistogramInto(threads int, buf []uint32) (hist [4][]uint32, err error) {
	if err := h.checkRaw(); err != nil {
		return hist, err
	}
	if len(buf) != HistogramCounters {
		buf = make([]uint32, HistogramCounters)
	}
	rows := int(h.lr.rawdata.sizes.height)
	bufs := make([][]uint32, rowBandCount(threads, rows))
	for i := range bufs {
		bufs[i] = buf
		if i > 0 {
			bufs[i] = make([]uint32, HistogramCounters)
		}
	}
	// Each band reads the raw data only.
	onRowBands(len(bufs), rows, func(i, r0, r1 int) {
		C.rb_raw_histogram(h.lr, C.int(r0), C.int(r1), (*C.uint)(unsafe.Pointer(&bufs[i][0])))
	})
	for _, b := range bufs[1:] {
		for v, n := range b {
			buf[v] += n
		}
	}
	for k := range 4 {
		hist[k] = buf[k*65536 : (k+1)*65536 : (k+1)*65536]
	}
	return hist, nil
}

// Levels returns the black and white levels of the unpacked data
// (rawdata.color; see RawLevels). DataMaximum is computed from the data
// (one pass over it). Errors: ErrNoCFA, ErrWrongThread.
func (h *Handle) Levels() (RawLevels, error) {
	l, _, err := h.LevelsAndHistogram(1)
	return l, err
}

// LevelsAndHistogram returns Levels and the RawHistogram it counted them
// from (one pass over the data for both), counted on up to threads
// goroutines as RawHistogramOn. Errors: as Levels.
func (h *Handle) LevelsAndHistogram(threads int) (RawLevels, [4][]uint32, error) {
	return h.LevelsAndHistogramInto(threads, nil)
}

// LevelsAndHistogramInto is LevelsAndHistogram counting the histogram
// into buf when it holds HistogramCounters zeroed counters (else into a
// new buffer): the caller, once done with the histogram, may zero buf and
// count the next file's into it instead of fresh memory.
func (h *Handle) LevelsAndHistogramInto(threads int, buf []uint32) (RawLevels, [4][]uint32, error) {
	var l RawLevels
	hist, err := h.rawHistogramInto(threads, buf)
	if err != nil {
		return l, hist, err
	}
	col := &h.lr.rawdata.color
	pat, pr, pc := h.blackPattern()
	var patMean float64
	for _, v := range pat {
		patMean += v
	}
	if len(pat) > 0 {
		patMean /= float64(len(pat))
	}
	for k := range 4 {
		l.Black[k] = float64(col.black) + float64(col.cblack[k]) + patMean
		l.LinearMax[k] = int(col.linear_max[k])
	}
	l.BlackPattern, l.BlackPatternRows, l.BlackPatternCols = pat, pr, pc
	l.White = int(col.maximum)
	for k := range 4 {
		for v := len(hist[k]) - 1; v > l.DataMaximum; v-- {
			if hist[k][v] != 0 {
				l.DataMaximum = v
				break
			}
		}
	}
	return l, hist, nil
}

// blackPattern returns LibRaw's black-level pattern of the unpacked data
// (rawdata.color.cblack[6..], rows × cols cells given by cblack[4] and
// cblack[5], DN), or nil, 0, 0 when it has none.
func (h *Handle) blackPattern() (pat []float64, rows, cols int) {
	cb := &h.lr.rawdata.color.cblack
	rows, cols = int(cb[4]), int(cb[5])
	if rows <= 0 || cols <= 0 || rows*cols > C.LIBRAW_CBLACK_SIZE-6 {
		return nil, 0, 0
	}
	pat = make([]float64, rows*cols)
	for i := range pat {
		pat[i] = float64(cb[6+i])
	}
	return pat, rows, cols
}

// rowBandCount is how many bands of rows a pass over the raw data's rows
// is cut into on threads goroutines (0: GOMAXPROCS): at most one a
// thread, and bands of at least 64 rows.
func rowBandCount(threads, rows int) int {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	return max(1, min(threads, rows/64))
}

// onRowBands calls f(i, r0, r1) for band i of n of the rows 0..rows−1
// (rows r0..r1−1), each but the last on a goroutine of its own and the
// last on the calling thread (the handle's), and returns when all are
// done. f may only touch the raw data's rows of its band (no other use
// of the handle from another thread).
func onRowBands(n, rows int, f func(i, r0, r1 int)) {
	var wg sync.WaitGroup
	for i := range n - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(i, rows*i/n, rows*(i+1)/n)
		}()
	}
	f(n-1, rows*(n-1)/n, rows)
	wg.Wait()
}

// rescaleTableEntries is the size of RescaleRaw's table: 65536 values of
// 4 colours.
const rescaleTableEntries = 4 * 65536

// RescaleRaw changes the raw data in place before Process so that LibRaw
// clips every colour at one level: each photosite of colour k with value v
// becomes black[k] + (v − black[k])·gain[k] (v ≤ black[k] unchanged),
// clamped to clip[k], all in DN; then white (DN, including black) becomes
// the white level of Process (rawdata.color.maximum) and LibRaw's
// data-maximum adjustment (adjust_maximum_thr) is turned off, so a hot
// photosite cannot move it. The rows are mapped in bands on up to threads
// goroutines (0: GOMAXPROCS), the last band on the handle's thread; the
// values do not depend on their number. Gains must be finite and
// positive, clip and white in 1..65535. Call after Unpack and before
// Process. Errors: ErrNoCFA, ErrWrongThread, invalid arguments.
func (h *Handle) RescaleRaw(threads int, black, gain [4]float64, clip [4]int, white int) error {
	if err := h.checkRaw(); err != nil {
		return err
	}
	var cb, cg [4]C.double
	var cc [4]C.uint
	for k := range 4 {
		if !(gain[k] > 0) || math.IsInf(gain[k], 0) || clip[k] < 1 || clip[k] > 65535 || !(black[k] >= 0) {
			return fmt.Errorf("libraw: rescale of colour %d: gain %g, clip %d, black %g", k, gain[k], clip[k], black[k])
		}
		cb[k], cg[k], cc[k] = C.double(black[k]), C.double(gain[k]), C.uint(clip[k])
	}
	if white < 1 || white > 65535 {
		return fmt.Errorf("libraw: white level %d outside 1..65535", white)
	}
	// The table of every value costs more than mapping the photosites of
	// a small image one by one (the same values).
	var lut *C.ushort
	sz := h.lr.rawdata.sizes
	if int(sz.width)*int(sz.height) >= rescaleTableEntries {
		tab := make([]uint16, rescaleTableEntries)
		lut = (*C.ushort)(unsafe.Pointer(&tab[0]))
		C.rb_raw_rescale_table(&cb[0], &cg[0], &cc[0], lut)
	}
	// Each band reads and writes its rows of the raw data only.
	rows := int(sz.height)
	onRowBands(rowBandCount(threads, rows), rows, func(_, r0, r1 int) {
		C.rb_raw_rescale_rows(h.lr, C.int(r0), C.int(r1), &cb[0], &cg[0], &cc[0], lut)
	})
	C.rb_raw_set_white(h.lr, C.uint(white))
	return nil
}

// AppliedMultipliers returns the white-balance multipliers R, G, B, G2 that
// Process applied (color.pre_mul after scale_colors, divided by the
// smallest): the as-shot, daylight, user or LibRaw's own grey-world ones.
// Valid between Process and CopyImage; zero otherwise.
func (h *Handle) AppliedMultipliers() (mul [4]float64) {
	if h.checkThread() != nil || h.lr.image == nil {
		return mul
	}
	for i := range 4 {
		mul[i] = float64(h.lr.color.pre_mul[i])
	}
	return mul
}

// LibRaw's white-balance preset indices (LibRaw_WBI_Types) for
// PresetMultipliers.
const (
	WBIDaylight = C.LIBRAW_WBI_Daylight
	WBITungsten = C.LIBRAW_WBI_Tungsten
)

// PresetMultipliers returns the camera's stored multipliers R, G, B, G2 of
// a white-balance preset (color.WB_Coeffs[preset], from the maker notes;
// raw integer coefficients, compare their ratios), all zero when the file
// stores none. Valid after Open.
func (h *Handle) PresetMultipliers(preset int) (mul [4]float64) {
	if h.checkThread() != nil || preset < 0 || preset > 255 {
		return mul
	}
	for i := range 4 {
		mul[i] = float64(h.lr.color.WB_Coeffs[preset][i])
	}
	return mul
}
