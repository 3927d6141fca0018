// thumb.c: the C half of thumb.go.
#include "rb_libraw.h"

// rb_thumb_pick unpacks the embedded preview: with LibRaw 0.21 or later
// the largest (by pixel count) of thumbs_list through
// libraw_unpack_thumb_ex, else (LibRaw 0.20 has no list) the one LibRaw
// chose at open through libraw_unpack_thumb. *count receives the number of
// previews LibRaw listed (1 when it cannot list them).
int rb_thumb_pick(libraw_data_t *lr, int *count) {
#if LIBRAW_VERSION >= LIBRAW_MAKE_VERSION(0, 21, 0)
	int n = lr->thumbs_list.thumbcount;
	if (n > LIBRAW_THUMBNAIL_MAXCOUNT) n = LIBRAW_THUMBNAIL_MAXCOUNT;
	*count = n;
	if (n > 1) {
		int best = 0;
		long long bestArea = -1;
		for (int i = 0; i < n; i++) {
			libraw_thumbnail_item_t *t = &lr->thumbs_list.thumblist[i];
			long long a = (long long)t->twidth * (long long)t->theight;
			if (a > bestArea) {
				bestArea = a;
				best = i;
			}
		}
		return libraw_unpack_thumb_ex(lr, best);
	}
#else
	*count = 1;
#endif
	return libraw_unpack_thumb(lr);
}
