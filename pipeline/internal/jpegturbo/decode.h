// decode.h: rawbatch's one-call JPEG decoder around libjpeg(-turbo)'s
// libjpeg API. libjpeg's errors longjmp back into rb_jpeg_decode, which
// returns -1 with the message in msg; it never exits.
#ifndef RAWBATCH_JPEGTURBO_DECODE_H
#define RAWBATCH_JPEGTURBO_DECODE_H
#include <stddef.h>
#include <stdio.h>
#include <setjmp.h>
#include <jpeglib.h>

// rb_jpeg_decode decodes the JPEG file data (len bytes) to 8-bit RGB
// scaled by 1/denom (1, 2, 4 or 8: libjpeg's DCT scaling, the IDCT of the
// low frequencies) into out, which holds w×h×3 bytes, w and h being the
// scaled size (ceil of the size / denom); 0 on success, -1 with msg
// (JMSG_LENGTH_MAX bytes) filled otherwise. warnings gets the count of
// libjpeg's warnings (corrupt data it recovered from).
int rb_jpeg_decode(const unsigned char *data, unsigned long len, int denom,
                   unsigned char *out, int w, int h, int *warnings, char *msg);
#endif
