// stream.h: a LibRaw datastream that counts reads past the end of the file.
#ifndef RAWBATCH_STREAM_H
#define RAWBATCH_STREAM_H
#include <libraw/libraw.h>
#ifdef __cplusplus
extern "C" {
#endif
void *rb_stream_new(const char *path);
int rb_stream_open(libraw_data_t *lr, void *stream);
long long rb_stream_eof_reads(void *stream);
void rb_stream_reset(void *stream);
void rb_stream_free(void *stream);
#ifdef __cplusplus
}
#endif
#endif
