// jpegturbo.h: rawbatch's compressor around libjpeg(-turbo)'s libjpeg API.
// Every entry point that can reach libjpeg's error_exit sets its own
// setjmp point, so a libjpeg error returns an error code (and the message
// in rb_jpeg.msg) and never leaves the C function by any other way.
#ifndef RAWBATCH_JPEGTURBO_H
#define RAWBATCH_JPEGTURBO_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <setjmp.h>
#include <jpeglib.h>

// RB_JPEG_BUF is the size in bytes of the C output buffer that the
// destination manager hands to the Go writer each time it is full.
#define RB_JPEG_BUF (1 << 16)

// RB_JPEG_MAXROWS is the most rows one rb_jpeg_rows call takes.
#define RB_JPEG_MAXROWS 16

typedef struct {
	struct jpeg_compress_struct c;   // must stay the first member
	struct jpeg_error_mgr err;
	struct jpeg_destination_mgr dest;
	jmp_buf jb;                      // the active entry point's setjmp
	uintptr_t writer;                // cgo.Handle of the Go io.Writer
	JOCTET *buf;                     // RB_JPEG_BUF bytes, malloc'd
	int created;                     // jpeg_create_compress succeeded
	int write_failed;                // the Go writer returned an error
	int warnings;                    // libjpeg warnings (never printed)
	char msg[JMSG_LENGTH_MAX];       // the message of the error (or first warning)
} rb_jpeg;

rb_jpeg *rb_jpeg_new(void);
int rb_jpeg_start(rb_jpeg *j, uintptr_t writer, int width, int height, int quality, int h_samp, int v_samp, int gray, int optimize);
int rb_jpeg_marker(rb_jpeg *j, int code, const unsigned char *data, unsigned int len);
int rb_jpeg_rows(rb_jpeg *j, unsigned char *rows, int n, size_t stride);
int rb_jpeg_finish(rb_jpeg *j);
int rb_jpeg_abort(rb_jpeg *j);
void rb_jpeg_free(rb_jpeg *j);
const char *rb_jpeg_version(void);
const char *rb_jpeg_lib_path(void);
int rb_jpeg_lib_version(void);
long long rb_jpeg_heap_in_use(void);
int rb_jpeg_comp_samp(rb_jpeg *j, int comp, int *h, int *v);
#endif
