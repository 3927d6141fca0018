// decode.c: the decompressor of package jpegturbo (see decode.h and
// decode.go): one call decodes a JPEG held in memory to 8-bit RGB at a
// DCT scale, into a buffer the caller owns.
#include <string.h>
#include "decode.h"

typedef struct {
	struct jpeg_decompress_struct d; // must stay the first member
	struct jpeg_error_mgr err;
	jmp_buf jb;
	char *msg;
	int warnings;
} rb_jpeg_d;

// rb_d_error_exit formats libjpeg's message and jumps back to
// rb_jpeg_decode's setjmp (libjpeg's own prints and calls exit()).
static void rb_d_error_exit(j_common_ptr cinfo) {
	rb_jpeg_d *j = (rb_jpeg_d *)cinfo;
	cinfo->err->format_message(cinfo, j->msg);
	longjmp(j->jb, 1);
}

// rb_d_output_message counts warnings (corrupt data libjpeg recovers
// from) instead of printing them.
static void rb_d_output_message(j_common_ptr cinfo) {
	((rb_jpeg_d *)cinfo)->warnings++;
}

// rb_d_init clears j and installs the error handlers that report into
// msg (the caller sets its own setjmp point before any libjpeg call).
static void rb_d_init(rb_jpeg_d *j, char *msg) {
	memset(j, 0, sizeof *j);
	j->msg = msg;
	msg[0] = 0;
	j->d.err = jpeg_std_error(&j->err);
	j->err.error_exit = rb_d_error_exit;
	j->err.output_message = rb_d_output_message;
}

// rb_d_open creates j's decompressor on data and reads its header, for
// 8-bit RGB output at the DCT scale 1/denom. Called after the caller's
// setjmp: a libjpeg error jumps back there.
static void rb_d_open(rb_jpeg_d *j, const unsigned char *data, unsigned long len, int denom) {
	jpeg_create_decompress(&j->d);
	jpeg_mem_src(&j->d, data, len);
	jpeg_read_header(&j->d, TRUE);
	j->d.out_color_space = JCS_RGB;
	j->d.scale_num = 1;
	j->d.scale_denom = denom;
}

int rb_jpeg_size(const unsigned char *data, unsigned long len, int denom, int *w, int *h, char *msg) {
	rb_jpeg_d j;
	rb_d_init(&j, msg);
	if (setjmp(j.jb)) {
		jpeg_destroy_decompress(&j.d);
		return -1;
	}
	rb_d_open(&j, data, len, denom);
	jpeg_calc_output_dimensions(&j.d);
	*w = (int)j.d.output_width;
	*h = (int)j.d.output_height;
	jpeg_destroy_decompress(&j.d);
	return 0;
}

int rb_jpeg_decode(const unsigned char *data, unsigned long len, int denom,
                   unsigned char *out, int w, int h, int *warnings, char *msg) {
	rb_jpeg_d j;
	rb_d_init(&j, msg);
	if (setjmp(j.jb)) {
		jpeg_destroy_decompress(&j.d);
		*warnings = j.warnings;
		return -1;
	}
	rb_d_open(&j, data, len, denom);
	j.d.dct_method = JDCT_ISLOW;
	jpeg_start_decompress(&j.d);
	if ((int)j.d.output_width != w || (int)j.d.output_height != h || j.d.output_components != 3) {
		snprintf(msg, JMSG_LENGTH_MAX, "decoded %ux%ux%d, expected %dx%dx3",
		         j.d.output_width, j.d.output_height, j.d.output_components, w, h);
		jpeg_destroy_decompress(&j.d);
		*warnings = j.warnings;
		return -1;
	}
	while (j.d.output_scanline < j.d.output_height) {
		JSAMPROW row = out + (size_t)j.d.output_scanline * (size_t)w * 3;
		jpeg_read_scanlines(&j.d, &row, 1);
	}
	jpeg_finish_decompress(&j.d);
	jpeg_destroy_decompress(&j.d);
	*warnings = j.warnings;
	return 0;
}
