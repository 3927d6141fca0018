// rawdata.c: the C half of rawdata.go, rawview.go and rawwrite.go: the
// unpacked raw data (rawdata.raw_image) read, counted and changed in place.
#include <string.h>
#include "rb_libraw.h"

// rb_raw_ok reports whether raw_image holds single-sample mosaic data
// (1), or there is nothing rawdata.go can read (0).
int rb_raw_ok(libraw_data_t *lr) {
	libraw_rawdata_t *rd = &lr->rawdata;
	if (!rd->raw_image) return 0;
	if (rd->color4_image || rd->color3_image) return 0;
	if (lr->idata.filters == 0) return 0;
	if (rd->sizes.raw_pitch < (unsigned)rd->sizes.raw_width * 2) return 0;
	if ((int)rd->sizes.top_margin + rd->sizes.height > rd->sizes.raw_height) return 0;
	if ((int)rd->sizes.left_margin + rd->sizes.width > rd->sizes.raw_width) return 0;
	return 1;
}

// rb_bayer_reason returns 0 when raw_image holds 3-colour Bayer data that
// LibRaw's processing would only black-subtract and scale before its
// demosaic, else a code naming what differs (see bayerReasons in
// rawview.go).
int rb_bayer_reason(libraw_data_t *lr) {
	libraw_rawdata_t *rd = &lr->rawdata;
	if (!rd->raw_image || rd->color4_image || rd->color3_image) return 1;
	if (lr->idata.filters <= 1000) return 2;
	if (lr->idata.colors != 3) return 3;
	if (rd->ioparams.fuji_width) return 4;
	if (rd->ioparams.zero_is_bad) return 5;
	if (rd->ph1_cblack || rd->ph1_rblack) return 6;
	if (lr->sizes.pixel_aspect < 0.999 || lr->sizes.pixel_aspect > 1.001) return 7;
	if (!rb_raw_ok(lr)) return 1;
	return 0;
}

// rb_raw_row is the first photosite of visible row `row` in raw_image.
static ushort *rb_raw_row(libraw_data_t *lr, int row) {
	libraw_image_sizes_t *s = &lr->rawdata.sizes;
	return (ushort *)((char *)lr->rawdata.raw_image + (size_t)(row + s->top_margin) * s->raw_pitch) + s->left_margin;
}

// rb_visible_origin is the top-left photosite of the visible area.
ushort *rb_visible_origin(libraw_data_t *lr) { return rb_raw_row(lr, 0); }

// rb_raw_copy copies the visible area (width × height, row-major) into dst.
void rb_raw_copy(libraw_data_t *lr, ushort *dst) {
	int w = lr->rawdata.sizes.width, h = lr->rawdata.sizes.height;
	for (int r = 0; r < h; r++) memcpy(dst + (size_t)r * w, rb_raw_row(lr, r), (size_t)w * sizeof(ushort));
}

// rb_raw_store copies src (width × height, row-major) into the visible
// area of raw_image.
void rb_raw_store(libraw_data_t *lr, const ushort *src) {
	int w = lr->rawdata.sizes.width, h = lr->rawdata.sizes.height;
	for (int r = 0; r < h; r++) memcpy(rb_raw_row(lr, r), src + (size_t)r * w, (size_t)w * sizeof(ushort));
}

// rb_raw_colours writes libraw_COLOR(row, col) for the first rows × cols
// photosites of the visible area into dst (row-major).
void rb_raw_colours(libraw_data_t *lr, int rows, int cols, unsigned char *dst) {
	for (int r = 0; r < rows; r++)
		for (int c = 0; c < cols; c++) dst[r * cols + c] = (unsigned char)libraw_COLOR(lr, r, c);
}

// RB_PERIOD is a period of the colour pattern in both directions for every
// pattern LibRaw knows (2×2 Bayer, 6×6 X-Trans, 16×16 Leaf): their least
// common multiple.
#define RB_PERIOD 48

// rb_pattern fills pat with the colour index (0..3) of the top-left
// RB_PERIOD × RB_PERIOD photosites.
static void rb_pattern(libraw_data_t *lr, unsigned char pat[RB_PERIOD][RB_PERIOD]) {
	for (int r = 0; r < RB_PERIOD; r++)
		for (int c = 0; c < RB_PERIOD; c++) pat[r][c] = (unsigned char)(libraw_COLOR(lr, r, c) & 3);
}

// rb_raw_histogram counts the raw values of visible rows r0..r1−1 per
// colour index (libraw_COLOR, 0..3) into hist, 4 × 65536 counters, which
// it adds to (the caller zeroes them).
void rb_raw_histogram(libraw_data_t *lr, int r0, int r1, unsigned *hist) {
	int w = lr->rawdata.sizes.width;
	unsigned char pat[RB_PERIOD][RB_PERIOD];
	rb_pattern(lr, pat);
	for (int r = r0; r < r1; r++) {
		const ushort *p = rb_raw_row(lr, r);
		const unsigned char *pr = pat[r % RB_PERIOD];
		for (int c0 = 0; c0 < w; c0 += RB_PERIOD) {
			int n = w - c0 < RB_PERIOD ? w - c0 : RB_PERIOD;
			for (int j = 0; j < n; j++) hist[(size_t)pr[j] * 65536 + p[c0 + j]]++;
		}
	}
}

// rb_rescale_value is v of a colour with black, gain and clip mapped as
// rb_raw_rescale_rows says. One function (not inlined) for the table and the
// direct pass, so that both round alike whatever the compiler's flags.
__attribute__((noinline)) static ushort rb_rescale_value(unsigned v0, double black, double gain, unsigned clip) {
	double v = v0;
	if (v > black) v = black + (v - black) * gain;
	if (v > clip) v = clip;
	return (ushort)(v + 0.5);
}

// rb_raw_rescale_table fills lut (4 × 65536) with the mapping of each
// colour's values that rb_raw_rescale_rows applies.
void rb_raw_rescale_table(const double *black, const double *gain, const unsigned *clip, ushort *lut) {
	for (int k = 0; k < 4; k++)
		for (int i = 0; i < 65536; i++) lut[k * 65536 + i] = rb_rescale_value(i, black[k], gain[k], clip[k]);
}

// rb_raw_rescale_rows maps each photosite of colour k of the raw buffer's
// rows r0..r1−1 (visible area) from black[k] + v to black[k] + v·gain[k],
// clamped to at most clip[k]. With lut (rb_raw_rescale_table's) the pass
// is one look-up per photosite; without (NULL: an image of fewer
// photosites than the table's entries), each photosite is mapped
// directly: the same values. It reads and writes those rows only, so
// bands of rows may be mapped on several threads at once.
void rb_raw_rescale_rows(libraw_data_t *lr, int r0, int r1, const double *black, const double *gain, const unsigned *clip, const ushort *lut) {
	int w = lr->rawdata.sizes.width;
	unsigned char pat[RB_PERIOD][RB_PERIOD];
	rb_pattern(lr, pat);
	for (int r = r0; r < r1; r++) {
		ushort *p = rb_raw_row(lr, r);
		const unsigned char *pr = pat[r % RB_PERIOD];
		for (int c0 = 0; c0 < w; c0 += RB_PERIOD) {
			int n = w - c0 < RB_PERIOD ? w - c0 : RB_PERIOD;
			if (lut)
				for (int j = 0; j < n; j++) p[c0 + j] = lut[(size_t)pr[j] * 65536 + p[c0 + j]];
			else
				for (int j = 0; j < n; j++) {
					int k = pr[j];
					p[c0 + j] = rb_rescale_value(p[c0 + j], black[k], gain[k], clip[k]);
				}
		}
	}
}

// rb_raw_set_white sets the white level LibRaw will use after a rescale
// (rawdata.color.maximum, restored into color by Process) and turns off
// its data-maximum adjustment.
void rb_raw_set_white(libraw_data_t *lr, unsigned white) {
	lr->rawdata.color.maximum = white;
	lr->color.maximum = white;
	lr->params.adjust_maximum_thr = 0;
}

// rb_fixed_maximum reports whether the file's decoder fixes the white
// level (LIBRAW_DECODER_FIXEDMAXC: LibRaw skips its data-maximum
// adjustment).
int rb_fixed_maximum(libraw_data_t *lr) {
	libraw_decoder_info_t di;
	if (libraw_get_decoder_info(lr, &di) != LIBRAW_SUCCESS) return 0;
	return (di.decoder_flags & LIBRAW_DECODER_FIXEDMAXC) != 0;
}
