// thumb.c: the C half of thumb.go.
#include "rb_libraw.h"

// rb_thumb_pick unpacks the embedded preview: with LibRaw 0.21 or later
// the largest (by pixel count) of thumbs_list through
// libraw_unpack_thumb_ex, else (LibRaw 0.20 has no list) the one LibRaw
// chose at open through libraw_unpack_thumb. *count receives the number of
// previews rb_thumb_largest counts.
int rb_thumb_pick(libraw_data_t *lr, int *count) {
	int w, h, jpeg;
	int best = rb_thumb_largest(lr, count, &w, &h, &jpeg);
#if LIBRAW_VERSION >= LIBRAW_MAKE_VERSION(0, 21, 0)
	if (*count > 1) return libraw_unpack_thumb_ex(lr, best);
#endif
	return libraw_unpack_thumb(lr);
}

// rb_thumb_largest returns the index in thumbs_list of the largest (by
// pixel count) embedded preview LibRaw lists after open, without reading
// it, with *count the number listed with a length (LibRaw >= 0.21; older: 1 when
// thumbnail.tlength says it has one, else 0), *w and *h its size as the
// file's tags give it (0 when they do not), and *jpeg 1 when it is a JPEG.
int rb_thumb_largest(libraw_data_t *lr, int *count, int *w, int *h, int *jpeg) {
	int best = 0;
#if LIBRAW_VERSION >= LIBRAW_MAKE_VERSION(0, 21, 0)
	int n = lr->thumbs_list.thumbcount;
	if (n > LIBRAW_THUMBNAIL_MAXCOUNT) n = LIBRAW_THUMBNAIL_MAXCOUNT;
	if (n < 0) n = 0;
	long long bestArea = -1;
	*count = 0;
	for (int i = 0; i < n; i++) {
		libraw_thumbnail_item_t *t = &lr->thumbs_list.thumblist[i];
		if (t->tlength == 0) continue; // listed, nothing stored
		(*count)++;
		long long a = (long long)t->twidth * (long long)t->theight;
		if (a > bestArea) {
			bestArea = a;
			best = i;
		}
	}
	if (*count > 0) {
		libraw_thumbnail_item_t *t = &lr->thumbs_list.thumblist[best];
		*w = t->twidth;
		*h = t->theight;
		*jpeg = t->tformat == LIBRAW_INTERNAL_THUMBNAIL_JPEG;
		return best;
	}
#else
	*count = lr->thumbnail.tlength > 0;
#endif
	*w = lr->thumbnail.twidth;
	*h = lr->thumbnail.theight;
	*jpeg = lr->thumbnail.tformat == LIBRAW_THUMBNAIL_JPEG;
	return best;
}
