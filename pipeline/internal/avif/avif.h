// avif.h: rawbatch's still-image encoder around libavif (see avif.go).
// libavif reports errors as result codes (it never exits or prints), so
// the entry points return 0 or an avifResult and keep a message in
// rb_avif.msg.
#ifndef RAWBATCH_AVIF_H
#define RAWBATCH_AVIF_H
#include <stddef.h>
#include <stdint.h>
#include <avif/avif.h>

typedef struct {
	avifRWData out;     // the last encoded file (freed by rb_avif_out_free or rb_avif_free)
	char msg[256];      // why the last call failed
} rb_avif;

// rb_avif_image describes one encode: the RGB samples (8-bit bytes when
// depth is 8, else native-endian uint16 at depth bits), the AV1 settings
// and the container's colour and metadata items.
typedef struct {
	int width, height, depth, yuv; // yuv: 444, 422 or 420
	int quantizer, speed, threads;
	int primaries, transfer, matrix, full_range;
} rb_avif_params;

rb_avif *rb_avif_new(void);
int rb_avif_encode(rb_avif *a, const rb_avif_params *p, const void *rgb, size_t row_bytes,
	const uint8_t *icc, size_t icc_len, const uint8_t *exif, size_t exif_len,
	const uint8_t *xmp, size_t xmp_len);
void rb_avif_out_free(rb_avif *a);
void rb_avif_free(rb_avif *a);
const char *rb_avif_codec(void);
const char *rb_avif_version(void);
long long rb_avif_heap_in_use(void);
#endif
