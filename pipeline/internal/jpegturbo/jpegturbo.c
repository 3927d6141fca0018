// jpegturbo.c: the C half of package jpegturbo (see jpegturbo.h and the
// package documentation in jpegturbo.go).
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <malloc.h>
#include <jerror.h>
#include "jpegturbo.h"

// rbJPEGWrite is exported by jpegturbo.go: it writes n bytes to the Go
// io.Writer behind handle and returns 0, or 1 when the writer failed (the
// Go error is kept on the Go side).
extern int rbJPEGWrite(uintptr_t handle, unsigned char *p, size_t n);

// rb_error_exit replaces libjpeg's, which prints and calls exit(): it
// formats the message and jumps back to the entry point that is running.
static void rb_error_exit(j_common_ptr cinfo) {
	rb_jpeg *j = (rb_jpeg *)cinfo;
	cinfo->err->format_message(cinfo, j->msg);
	longjmp(j->jb, 1);
}

// rb_output_message replaces libjpeg's, which prints to stderr: warnings
// and trace messages are counted, the first one kept (when no error is).
static void rb_output_message(j_common_ptr cinfo) {
	rb_jpeg *j = (rb_jpeg *)cinfo;
	if (j->warnings++ == 0 && j->msg[0] == 0) cinfo->err->format_message(cinfo, j->msg);
}

static void rb_dest_init(j_compress_ptr cinfo) {
	rb_jpeg *j = (rb_jpeg *)cinfo;
	j->dest.next_output_byte = j->buf;
	j->dest.free_in_buffer = RB_JPEG_BUF;
}

// rb_flush hands the first n bytes of the buffer to the Go writer; on
// failure it raises JERR_FILE_WRITE, which ends in rb_error_exit.
static void rb_flush(rb_jpeg *j, size_t n) {
	if (n > 0 && rbJPEGWrite(j->writer, j->buf, n) != 0) {
		j->write_failed = 1;
		ERREXIT(&j->c, JERR_FILE_WRITE);
	}
}

static boolean rb_dest_empty(j_compress_ptr cinfo) {
	rb_jpeg *j = (rb_jpeg *)cinfo;
	rb_flush(j, RB_JPEG_BUF); // libjpeg calls this with the buffer full
	rb_dest_init(cinfo);
	return TRUE;
}

static void rb_dest_term(j_compress_ptr cinfo) {
	rb_jpeg *j = (rb_jpeg *)cinfo;
	rb_flush(j, RB_JPEG_BUF - j->dest.free_in_buffer);
	rb_dest_init(cinfo);
}

rb_jpeg *rb_jpeg_new(void) {
	rb_jpeg *j = calloc(1, sizeof(rb_jpeg));
	if (j == NULL) return NULL;
	j->buf = malloc(RB_JPEG_BUF);
	if (j->buf == NULL) {
		free(j);
		return NULL;
	}
	j->c.err = jpeg_std_error(&j->err);
	j->err.error_exit = rb_error_exit;
	j->err.output_message = rb_output_message;
	if (setjmp(j->jb)) return j; // created stays 0; msg says why
	jpeg_create_compress(&j->c);
	j->created = 1;
	j->dest.init_destination = rb_dest_init;
	j->dest.empty_output_buffer = rb_dest_empty;
	j->dest.term_destination = rb_dest_term;
	j->c.dest = &j->dest;
	return j;
}

int rb_jpeg_start(rb_jpeg *j, uintptr_t writer, int width, int height, int quality, int h_samp, int v_samp, int gray, int optimize) {
	if (!j->created) return 1;
	if (setjmp(j->jb)) return 1;
	j->msg[0] = 0;
	j->warnings = 0;
	j->write_failed = 0;
	j->writer = writer;
	jpeg_abort_compress(&j->c); // back to the start state after an earlier failure
	j->c.image_width = (JDIMENSION)width;
	j->c.image_height = (JDIMENSION)height;
	j->c.input_components = gray ? 1 : 3;
	j->c.in_color_space = gray ? JCS_GRAYSCALE : JCS_RGB;
	jpeg_set_defaults(&j->c); // YCbCr (or one grey component), baseline Huffman, JFIF APP0 off below
	jpeg_set_quality(&j->c, quality, TRUE);
	j->c.optimize_coding = optimize ? TRUE : FALSE;
	j->c.write_JFIF_header = FALSE; // APP1 Exif comes right after SOI
	j->c.comp_info[0].h_samp_factor = h_samp;
	j->c.comp_info[0].v_samp_factor = v_samp;
	for (int i = 1; i < j->c.num_components; i++) {
		j->c.comp_info[i].h_samp_factor = 1;
		j->c.comp_info[i].v_samp_factor = 1;
	}
	jpeg_start_compress(&j->c, TRUE);
	return 0;
}

int rb_jpeg_marker(rb_jpeg *j, int code, const unsigned char *data, unsigned int len) {
	if (setjmp(j->jb)) return 1;
	jpeg_write_marker(&j->c, code, data, len);
	return 0;
}

int rb_jpeg_rows(rb_jpeg *j, unsigned char *rows, int n, size_t stride) {
	JSAMPROW ptr[RB_JPEG_MAXROWS];
	if (n > RB_JPEG_MAXROWS) n = RB_JPEG_MAXROWS;
	for (int i = 0; i < n; i++) ptr[i] = rows + (size_t)i * stride;
	if (setjmp(j->jb)) return 1;
	int done = 0;
	while (done < n) {
		JDIMENSION k = jpeg_write_scanlines(&j->c, ptr + done, (JDIMENSION)(n - done));
		if (k == 0) { // only a suspending destination returns 0; ours never does
			snprintf(j->msg, sizeof j->msg, "libjpeg took no scanline");
			return 1;
		}
		done += (int)k;
	}
	return 0;
}

int rb_jpeg_finish(rb_jpeg *j) {
	if (setjmp(j->jb)) return 1;
	jpeg_finish_compress(&j->c);
	return 0;
}

int rb_jpeg_abort(rb_jpeg *j) {
	if (!j->created) return 0;
	if (setjmp(j->jb)) return 1;
	jpeg_abort_compress(&j->c);
	return 0;
}

void rb_jpeg_free(rb_jpeg *j) {
	if (j == NULL) return;
	// jpeg_destroy_compress frees libjpeg's pools; it does nothing when
	// jpeg_create_compress failed before it made its memory manager.
	if (setjmp(j->jb) == 0) jpeg_destroy_compress(&j->c);
	free(j->buf);
	free(j);
}

int rb_jpeg_comp_samp(rb_jpeg *j, int comp, int *h, int *v) {
	if (comp < 0 || comp >= j->c.num_components) return 1;
	*h = j->c.comp_info[comp].h_samp_factor;
	*v = j->c.comp_info[comp].v_samp_factor;
	return 0;
}

// rb_jpeg_version is the version message of the libjpeg linked at run
// time (its JMSG_VERSION table entry, e.g. "2.1.5  23-Jan-2023").
const char *rb_jpeg_version(void) {
	struct jpeg_error_mgr e;
	jpeg_std_error(&e);
	if (JMSG_VERSION > e.last_jpeg_message || e.jpeg_message_table == NULL) return "";
	return e.jpeg_message_table[JMSG_VERSION];
}

// rb_jpeg_lib_path names the shared object that provides jpeg_std_error.
const char *rb_jpeg_lib_path(void) {
	Dl_info info;
	if (dladdr((void *)jpeg_std_error, &info) && info.dli_fname) return info.dli_fname;
	return "";
}

// rb_jpeg_lib_version is the libjpeg API version compiled against
// (JPEG_LIB_VERSION: 62 for libjpeg-turbo's default ABI); libjpeg checks
// it against its own at jpeg_create_compress.
int rb_jpeg_lib_version(void) { return JPEG_LIB_VERSION; }

// rb_jpeg_heap_in_use is glibc's heap in use (arena and mmapped blocks),
// in bytes, for this package's tests of libjpeg's working memory and of
// leaks.
long long rb_jpeg_heap_in_use(void) {
	struct mallinfo2 m = mallinfo2();
	return (long long)m.uordblks + (long long)m.hblkhd;
}
