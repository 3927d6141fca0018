// jxl.c: the C half of package jxl (see jxl.h and jxl.go).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <jxl/thread_parallel_runner.h>
#include "jxl.h"

rb_jxl *rb_jxl_new(int threads) {
	rb_jxl *j = calloc(1, sizeof(rb_jxl));
	if (j == NULL) return NULL;
	j->buf = malloc(RB_JXL_BUF);
	j->enc = JxlEncoderCreate(NULL);
	if (threads > 1) j->runner = JxlThreadParallelRunnerCreate(NULL, (size_t)threads);
	if (j->buf == NULL || j->enc == NULL || (threads > 1 && j->runner == NULL)) {
		rb_jxl_free(j);
		return NULL;
	}
	return j;
}

static int fail(rb_jxl *j, const char *what) {
	snprintf(j->msg, sizeof j->msg, "%s failed (encoder error %d)", what, (int)JxlEncoderGetError(j->enc));
	return 1;
}

int rb_jxl_start(rb_jxl *j, const rb_jxl_params *p, const void *pix, size_t len,
	const uint8_t *icc, size_t icc_len, const uint8_t *exif, size_t exif_len,
	const uint8_t *xmp, size_t xmp_len) {
	j->msg[0] = 0;
	JxlEncoderReset(j->enc);
	if (j->runner != NULL && JxlEncoderSetParallelRunner(j->enc, JxlThreadParallelRunner, j->runner) != JXL_ENC_SUCCESS)
		return fail(j, "JxlEncoderSetParallelRunner");
	int boxes = exif_len > 0 || xmp_len > 0;
	if (boxes && JxlEncoderUseBoxes(j->enc) != JXL_ENC_SUCCESS) return fail(j, "JxlEncoderUseBoxes");

	JxlBasicInfo info;
	JxlEncoderInitBasicInfo(&info);
	info.xsize = (uint32_t)p->width;
	info.ysize = (uint32_t)p->height;
	info.bits_per_sample = (uint32_t)p->bits;
	info.num_color_channels = 3;
	info.uses_original_profile = p->lossless ? JXL_TRUE : JXL_FALSE;
	if (p->intensity_target > 0) info.intensity_target = p->intensity_target;
	if (JxlEncoderSetBasicInfo(j->enc, &info) != JXL_ENC_SUCCESS) return fail(j, "JxlEncoderSetBasicInfo");

	if (p->colour == RB_JXL_ICC) {
		if (JxlEncoderSetICCProfile(j->enc, icc, icc_len) != JXL_ENC_SUCCESS) return fail(j, "JxlEncoderSetICCProfile");
	} else {
		JxlColorEncoding ce;
		memset(&ce, 0, sizeof ce);
		ce.color_space = JXL_COLOR_SPACE_RGB;
		ce.white_point = JXL_WHITE_POINT_D65;
		ce.primaries = JXL_PRIMARIES_2100;
		ce.transfer_function = p->colour == RB_JXL_PQ ? JXL_TRANSFER_FUNCTION_PQ : JXL_TRANSFER_FUNCTION_HLG;
		ce.rendering_intent = JXL_RENDERING_INTENT_RELATIVE;
		if (JxlEncoderSetColorEncoding(j->enc, &ce) != JXL_ENC_SUCCESS) return fail(j, "JxlEncoderSetColorEncoding");
	}
	// ISO/IEC 18181-2 §9.1: an Exif box starts with the 4-byte big-endian
	// offset of the TIFF header within the rest of the box (0 here).
	if (exif_len > 0) {
		uint8_t *b = malloc(exif_len + 4);
		if (b == NULL) {
			snprintf(j->msg, sizeof j->msg, "out of memory for the Exif box");
			return 1;
		}
		memset(b, 0, 4);
		memcpy(b + 4, exif, exif_len);
		JxlEncoderStatus st = JxlEncoderAddBox(j->enc, "Exif", b, exif_len + 4, JXL_FALSE);
		free(b);
		if (st != JXL_ENC_SUCCESS) return fail(j, "JxlEncoderAddBox(Exif)");
	}
	if (xmp_len > 0 && JxlEncoderAddBox(j->enc, "xml ", xmp, xmp_len, JXL_FALSE) != JXL_ENC_SUCCESS)
		return fail(j, "JxlEncoderAddBox(xml)");
	if (boxes) JxlEncoderCloseBoxes(j->enc);

	JxlEncoderFrameSettings *fs = JxlEncoderFrameSettingsCreate(j->enc, NULL);
	if (fs == NULL) return fail(j, "JxlEncoderFrameSettingsCreate");
	if (JxlEncoderFrameSettingsSetOption(fs, JXL_ENC_FRAME_SETTING_EFFORT, p->effort) != JXL_ENC_SUCCESS)
		return fail(j, "effort");
	if (p->lossless) {
		if (JxlEncoderSetFrameLossless(fs, JXL_TRUE) != JXL_ENC_SUCCESS) return fail(j, "JxlEncoderSetFrameLossless");
	} else if (JxlEncoderSetFrameDistance(fs, p->distance) != JXL_ENC_SUCCESS) {
		return fail(j, "JxlEncoderSetFrameDistance");
	}
	JxlPixelFormat pf = {3, p->bits == 16 ? JXL_TYPE_UINT16 : JXL_TYPE_UINT8, JXL_NATIVE_ENDIAN, 0};
	if (JxlEncoderAddImageFrame(fs, &pf, pix, len) != JXL_ENC_SUCCESS) return fail(j, "JxlEncoderAddImageFrame");
	JxlEncoderCloseInput(j->enc);
	return 0;
}

// rb_jxl_out fills j->buf with the next output bytes (j->n of them):
// 0 when the file is complete, 1 when more follow, -1 on an error.
int rb_jxl_out(rb_jxl *j) {
	uint8_t *next = j->buf;
	size_t avail = RB_JXL_BUF;
	JxlEncoderStatus st = JxlEncoderProcessOutput(j->enc, &next, &avail);
	j->n = RB_JXL_BUF - avail;
	if (st == JXL_ENC_SUCCESS) return 0;
	if (st == JXL_ENC_NEED_MORE_OUTPUT) return 1;
	fail(j, "JxlEncoderProcessOutput");
	return -1;
}

void rb_jxl_free(rb_jxl *j) {
	if (j == NULL) return;
	if (j->enc != NULL) JxlEncoderDestroy(j->enc);
	if (j->runner != NULL) JxlThreadParallelRunnerDestroy(j->runner);
	free(j->buf);
	free(j);
}

unsigned rb_jxl_version(void) { return JxlEncoderVersion(); }

long long rb_jxl_heap_in_use(void) {
	struct mallinfo2 mi = mallinfo2();
	return (long long)(mi.uordblks + mi.hblkhd);
}
