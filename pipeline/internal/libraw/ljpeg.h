// ljpeg.h: rawbatch's decoder of lossless JPEG (ITU-T T.81 Annex H, process
// 14: Huffman coding, predictors 1-7), the compression of DNG tiles
// (Compression 7) and of Sony's lossless ARW tiles. fastraw.cpp feeds it
// tiles in place of LibRaw's own decoder.
//
// On valid data it gives the samples LibRaw 0.21's ljpeg_start and
// ljpeg_row give, including their readings of the format: component c uses
// Huffman table c (or the highest defined below it), the point transform
// lowers the precision without shifting the samples, a difference of
// length 16 is -32768 except in DNG 1.0 files. Whatever it does not
// reproduce exactly (restart intervals, a predictor outside 1-7, subsampled
// components, an unassigned Huffman code, data that ends before the image
// does, a sample over the precision) stops it with an error, and the
// caller lets LibRaw decode the whole file instead, errors and all.
#ifndef RAWBATCH_LJPEG_H
#define RAWBATCH_LJPEG_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

// RB_LJ_FASTBITS is the width in bits of a Huffman table's direct lookup.
#define RB_LJ_FASTBITS 12

// rb_lj_entry is one direct-lookup entry: a code of at most
// RB_LJ_FASTBITS bits and, when it fits too, the difference bits after it.
typedef struct {
	int16_t diff; // the difference, when ready
	uint8_t len;  // bits consumed: code (+ difference bits when ready); 0 = code longer than the lookup
	uint8_t sym;  // the difference's length in bits (SSSS); 0x80 set = diff ready
} rb_lj_entry;

// rb_lj_table is a Huffman table built from a DHT table (T.81 B.2.4.2).
typedef struct {
	uint8_t spec[16 + 256]; // the DHT bytes it was built from (counts, symbols)
	int nspec;
	int dng16;           // length-16 differences are -32768 without bits
	int first[17];       // first code of each length (T.81 C, canonical codes)
	int count[17];       // codes of each length
	int index[17];       // index in sym of the first code of each length
	uint8_t sym[256];
	rb_lj_entry fast[1 << RB_LJ_FASTBITS];
} rb_lj_table;

// rb_lj is one decoder; it keeps its tables from image to image, so a
// decoder that goes through the tiles of one file builds them once.
typedef struct {
	int bits, high, wide, clrs, psv; // precision after the point transform; rows; columns; components; predictor
	int sraw, algo, restart;
	rb_lj_table *tab[20]; // by DHT class and id (0-3 DC, 16-19 AC), NULL when not defined
	rb_lj_table *use[6];  // the table of each component
	const uint8_t *p, *end; // the entropy-coded data still to read
	uint64_t buf;           // bit buffer, the next bit in bit 63
	int nbits;              // bits in buf
	int pad;                // of those, zero bits added past a marker or the end of the data
	int stop;               // a marker or the end of the data was reached
	int eod;                // a read went past the end of the data (not stopped by a marker)
	uint16_t *rows;         // two rows of wide*clrs samples
	size_t rowcap;          // samples rows can hold
	int jrow;               // the next row
	int vpred[6];           // first-column predictors
} rb_lj;

// rb_lj_open parses the JPEG markers of one image in p[0:n] (SOI to SOS).
// dng_version is the file's (LibRaw's idata.dng_version, 0 for other
// files). It returns 0 when the image can be decoded, -1 when not (the
// caller falls back to LibRaw).
int rb_lj_open(rb_lj *j, const uint8_t *p, size_t n, unsigned dng_version);

// rb_lj_row decodes the next row: wide*clrs samples, interleaved by
// component. The pointer is valid until the next call; NULL on an error.
const uint16_t *rb_lj_row(rb_lj *j);

// rb_lj_eod reports whether the decoder read (or looked ahead) past the
// end of p[0:n] rather than stopping at a marker: when the data end at the
// end of the file, LibRaw's decoder may have read past the end of the file
// there, which rawbatch's stream counts.
int rb_lj_eod(const rb_lj *j);

// rb_lj_free frees the tables and rows of j (j itself is the caller's).
void rb_lj_free(rb_lj *j);

#ifdef __cplusplus
}
#endif
#endif
