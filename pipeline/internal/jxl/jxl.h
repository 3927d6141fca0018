// jxl.h: rawbatch's still-image encoder around libjxl's encoder API (see
// jxl.go). libjxl reports errors as status codes and never exits; its
// encoder error (JxlEncoderGetError) becomes rb_jxl.msg.
#ifndef RAWBATCH_JXL_H
#define RAWBATCH_JXL_H
#include <stddef.h>
#include <stdint.h>
#include <jxl/encode.h>

// RB_JXL_BUF is the size in bytes of the C output buffer handed to the Go
// writer each time libjxl fills it.
#define RB_JXL_BUF (1 << 16)

// Colour encodings of rb_jxl_params.colour.
#define RB_JXL_ICC 0 // the ICC profile given
#define RB_JXL_PQ 1  // BT.2100 primaries, D65, SMPTE ST 2084
#define RB_JXL_HLG 2 // BT.2100 primaries, D65, HLG

typedef struct {
	JxlEncoder *enc;
	void *runner;          // JxlThreadParallelRunner, NULL for one thread
	uint8_t *buf;          // RB_JXL_BUF bytes
	size_t n;              // bytes of buf filled by the last rb_jxl_out
	char msg[256];         // why the last call failed
} rb_jxl;

typedef struct {
	int width, height, bits; // bits: 8 or 16
	int lossless, effort, threads, colour;
	float distance, intensity_target;
} rb_jxl_params;

rb_jxl *rb_jxl_new(int threads);
int rb_jxl_start(rb_jxl *j, const rb_jxl_params *p, const void *pix, size_t len,
	const uint8_t *icc, size_t icc_len, const uint8_t *exif, size_t exif_len,
	const uint8_t *xmp, size_t xmp_len);
int rb_jxl_out(rb_jxl *j);
void rb_jxl_free(rb_jxl *j);
unsigned rb_jxl_version(void);
long long rb_jxl_heap_in_use(void);
#endif
