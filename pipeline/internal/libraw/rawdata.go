package libraw

// Access to the unpacked raw CFA data between Unpack and Process: the data
// itself, the colour of each photosite, the black and white levels, and a
// way to change the white level LibRaw's Process uses (issue 12).
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
#include <stdlib.h>
#include <string.h>
#include <libraw/libraw.h>

// rb_raw_ok reports whether raw_image holds single-sample mosaic data
// (1), or there is nothing rawdata.go can read (0).
static int rb_raw_ok(libraw_data_t *lr) {
	if (!lr->rawdata.raw_image) return 0;
	if (lr->rawdata.color4_image || lr->rawdata.color3_image) return 0;
	if (lr->idata.filters == 0) return 0;
	if (lr->rawdata.sizes.raw_pitch < (unsigned)lr->rawdata.sizes.raw_width * 2) return 0;
	if ((int)lr->rawdata.sizes.top_margin + lr->rawdata.sizes.height > lr->rawdata.sizes.raw_height) return 0;
	if ((int)lr->rawdata.sizes.left_margin + lr->rawdata.sizes.width > lr->rawdata.sizes.raw_width) return 0;
	return 1;
}

static inline ushort *rb_raw_row(libraw_data_t *lr, int row) {
	libraw_image_sizes_t *s = &lr->rawdata.sizes;
	return (ushort *)((char *)lr->rawdata.raw_image + (size_t)(row + s->top_margin) * s->raw_pitch) + s->left_margin;
}

// rb_raw_copy copies the visible area (width × height, row-major) into dst.
static void rb_raw_copy(libraw_data_t *lr, ushort *dst) {
	int w = lr->rawdata.sizes.width, h = lr->rawdata.sizes.height;
	for (int r = 0; r < h; r++) memcpy(dst + (size_t)r * w, rb_raw_row(lr, r), (size_t)w * sizeof(ushort));
}

// rb_raw_colours writes libraw_COLOR(row, col) for the first rows × cols
// photosites of the visible area into dst (row-major).
static void rb_raw_colours(libraw_data_t *lr, int rows, int cols, unsigned char *dst) {
	for (int r = 0; r < rows; r++)
		for (int c = 0; c < cols; c++) dst[r * cols + c] = (unsigned char)libraw_COLOR(lr, r, c);
}

// rb_raw_histogram counts the raw values of visible rows r0..r1−1 per
// colour index (libraw_COLOR, 0..3) into hist, 4 × 65536 counters, which
// it adds to (the caller zeroes them).
static void rb_raw_histogram(libraw_data_t *lr, int r0, int r1, unsigned *hist) {
	int w = lr->rawdata.sizes.width;
	// The colour pattern repeats with a period dividing 48 in both
	// directions for every pattern LibRaw knows (2×2 Bayer, 6×6 X-Trans,
	// 16×16 Leaf is 16; 48 is their common multiple).
	unsigned char pat[48][48];
	for (int r = 0; r < 48; r++)
		for (int c = 0; c < 48; c++) pat[r][c] = (unsigned char)(libraw_COLOR(lr, r, c) & 3);
	for (int r = r0; r < r1; r++) {
		const ushort *p = rb_raw_row(lr, r);
		const unsigned char *pr = pat[r % 48];
		for (int c0 = 0; c0 < w; c0 += 48) {
			int n = w - c0 < 48 ? w - c0 : 48;
			for (int j = 0; j < n; j++) hist[(size_t)pr[j] * 65536 + p[c0 + j]]++;
		}
	}
}

// rb_raw_rescale maps each photosite of colour k from black[k] + v to
// black[k] + v·gain[k], clamped to at most clip[k], over the whole raw
// buffer's visible area, then sets the white level LibRaw will use
// (rawdata.color.maximum, restored into color by Process) and turns off
// its data-maximum adjustment. The mapping of each colour's 65536 values
// is tabulated first in lut (4 × 65536, the caller's), so the pass over
// the data is one look-up per photosite.
static void rb_raw_rescale(libraw_data_t *lr, const double *black, const double *gain, const unsigned *clip, unsigned white, ushort *lut) {
	int w = lr->rawdata.sizes.width, h = lr->rawdata.sizes.height;
	for (int k = 0; k < 4; k++)
		for (int i = 0; i < 65536; i++) {
			double v = i;
			if (v > black[k]) v = black[k] + (v - black[k]) * gain[k];
			if (v > clip[k]) v = clip[k];
			lut[k * 65536 + i] = (ushort)(v + 0.5);
		}
	unsigned char pat[48][48];
	for (int r = 0; r < 48; r++)
		for (int c = 0; c < 48; c++) pat[r][c] = (unsigned char)(libraw_COLOR(lr, r, c) & 3);
	for (int r = 0; r < h; r++) {
		ushort *p = rb_raw_row(lr, r);
		const unsigned char *pr = pat[r % 48];
		for (int c0 = 0; c0 < w; c0 += 48) {
			int n = w - c0 < 48 ? w - c0 : 48;
			for (int j = 0; j < n; j++) p[c0 + j] = lut[(size_t)pr[j] * 65536 + p[c0 + j]];
		}
	}
	lr->rawdata.color.maximum = white;
	lr->color.maximum = white;
	lr->params.adjust_maximum_thr = 0;
}

static float rb_pre_mul(libraw_data_t *lr, int i) { return lr->color.pre_mul[i]; }
static int rb_wb_coeff(libraw_data_t *lr, int preset, int i) { return lr->color.WB_Coeffs[preset & 255][i]; }
static unsigned rb_cblack(libraw_data_t *lr, int i) { return lr->rawdata.color.cblack[i]; }
static long rb_linear_max(libraw_data_t *lr, int i) { return lr->rawdata.color.linear_max[i]; }
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
	if err := h.checkRaw(); err != nil {
		return hist, err
	}
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	rows := int(h.lr.rawdata.sizes.height)
	threads = max(1, min(threads, rows/64))
	bufs := make([][]uint32, threads)
	var wg sync.WaitGroup
	for i := range bufs {
		bufs[i] = make([]uint32, 4*65536)
		r0, r1 := rows*i/threads, rows*(i+1)/threads
		count := func() { C.rb_raw_histogram(h.lr, C.int(r0), C.int(r1), (*C.uint)(unsafe.Pointer(&bufs[i][0]))) }
		if i == threads-1 {
			count() // the last band on the handle's own thread
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Reads the raw data only; the handle is not used otherwise.
			count()
		}()
	}
	wg.Wait()
	buf := bufs[0]
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
	var l RawLevels
	hist, err := h.RawHistogramOn(threads)
	if err != nil {
		return l, hist, err
	}
	col := &h.lr.rawdata.color
	base := float64(col.black)
	var pat []float64
	pr, pc := int(C.rb_cblack(h.lr, 4)), int(C.rb_cblack(h.lr, 5))
	var patMean float64
	if pr > 0 && pc > 0 && pr*pc <= C.LIBRAW_CBLACK_SIZE-6 {
		pat = make([]float64, pr*pc)
		for i := range pat {
			pat[i] = float64(C.rb_cblack(h.lr, C.int(6+i)))
			patMean += pat[i]
		}
		patMean /= float64(len(pat))
	}
	for k := range 4 {
		l.Black[k] = base + float64(C.rb_cblack(h.lr, C.int(k))) + patMean
		l.LinearMax[k] = int(C.rb_linear_max(h.lr, C.int(k)))
	}
	l.BlackPattern, l.BlackPatternRows, l.BlackPatternCols = pat, pr, pc
	if pat == nil {
		l.BlackPatternRows, l.BlackPatternCols = 0, 0
	}
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

// RescaleRaw changes the raw data in place before Process so that LibRaw
// clips every colour at one level: each photosite of colour k with value v
// becomes black[k] + (v − black[k])·gain[k] (v ≤ black[k] unchanged),
// clamped to clip[k], all in DN; then white (DN, including black) becomes
// the white level of Process (rawdata.color.maximum) and LibRaw's
// data-maximum adjustment (adjust_maximum_thr) is turned off, so a hot
// photosite cannot move it. Gains must be finite and positive, clip and
// white in 1..65535. Call after Unpack and before Process.
// Errors: ErrNoCFA, ErrWrongThread, invalid arguments.
func (h *Handle) RescaleRaw(black, gain [4]float64, clip [4]int, white int) error {
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
	lut := make([]uint16, 4*65536)
	C.rb_raw_rescale(h.lr, &cb[0], &cg[0], &cc[0], C.uint(white), (*C.ushort)(unsafe.Pointer(&lut[0])))
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
		mul[i] = float64(C.rb_pre_mul(h.lr, C.int(i)))
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
		mul[i] = float64(C.rb_wb_coeff(h.lr, C.int(preset), C.int(i)))
	}
	return mul
}
