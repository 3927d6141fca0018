// avif.c: the C half of package avif (see avif.h and avif.go).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include "avif.h"

rb_avif *rb_avif_new(void) {
	return calloc(1, sizeof(rb_avif));
}

static int fail(rb_avif *a, const char *what, avifResult r, const char *diag) {
	snprintf(a->msg, sizeof a->msg, "%s: %s%s%s", what, avifResultToString(r), diag[0] ? ": " : "", diag);
	return r == AVIF_RESULT_OK ? AVIF_RESULT_UNKNOWN_ERROR : (int)r;
}

int rb_avif_encode(rb_avif *a, const rb_avif_params *p, const void *rgb, size_t row_bytes,
	const uint8_t *icc, size_t icc_len, const uint8_t *exif, size_t exif_len,
	const uint8_t *xmp, size_t xmp_len) {
	a->msg[0] = 0;
	rb_avif_out_free(a);
	avifPixelFormat f = p->yuv == 420 ? AVIF_PIXEL_FORMAT_YUV420 : p->yuv == 422 ? AVIF_PIXEL_FORMAT_YUV422 : AVIF_PIXEL_FORMAT_YUV444;
	avifImage *img = avifImageCreate((uint32_t)p->width, (uint32_t)p->height, (uint32_t)p->depth, f);
	if (img == NULL) {
		snprintf(a->msg, sizeof a->msg, "avifImageCreate: out of memory");
		return AVIF_RESULT_OUT_OF_MEMORY;
	}
	img->colorPrimaries = (avifColorPrimaries)p->primaries;
	img->transferCharacteristics = (avifTransferCharacteristics)p->transfer;
	img->matrixCoefficients = (avifMatrixCoefficients)p->matrix;
	img->yuvRange = p->full_range ? AVIF_RANGE_FULL : AVIF_RANGE_LIMITED;
	if (icc_len > 0) avifImageSetProfileICC(img, icc, icc_len);
	if (exif_len > 0) avifImageSetMetadataExif(img, exif, exif_len);
	if (xmp_len > 0) avifImageSetMetadataXMP(img, xmp, xmp_len);

	avifRGBImage src;
	avifRGBImageSetDefaults(&src, img);
	src.format = AVIF_RGB_FORMAT_RGB;
	src.depth = (uint32_t)p->depth;
	src.pixels = (uint8_t *)rgb; // read only by avifImageRGBToYUV
	src.rowBytes = (uint32_t)row_bytes;
	avifResult r = avifImageRGBToYUV(img, &src);
	if (r != AVIF_RESULT_OK) {
		int rc = fail(a, "avifImageRGBToYUV", r, "");
		avifImageDestroy(img);
		return rc;
	}
	// One avifEncoder per image: libavif 0.11's encoder writes one file.
	avifEncoder *enc = avifEncoderCreate();
	if (enc == NULL) {
		avifImageDestroy(img);
		snprintf(a->msg, sizeof a->msg, "avifEncoderCreate: out of memory");
		return AVIF_RESULT_OUT_OF_MEMORY;
	}
	enc->maxThreads = p->threads;
	enc->speed = p->speed;
	enc->minQuantizer = p->quantizer;
	enc->maxQuantizer = p->quantizer;
	r = avifEncoderWrite(enc, img, &a->out);
	avifImageDestroy(img);
	int rc = 0;
	if (r != AVIF_RESULT_OK) rc = fail(a, "avifEncoderWrite", r, enc->diag.error);
	avifEncoderDestroy(enc);
	return rc;
}

void rb_avif_out_free(rb_avif *a) {
	if (a->out.data != NULL) avifRWDataFree(&a->out);
	a->out.data = NULL;
	a->out.size = 0;
}

void rb_avif_free(rb_avif *a) {
	if (a == NULL) return;
	rb_avif_out_free(a);
	free(a);
}

const char *rb_avif_codec(void) {
	const char *n = avifCodecName(AVIF_CODEC_CHOICE_AUTO, AVIF_CODEC_FLAG_CAN_ENCODE);
	return n ? n : "";
}

const char *rb_avif_version(void) { return avifVersion(); }

long long rb_avif_heap_in_use(void) {
	struct mallinfo2 mi = mallinfo2();
	return (long long)(mi.uordblks + mi.hblkhd);
}
