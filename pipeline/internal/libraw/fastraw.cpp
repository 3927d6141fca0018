// fastraw.cpp: rb_raw, the LibRaw object behind every handle. With the
// bundled LibRaw (RB_LIBRAW_BUNDLED, whose internal declarations rawbatch
// compiles against), its unpack stands in for the file's decoder
// (own_load_raw) right after LibRaw allocated the raw buffer:
//   - it clears that buffer, which malloc may have handed back with an
//     earlier file's pixels in it, so that what a decoder leaves
//     unwritten (it stops early on damaged data) is zero whatever was
//     converted before;
//   - it decodes the tiled lossless-JPEG raw data of DNG (LibRaw's
//     lossless_dng_load_raw) and of Sony's lossless ARW
//     (sony_ljpeg_load_raw) with ljpeg.c instead: the tiles are read in
//     batches and decoded several at once on the handle's OpenMP threads,
//     into the raw buffer LibRaw allocated, so the rest of LibRaw's unpack
//     (masked pixels, black levels, the copy of the metadata into rawdata)
//     runs as before. A file ljpeg.c does not decode exactly as LibRaw
//     would, damaged ones included, is decoded again from the start by
//     LibRaw's own decoder;
//   - before LibRaw's lossless-JPEG decoders run, it checks that they can
//     start every tile (they stop at one they cannot, leaving the rest of
//     the image black with no error) and that no tile's frame holds more
//     samples than the tile, or than the rest of the file could code
//     (they decode every row a frame claims: minutes for a damaged header
//     claiming 65535 × 65535); a file that fails is reported as damaged
//     (rb_damage), not decoded.
#ifdef RB_LIBRAW_BUNDLED
#define LIBRAW_LIBRARY_BUILD 1 // declares LibRaw's decoders (no change to the object's layout)
#endif
#include <algorithm>
#include <new>
#include <vector>
#include <climits>
#include <cstdio>
#include <cstring>
#include <strings.h>
#include <malloc.h>
#include <omp.h>
#include "rb_libraw.h"
#include "ljpeg.h"

// rb_fast_off turns the faster decoders off (tests compare them with
// LibRaw's own).
static int rb_fast_off;

class rb_raw : public LibRaw {
public:
	explicit rb_raw(unsigned flags) : LibRaw(flags), fast_tiles(0) { damage[0] = 0; }
	int fast_unpack();
	int fast_tiles; // tiles decoded by ljpeg.c in the last unpack
	// damage says why the last unpack found the file's data damaged
	// where LibRaw's decoder would not have said so; "" when it did not.
	char damage[200];

#ifdef RB_LIBRAW_BUNDLED
	// get_decoder_info describes the file's decoder while own_load_raw
	// stands in for it: unpack allocates the raw buffer by it.
	int get_decoder_info(libraw_decoder_info_t *d_info);

private:
	enum kind_t { OTHER, DNG, SONY, LJPEG };
	kind_t kind;
	bool try_fast; // ljpeg.c may decode this file
	void (LibRaw::*orig)();
	void own_load_raw();
	void zero_raw();
	void tiles_load_raw();
	bool tiles_start();
	bool frame_start(INT64 pos, size_t tile, size_t ntiles, INT64 area);
	bool decode_tiles();
	bool decode_batches(std::vector<rb_lj> &dec, const std::vector<INT64> &off, const std::vector<INT64> &len, size_t across, INT64 fsize);
	bool decode_tile(rb_lj *d, const uint8_t *p, size_t n, bool at_eof, unsigned trow, unsigned tcol);
#endif
};

#ifndef RB_LIBRAW_BUNDLED
int rb_raw::fast_unpack() { return unpack(); }
#else

// RB_BATCH_BYTES bounds the compressed tile data read at once (bytes).
#define RB_BATCH_BYTES (8 << 20)

int rb_raw::fast_unpack() {
	fast_tiles = 0;
	damage[0] = 0;
	void (LibRaw::*saved)() = load_raw;
	if (saved == NULL) return unpack(); // which says so
	unsigned tw = libraw_internal_data.unpacker_data.tile_width;
	unsigned tl = libraw_internal_data.unpacker_data.tile_length;
	if (saved == &rb_raw::lossless_dng_load_raw && libraw_internal_data.unpacker_data.tiff_samples == 1)
		kind = DNG;
	else if (saved == &rb_raw::sony_ljpeg_load_raw)
		kind = SONY;
	else if (saved == &rb_raw::lossless_jpeg_load_raw)
		kind = LJPEG;
	else
		kind = OTHER;
	// A file of one tile is read as untiled: tile_length (and tile_width)
	// INT_MAX, the data at data_offset. A file ljpeg.c does not take still
	// goes through tiles_load_raw, for the same raw buffer where LibRaw's
	// decoder writes nothing.
	try_fast = (kind == DNG || kind == SONY) && !rb_fast_off && imgdata.idata.filters != 0 && tw != 0 && tl != 0 && (tl < INT_MAX || tw >= imgdata.sizes.raw_width);
	orig = saved;
	load_raw = static_cast<void (LibRaw::*)()>(&rb_raw::own_load_raw);
	int rc = unpack();
	load_raw = saved;
	return rc;
}

int rb_raw::get_decoder_info(libraw_decoder_info_t *d_info) {
	void (LibRaw::*own)() = static_cast<void (LibRaw::*)()>(&rb_raw::own_load_raw);
	if (load_raw != own) return LibRaw::get_decoder_info(d_info);
	load_raw = orig;
	int rc = LibRaw::get_decoder_info(d_info);
	load_raw = own;
	return rc;
}

// own_load_raw stands in for the file's decoder (orig) during unpack,
// which has just allocated the raw buffer and seeked to data_offset.
void rb_raw::own_load_raw() {
	// The rest of unpack sees LibRaw's decoder again: crop_masked_pixels
	// and the white level unpack restores after unpacked_load_raw compare
	// load_raw with LibRaw's decoders.
	load_raw = orig;
	zero_raw();
	// What unpack does before calling unpacked_load_raw on these files
	// (it saw own_load_raw then; it undoes it after, seeing orig).
	if (orig == &rb_raw::unpacked_load_raw && (!strcasecmp(imgdata.idata.make, "Nikon") || !strcasecmp(imgdata.idata.make, "Hasselblad")))
		imgdata.color.maximum = 65535;
	switch (kind) {
	case DNG:
	case SONY:
		tiles_load_raw();
		return;
	case LJPEG: {
		// lossless_jpeg_load_raw decodes one frame, here; it returns at
		// once, writing nothing, when it cannot start it.
		INT64 pos = libraw_internal_data.internal_data.input->tell();
		if (!frame_start(pos, 0, 1, 0)) return;
		libraw_internal_data.internal_data.input->seek(pos, SEEK_SET);
		break;
	}
	case OTHER:
		break;
	}
	(this->*orig)();
}

// zero_raw makes the raw buffer unpack allocated with malloc (raw_alloc)
// zero, as LibRaw built with LIBRAW_CALLOC_RAWSTORE does: from calloc,
// which maps fresh pages for a large buffer (no pass over it) and clears
// a small one the heap hands back.
void rb_raw::zero_raw() {
	libraw_rawdata_t &rd = imgdata.rawdata;
	void *old = rd.raw_alloc;
	if (old == NULL) return;
	size_t n = malloc_usable_size(old);
	bool raw = rd.raw_image == old, c3 = (void *)rd.color3_image == old, c4 = (void *)rd.color4_image == old;
	rd.raw_alloc = NULL;
	if (raw) rd.raw_image = NULL;
	if (c3) rd.color3_image = NULL;
	if (c4) rd.color4_image = NULL;
	free(old);              // LibRaw's: its pool forgets the block
	void *z = calloc(n, 1); // LibRaw's: in its pool; throws when out of memory
	rd.raw_alloc = z;
	if (raw) rd.raw_image = (ushort *)z;
	if (c3) rd.color3_image = (ushort(*)[3])z;
	if (c4) rd.color4_image = (ushort(*)[4])z;
}

// tiles_load_raw decodes a tiled DNG or ARW.
void rb_raw::tiles_load_raw() {
	if (try_fast && imgdata.rawdata.raw_image != NULL && decode_tiles()) return;
	fast_tiles = 0;
	// ljpeg.c may have decoded some tiles before one it refused: zero
	// them again, so that what LibRaw's decoder does not write is zero.
	if (imgdata.rawdata.raw_image != NULL)
		memset(imgdata.rawdata.raw_image, 0, size_t(imgdata.sizes.raw_width) * imgdata.sizes.raw_height * sizeof(ushort));
	if (!tiles_start()) return;
	libraw_internal_data.internal_data.input->seek(libraw_internal_data.unpacker_data.data_offset, SEEK_SET);
	(this->*orig)();
}

// tiles_start checks, before LibRaw's decoder runs, each tile as that
// decoder will start it (ljpeg_start at the tile's offset, from
// TileOffsets at data_offset, or at data_offset itself for an untiled
// file): false, with damage set, at the first it cannot start or whose
// lossless frame holds more samples than the tile's photosites (the DNG
// SDK requires exactly as many).
bool rb_raw::tiles_start() {
	LibRaw_abstract_datastream *in = libraw_internal_data.internal_data.input;
	unsigned tw = libraw_internal_data.unpacker_data.tile_width;
	unsigned tl = libraw_internal_data.unpacker_data.tile_length;
	unsigned rw = imgdata.sizes.raw_width, rh = imgdata.sizes.raw_height;
	INT64 base = libraw_internal_data.unpacker_data.data_offset;
	if (rw == 0 || rh == 0 || tw == 0 || tl == 0) return true;
	bool untiled = tl >= INT_MAX;
	size_t across = untiled ? 1 : (size_t(rw) + tw - 1) / tw, down = untiled ? 1 : (size_t(rh) + tl - 1) / tl, ntiles = across * down;
	if (ntiles > (1u << 20)) return true; // LibRaw's decoder as it is
	// An untiled file's one frame may be a padded tile larger than the
	// image: bounded only by the data after it (frame_start).
	INT64 area = untiled ? 0 : INT64(tw) * INT64(tl);
	for (size_t i = 0; i < ntiles; i++) {
		INT64 pos = base;
		if (!untiled) {
			in->seek(base + INT64(4 * i), SEEK_SET);
			pos = INT64(get4());
		}
		if (!frame_start(pos, i, ntiles, area)) return false;
	}
	return true;
}

// frame_start reports whether LibRaw's ljpeg_start starts the lossless
// JPEG frame at pos (tile `tile` of ntiles) and whether its lossless
// (SOF3) frame holds at most area samples (when area > 0), and at most 8
// a byte of the file after pos (each sample takes a Huffman code of a bit
// at least: a frame claiming more is not one a camera wrote, and LibRaw's
// decoder would go through all it claims); when not, it says so in
// damage.
bool rb_raw::frame_start(INT64 pos, size_t tile, size_t ntiles, INT64 area) {
	struct jhead jh;
	LibRaw_abstract_datastream *in = libraw_internal_data.internal_data.input;
	in->seek(pos, SEEK_SET);
	int ok = ljpeg_start(&jh, 0);
	ljpeg_end(&jh);
	char where[64] = "";
	if (ntiles > 1) snprintf(where, sizeof where, " of tile %zu of %zu", tile + 1, ntiles);
	if (!ok) {
		snprintf(damage, sizeof damage, "the lossless JPEG header%s (at byte %lld) is damaged", where, (long long)pos);
		return false;
	}
	if (jh.algo != 0xc3) return true;
	long long samples = (long long)jh.high * jh.wide * jh.clrs, bits = 8 * ((long long)in->size() - (long long)pos);
	if (area > 0 && samples > area) {
		snprintf(damage, sizeof damage, "the lossless JPEG frame%s (at byte %lld) claims %d × %d samples of %d components, more than the tile's %lld photosites", where, (long long)pos, jh.wide, jh.high, jh.clrs, (long long)area);
		return false;
	}
	if (samples > bits) {
		snprintf(damage, sizeof damage, "the lossless JPEG frame%s (at byte %lld) claims %d × %d samples of %d components, more than the rest of the file holds", where, (long long)pos, jh.wide, jh.high, jh.clrs);
		return false;
	}
	return true;
}

// decode_tiles decodes every tile into rawdata.raw_image; false when one
// cannot be decoded exactly as LibRaw would (then nothing is reported: the
// caller runs LibRaw's decoder).
bool rb_raw::decode_tiles() {
	LibRaw_abstract_datastream *in = libraw_internal_data.internal_data.input;
	unsigned tw = libraw_internal_data.unpacker_data.tile_width;
	unsigned tl = libraw_internal_data.unpacker_data.tile_length;
	unsigned rw = imgdata.sizes.raw_width, rh = imgdata.sizes.raw_height;
	if (rw == 0 || rh == 0) return false;
	bool untiled = tl >= INT_MAX;
	// (In 64 bits: a tile width near 2^32 is one tile across, as in LibRaw.)
	size_t across = untiled ? 1 : (size_t(rw) + tw - 1) / tw, down = untiled ? 1 : (size_t(rh) + tl - 1) / tl, ntiles = across * down;
	if (ntiles > (1u << 20)) return false;
	// The tile offsets follow one another at data_offset (TileOffsets);
	// a tile's data end at the next tile's or at the end of the file,
	// and at most at a bound no valid tile reaches (6 bytes a sample).
	std::vector<INT64> off(ntiles), len(ntiles);
	if (untiled)
		off[0] = in->tell();
	else
		for (size_t i = 0; i < ntiles; i++) off[i] = get4();
	INT64 fsize = in->size();
	INT64 cap = (untiled ? INT64(rw) * INT64(rh) : INT64(tw) * INT64(tl)) * 6 + 65536;
	std::vector<INT64> sorted(off);
	std::sort(sorted.begin(), sorted.end());
	for (size_t i = 0; i < ntiles; i++) {
		if (off[i] < 0 || off[i] >= fsize) return false;
		std::vector<INT64>::iterator next = std::upper_bound(sorted.begin(), sorted.end(), off[i]);
		INT64 end = next == sorted.end() ? fsize : *next;
		len[i] = end - off[i] < cap ? end - off[i] : cap;
	}
	int nt = omp_get_max_threads();
	if (nt < 1) nt = 1;
	std::vector<rb_lj> dec(nt);
	for (int t = 0; t < nt; t++) memset(&dec[t], 0, sizeof dec[t]);
	bool ok = true;
	try {
		ok = decode_batches(dec, off, len, across, fsize);
	} catch (...) {
		for (int t = 0; t < nt; t++) rb_lj_free(&dec[t]);
		throw;
	}
	for (int t = 0; t < nt; t++) rb_lj_free(&dec[t]);
	if (ok) fast_tiles = int(ntiles);
	return ok;
}

// decode_batches reads the tiles' data in batches of about RB_BATCH_BYTES
// and decodes each batch's tiles in parallel, one decoder a thread.
bool rb_raw::decode_batches(std::vector<rb_lj> &dec, const std::vector<INT64> &off, const std::vector<INT64> &len, size_t across, INT64 fsize) {
	LibRaw_abstract_datastream *in = libraw_internal_data.internal_data.input;
	unsigned tw = libraw_internal_data.unpacker_data.tile_width;
	unsigned tl = libraw_internal_data.unpacker_data.tile_length;
	size_t ntiles = off.size();
	int nt = int(dec.size());
	std::vector<uint8_t> buf;
	std::vector<size_t> start;
	bool ok = true;
	for (size_t i = 0; i < ntiles && ok;) {
		checkCancel();
		size_t j = i, total = 0;
		start.clear();
		while (j < ntiles && (j == i || total + size_t(len[j]) <= RB_BATCH_BYTES)) {
			start.push_back(total);
			total += size_t(len[j]);
			j++;
		}
		buf.resize(total);
		for (size_t k = i; k < j && ok; k++) {
			in->seek(off[k], SEEK_SET);
			ok = in->read(&buf[start[k - i]], 1, size_t(len[k])) == int(len[k]);
		}
		int bad = 0;
		if (ok) {
#pragma omp parallel for schedule(dynamic) num_threads(nt) reduction(| : bad)
			for (long k = long(i); k < long(j); k++) {
				rb_lj *d = &dec[omp_get_thread_num()];
				unsigned trow = unsigned(size_t(k) / across) * tl, tcol = unsigned(size_t(k) % across) * tw;
				if (!decode_tile(d, &buf[start[size_t(k) - i]], size_t(len[k]), off[k] + len[k] >= fsize, trow, tcol)) bad |= 1;
			}
		}
		ok = ok && !bad;
		i = j;
	}
	return ok;
}

// decode_tile decodes one tile whose top-left photosite is (trow, tcol),
// placing its samples where LibRaw's decoder places them. It refuses a
// tile whose samples would reach another tile's (LibRaw writes them there,
// in order; decoded in parallel they would race) and one that leaves
// photosites of its part unwritten (LibRaw's decoder leaves them too, and
// only the fallback zeroes them). It also refuses a tile
// whose data end at the end of the file when ljpeg.c read up to that end
// without meeting a marker (the tile's EOI missing): LibRaw's decoder may
// then read past the end of the file, which Unpack counts as truncation.
bool rb_raw::decode_tile(rb_lj *d, const uint8_t *p, size_t n, bool at_eof, unsigned trow, unsigned tcol) {
	unsigned tw = libraw_internal_data.unpacker_data.tile_width;
	unsigned tl = libraw_internal_data.unpacker_data.tile_length;
	unsigned rw = imgdata.sizes.raw_width, rh = imgdata.sizes.raw_height;
	ushort *raw = imgdata.rawdata.raw_image;
	if (rb_lj_open(d, p, n, imgdata.idata.dng_version) != 0) return false;
	if (kind == SONY) {
		// Each sample of the JPEG is a 2×2 block of photosites.
		if (d->clrs != 4 || 2 * unsigned(d->high) > tl || 2 * unsigned(d->wide) > tw) return false;
		// It must write every photosite of its part of the image (LibRaw's
		// loops stop short of an odd last row or column).
		unsigned hh = rh - trow < tl ? rh - trow : tl, ww = rw - tcol < tw ? rw - tcol : tw;
		if (2 * unsigned(d->high) < hh || 2 * unsigned(d->wide) < ww || hh % 2 || ww % 2) return false;
		for (unsigned jrow = 0, row = 0; jrow < unsigned(d->high) && trow + row < rh - 1; jrow++, row += 2) {
			const uint16_t *rp = rb_lj_row(d);
			if (rp == NULL) return false;
			ushort *r0 = raw + size_t(trow + row) * rw + tcol, *r1 = r0 + rw;
			for (unsigned jcol = 0, col = 0; jcol < unsigned(d->wide) && tcol + col < rw - 1; jcol++, col += 2) {
				r0[col] = rp[4 * jcol];
				r0[col + 1] = rp[4 * jcol + 1];
				r1[col] = rp[4 * jcol + 2];
				r1[col + 1] = rp[4 * jcol + 3];
			}
		}
		return !(at_eof && rb_lj_eod(d));
	}
	// DNG: the JPEG's rows run on through the tile's rows, wrapping at the
	// tile's width (or the raw width, when narrower), through the
	// linearisation curve (adobe_copy_pixel).
	unsigned jwide = unsigned(d->wide) * unsigned(d->clrs);
	if (d->clrs > 1 && d->clrs * jwide == rw) return false;
	unsigned wrap = tw < rw ? tw : rw;
	unsigned long long rows = ((unsigned long long)(d->high) * jwide + wrap - 1) / wrap;
	if (rows > rh - trow) rows = rh - trow;
	if (rows > tl) return false;
	// It must write every photosite of its part of the image: whole rows
	// of the wrap's width down to the tile's (or the image's) last row.
	unsigned long long full = (unsigned long long)(d->high) * jwide / wrap;
	// No more samples than the tile's (tiles_start refuses such a file;
	// an untiled file's frame may be a padded tile larger than the image).
	if (tl < INT_MAX && (unsigned long long)d->high * d->wide * d->clrs > (unsigned long long)tw * tl) return false;
	if (full < (rh - trow < tl ? rh - trow : tl)) return false;
	const ushort *curve = imgdata.color.curve;
	unsigned row = 0, col = 0;
	for (int jrow = 0; jrow < d->high; jrow++) {
		const uint16_t *rp = rb_lj_row(d);
		if (rp == NULL) return false;
		for (unsigned jcol = 0; jcol < jwide;) {
			unsigned m = jwide - jcol;
			if (m > wrap - col) m = wrap - col;
			unsigned r = trow + row, c = tcol + col;
			if (r < rh && c < rw) {
				unsigned k = c + m <= rw ? m : rw - c;
				ushort *dst = raw + size_t(r) * rw + c;
				for (unsigned x = 0; x < k; x++) dst[x] = curve[rp[jcol + x]];
			}
			jcol += m;
			col += m;
			if (col >= wrap) {
				row++;
				col = 0;
			}
		}
	}
	return !(at_eof && rb_lj_eod(d));
}
#endif

extern "C" libraw_data_t *rb_new(unsigned flags) {
	rb_raw *r = new (std::nothrow) rb_raw(flags);
	return r == NULL ? NULL : &r->imgdata;
}

extern "C" int rb_unpack(libraw_data_t *lr) {
	rb_raw *r = static_cast<rb_raw *>(static_cast<LibRaw *>(lr->parent_class));
	return r->fast_unpack();
}

extern "C" int rb_fast_tiles(libraw_data_t *lr) {
	return static_cast<rb_raw *>(static_cast<LibRaw *>(lr->parent_class))->fast_tiles;
}

extern "C" const char *rb_damage(libraw_data_t *lr) {
	return static_cast<rb_raw *>(static_cast<LibRaw *>(lr->parent_class))->damage;
}

extern "C" void rb_set_fast(int on) { rb_fast_off = !on; }

#ifndef RB_BATCH_BYTES
#define RB_BATCH_BYTES 0
#endif
extern "C" long long rb_tile_batch_bytes(void) { return RB_BATCH_BYTES; }
