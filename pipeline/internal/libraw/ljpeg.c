// ljpeg.c: the lossless JPEG decoder declared in ljpeg.h.
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "ljpeg.h"

#define FB RB_LJ_FASTBITS
#define READY 0x80

// build makes t from a DHT table's 16 code counts and its symbols (T.81
// C.2: canonical codes, shortest first). It refuses an oversubscribed code
// space (LibRaw drops the codes past it) and differences longer than 16
// bits (LibRaw reads them as 0).
static int build(rb_lj_table *t, const uint8_t *counts, const uint8_t *syms, int nsym, int dng16) {
	int code = 0, k = 0;
	if (nsym > 256) return -1;
	memcpy(t->sym, syms, (size_t)nsym);
	t->dng16 = dng16;
	for (int l = 1; l <= 16; l++) {
		t->first[l] = code;
		t->count[l] = counts[l - 1];
		t->index[l] = k;
		k += counts[l - 1];
		code += counts[l - 1];
		if (code > (1 << l)) return -1;
		code <<= 1;
	}
	for (int i = 0; i < nsym; i++)
		if (syms[i] > 16) return -1;
	memset(t->fast, 0, sizeof t->fast);
	for (int l = 1; l <= FB; l++) {
		for (int i = 0; i < t->count[l]; i++) {
			int s = t->sym[t->index[l] + i];
			int base = (t->first[l] + i) << (FB - l), span = 1 << (FB - l);
			for (int f = 0; f < span; f++) {
				rb_lj_entry *e = &t->fast[base + f];
				e->len = (uint8_t)l;
				e->sym = (uint8_t)s;
				if (s == 0) {
					e->diff = 0;
					e->sym = READY;
				} else if (s == 16 && dng16) {
					e->diff = -32768;
					e->sym = READY;
				} else if (l + s <= FB) {
					int v = ((base + f) >> (FB - l - s)) & ((1 << s) - 1);
					if ((v & (1 << (s - 1))) == 0) v -= (1 << s) - 1;
					e->diff = (int16_t)v;
					e->len = (uint8_t)(l + s);
					e->sym = READY;
				}
			}
		}
	}
	return 0;
}

// table returns the decoder's table for DHT id c built from spec (16
// counts then the symbols), reusing the one built last time for id c when
// the bytes are the same (the tiles of one file repeat their tables).
static rb_lj_table *table(rb_lj *j, int c, const uint8_t *spec, int nspec, int dng16) {
	rb_lj_table *t = j->tab[c];
	if (t != NULL && t->nspec == nspec && t->dng16 == dng16 && memcmp(t->spec, spec, (size_t)nspec) == 0) return t;
	if (t == NULL) {
		t = malloc(sizeof *t);
		if (t == NULL) return NULL;
		j->tab[c] = t;
	}
	t->nspec = 0;
	if (build(t, spec, spec + 16, nspec - 16, dng16) != 0) return NULL;
	memcpy(t->spec, spec, (size_t)nspec);
	t->nspec = nspec;
	return t;
}

int rb_lj_open(rb_lj *j, const uint8_t *p, size_t n, unsigned dng_version) {
	const uint8_t *q = p, *end = p + n;
	rb_lj_table *def[20] = {0};
	int dng16 = dng_version == 0 || dng_version >= 0x1010000;
	unsigned tag;
	int cnt = 0;
	j->bits = j->high = j->wide = j->clrs = j->psv = j->sraw = j->algo = 0;
	j->restart = INT_MAX;
	if (n < 2 || q[1] != 0xd8) return -1;
	q += 2;
	do {
		if (cnt++ > 1024 || end - q < 4) return -1;
		tag = (unsigned)q[0] << 8 | q[1];
		unsigned seg = (unsigned)q[2] << 8 | q[3];
		if (tag <= 0xff00 || seg < 2) return -1;
		size_t len = seg - 2;
		q += 4;
		if ((size_t)(end - q) < len) return -1;
		const uint8_t *d = q;
		q += len;
		switch (tag) {
		case 0xffc3:
			if (len < 9) return -1;
			j->sraw = ((d[7] >> 4) * (d[7] & 15) - 1) & 3;
			// fall through
		case 0xffc1:
		case 0xffc0:
			if (len < 9) return -1;
			j->algo = tag & 0xff;
			j->bits = d[0];
			j->high = d[1] << 8 | d[2];
			j->wide = d[3] << 8 | d[4];
			j->clrs = d[5] + j->sraw;
			// LibRaw skips a byte after a one-component frame header
			// outside DNG (Canon's and Kodak's off-by-one lengths).
			if (len == 9 && dng_version == 0) q++;
			break;
		case 0xffc4:
			for (const uint8_t *dp = d; dp < d + len;) {
				int c = *dp++;
				if (c & -20) break;
				if (d + len - dp < 16) return -1;
				int nsym = 0;
				for (int l = 0; l < 16; l++) nsym += dp[l];
				if (d + len - dp < 16 + nsym) return -1;
				def[c] = table(j, c, dp, 16 + nsym, dng16);
				if (def[c] == NULL) return -1;
				dp += 16 + nsym;
			}
			break;
		case 0xffda:
			if (len < 1 || len < 4 + 2 * (size_t)d[0]) return -1;
			j->psv = d[1 + d[0] * 2];
			j->bits -= d[3 + d[0] * 2] & 15;
			break;
		case 0xffdd:
			if (len < 2) return -1;
			j->restart = d[0] << 8 | d[1];
			break;
		}
	} while (tag != 0xffda);
	if (j->bits > 16 || j->clrs > 6 || j->bits < 1 || !j->high || !j->wide || !j->clrs) return -1;
	if (j->algo != 0xc3 || j->sraw != 0 || j->restart != INT_MAX || j->psv < 1 || j->psv > 7) return -1;
	if (def[0] == NULL) return -1;
	rb_lj_table *cur = def[0];
	for (int c = 0; c < 6; c++) {
		if (def[c] != NULL) cur = def[c];
		j->use[c] = cur;
	}
	size_t need = (size_t)j->wide * (size_t)j->clrs * 2;
	if (need > j->rowcap) {
		free(j->rows);
		j->rows = malloc(need * sizeof *j->rows);
		j->rowcap = j->rows == NULL ? 0 : need;
		if (j->rows == NULL) return -1;
	}
	j->p = q;
	j->end = end;
	j->buf = 0;
	j->nbits = j->pad = j->stop = j->eod = 0;
	j->jrow = 0;
	for (int c = 0; c < 6; c++) j->vpred[c] = 1 << (j->bits - 1);
	return 0;
}

// fill tops the bit buffer up to more than 56 bits. Like LibRaw's
// getbithuff it drops the zero byte after 0xFF, and past a marker (0xFF
// and anything else) or the end of the data it adds zero bits, counted in
// pad.
static void fill(rb_lj *j) {
	if (j->nbits <= 56 && !j->stop && j->end - j->p >= 8) {
		// Eight bytes with no 0xFF among them go in at once.
		uint64_t v;
		memcpy(&v, j->p, 8);
		v = __builtin_bswap64(v);
		uint64_t x = ~v;
		if (((x - 0x0101010101010101ULL) & ~x & 0x8080808080808080ULL) == 0) {
			int k = (64 - j->nbits) >> 3;
			j->buf |= (v >> (64 - 8 * k)) << (64 - 8 * k - j->nbits);
			j->p += k;
			j->nbits += 8 * k;
			return;
		}
	}
	while (j->nbits <= 56) {
		unsigned c = 0;
		if (!j->stop && j->p < j->end && *j->p != 0xff) {
			c = *j->p++;
		} else if (!j->stop && j->p < j->end) {
			j->p++;
			if (j->p < j->end && *j->p == 0) {
				j->p++;
				c = 0xff;
			} else {
				if (j->p < j->end)
					j->p++;
				else
					j->eod = 1; // 0xFF the last byte: LibRaw reads the next
				j->stop = 1;
			}
		} else {
			if (!j->stop) j->eod = 1;
			j->stop = 1;
		}
		if (j->stop) j->pad += 8;
		j->buf |= (uint64_t)c << (56 - j->nbits);
		j->nbits += 8;
	}
}

// diff decodes one difference (T.81 H.1.2.2, F.1.2.1). An unassigned code
// sets *bad.
static inline int diff(rb_lj *j, const rb_lj_table *t, int *bad) {
	if (j->nbits < 32) fill(j);
	const rb_lj_entry *e = &t->fast[j->buf >> (64 - FB)];
	int len, s;
	if (e->sym & READY) {
		j->buf <<= e->len;
		j->nbits -= e->len;
		return e->diff;
	}
	if (e->len) {
		len = e->len;
		s = e->sym;
	} else {
		for (len = FB + 1;; len++) {
			if (len > 16) {
				*bad = 1;
				return 0;
			}
			int code = (int)(j->buf >> (64 - len)) - t->first[len];
			if (code >= 0 && code < t->count[len]) {
				s = t->sym[t->index[len] + code];
				break;
			}
		}
	}
	j->buf <<= len;
	j->nbits -= len;
	if (s == 0) return 0;
	if (s == 16 && t->dng16) return -32768;
	int v = (int)(j->buf >> (64 - s));
	j->buf <<= s;
	j->nbits -= s;
	if ((v & (1 << (s - 1))) == 0) v -= (1 << s) - 1;
	return v;
}

// done reports whether the bits decoded so far were all data (none of the
// zero bits added past a marker or the end).
static int done(const rb_lj *j) { return j->nbits >= j->pad; }

const uint16_t *rb_lj_row(rb_lj *j) {
	if (j->jrow >= j->high) return NULL;
	int clrs = j->clrs, n = j->wide * clrs, bad = 0;
	uint16_t *cur = j->rows + (size_t)n * (size_t)(j->jrow & 1);
	const uint16_t *up = j->rows + (size_t)n * (size_t)((j->jrow + 1) & 1);
	unsigned acc = 0;
	for (int c = 0; c < clrs; c++) {
		int d = diff(j, j->use[c], &bad);
		int pred = (j->vpred[c] += d) - d;
		uint16_t v = (uint16_t)(pred + d);
		acc |= v;
		cur[c] = v;
	}
	if (j->jrow == 0 || j->psv == 1) {
		for (int i = clrs; i < n; i += clrs)
			for (int c = 0; c < clrs; c++) {
				uint16_t v = (uint16_t)(cur[i + c - clrs] + diff(j, j->use[c], &bad));
				acc |= v;
				cur[i + c] = v;
			}
	} else {
		for (int i = clrs; i < n; i += clrs)
			for (int c = 0; c < clrs; c++) {
				int d = diff(j, j->use[c], &bad);
				int left = cur[i + c - clrs], above = up[i + c], diag = up[i + c - clrs], pred;
				switch (j->psv) {
				case 2: pred = above; break;
				case 3: pred = diag; break;
				case 4: pred = left + above - diag; break;
				case 5: pred = left + ((above - diag) >> 1); break;
				case 6: pred = above + ((left - diag) >> 1); break;
				default: pred = (left + above) >> 1; break;
				}
				uint16_t v = (uint16_t)(pred + d);
				acc |= v;
				cur[i + c] = v;
			}
	}
	j->jrow++;
	if (bad || (acc >> j->bits) != 0 || !done(j)) return NULL;
	return cur;
}

int rb_lj_eod(const rb_lj *j) { return j->eod; }

void rb_lj_free(rb_lj *j) {
	for (int c = 0; c < 20; c++) {
		free(j->tab[c]);
		j->tab[c] = NULL;
	}
	free(j->rows);
	j->rows = NULL;
	j->rowcap = 0;
}
