// rb_libraw.h: the C half of package libraw, declared for its Go files and
// its C and C++ files (libraw.c, rawdata.c, thumb.c, stream.cpp,
// fastraw.cpp).
#ifndef RAWBATCH_RB_LIBRAW_H
#define RAWBATCH_RB_LIBRAW_H
#include <libraw/libraw.h>
#ifdef __cplusplus
extern "C" {
#endif

// rb_ctl is a handle's C-side state, allocated in C memory and shared with
// LibRaw's callbacks.
typedef struct {
	int data_errors; // calls of the data-error callback
	int data_offset; // file offset of the first data error (-1 = EOF)
	int mem_errors;  // calls of the memory-error callback (LibRaw < 0.21)
	int cancel;      // set to 1 (atomically, rb_cancel) to cancel processing
} rb_ctl;

// libraw.c: the handle, the library and the process.
void rb_install(libraw_data_t *lr, rb_ctl *c);
void rb_cancel(rb_ctl *c);
long rb_gettid(void);
void rb_set_threads(int n);
int rb_max_threads(void);
int rb_bundled(void);
const char *rb_lib_path(void);
void rb_copy_image(libraw_data_t *lr, float *dst, int colors);
void rb_inset_crop(libraw_data_t *lr, int *out);
void rb_malloc_setup(void);
void rb_malloc_stats(long long *inuse, long long *free_held);
void rb_crash(void);
void rb_hang(void);

// rawdata.c: the unpacked raw data (rawdata.raw_image).
int rb_raw_ok(libraw_data_t *lr);
int rb_bayer_reason(libraw_data_t *lr);
ushort *rb_visible_origin(libraw_data_t *lr);
void rb_raw_copy(libraw_data_t *lr, ushort *dst);
void rb_raw_store(libraw_data_t *lr, const ushort *src);
void rb_raw_colours(libraw_data_t *lr, int rows, int cols, unsigned char *dst);
void rb_raw_histogram(libraw_data_t *lr, int r0, int r1, unsigned *hist);
void rb_raw_rescale_table(const double *black, const double *gain, const unsigned *clip, ushort *lut);
void rb_raw_rescale_rows(libraw_data_t *lr, int r0, int r1, const double *black, const double *gain, const unsigned *clip, const ushort *lut);
void rb_raw_set_white(libraw_data_t *lr, unsigned white);
int rb_fixed_maximum(libraw_data_t *lr);

// fastraw.cpp: the LibRaw object of a handle and its unpack.
libraw_data_t *rb_new(unsigned flags);
int rb_unpack(libraw_data_t *lr);
int rb_fast_tiles(libraw_data_t *lr);
const char *rb_damage(libraw_data_t *lr);
void rb_set_fast(int on);
long long rb_tile_batch_bytes(void);

// thumb.c: the embedded preview.
int rb_thumb_pick(libraw_data_t *lr, int *count);
int rb_thumb_largest(libraw_data_t *lr, int *count, int *w, int *h, int *jpeg);

// stream.cpp: a LibRaw datastream that counts reads past the end of the
// file.
void *rb_stream_new(const char *path);
int rb_stream_open(libraw_data_t *lr, void *stream);
long long rb_stream_eof_reads(void *stream);
void rb_stream_reset(void *stream);
void rb_stream_free(void *stream);

#ifdef __cplusplus
}
#endif
#endif
