// lensfun.c: the C half of package lensfun (see rb_lensfun.h and the
// package documentation in lensfun.go).
#define _GNU_SOURCE
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <glib.h>
#include "rb_lensfun.h"

// lensfun reports XML errors through GLib's log (g_warning), which prints
// to stderr. rb_lf_log keeps the calling thread's last message instead,
// for the error of the failed call (rb_lf_take_log).
static __thread char rb_lf_last[512];

static void rb_lf_log(const gchar *domain, GLogLevelFlags level, const gchar *msg, gpointer data) {
	if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING)) {
		strncpy(rb_lf_last, msg ? msg : "", sizeof rb_lf_last - 1);
		rb_lf_last[sizeof rb_lf_last - 1] = 0;
	}
}

// rb_lf_quiet installs rb_lf_log as GLib's default log handler.
void rb_lf_quiet(void) {
	g_log_set_handler(NULL, G_LOG_LEVEL_MASK | G_LOG_FLAG_FATAL | G_LOG_FLAG_RECURSION, rb_lf_log, NULL);
}

// rb_lf_take_log is the calling thread's last message ("" when none).
const char *rb_lf_take_log(void) { return rb_lf_last; }

void rb_lf_clear_log(void) { rb_lf_last[0] = 0; }

// rb_lf_gettid is the calling OS thread's id.
long rb_lf_gettid(void) { return syscall(SYS_gettid); }

// rb_lf_cam_at and rb_lf_lens_at are element i of a NULL-terminated list
// that lf_db_find_* returned.
const lfCamera *rb_lf_cam_at(const lfCamera **l, int i) { return l[i]; }
const lfLens *rb_lf_lens_at(const lfLens **l, int i) { return l[i]; }

// rb_lf_subpixel_rows fills res (width*rows*6 floats) with the corrected
// image's per-channel source positions of rows y0..y0+rows-1, one pixel a
// call: lensfun 0.3.3's lf_modifier_apply_subpixel_geometry_distortion
// over more than one pixel mixes up the positions of neighbouring pixels
// and channels when distortion is on (errors up to 0.17 px and false colour
// fringes; TestCoordinatesPerPixel), while one pixel at a time is exact.
int rb_lf_subpixel_rows(lfModifier *m, float y0, int width, int rows, float *res) {
	for (int r = 0; r < rows; r++) {
		for (int x = 0; x < width; x++) {
			if (!lf_modifier_apply_subpixel_geometry_distortion(m, (float)x, y0 + r, 1, 1, res)) return 0;
			res += 6;
		}
	}
	return 1;
}

// rb_lf_subpixel_points fills res (n*6 floats) with the source positions
// of the n points (xy: x0, y0, x1, y1, ...), one call each (see above).
int rb_lf_subpixel_points(lfModifier *m, const float *xy, int n, float *res) {
	for (int i = 0; i < n; i++) {
		if (!lf_modifier_apply_subpixel_geometry_distortion(m, xy[2 * i], xy[2 * i + 1], 1, 1, res + 6 * i)) return 0;
	}
	return 1;
}

// rb_lf_rgb_role is the component role of interleaved R, G, B pixels.
int rb_lf_rgb_role(void) { return LF_CR_3(RED, GREEN, BLUE); }

// rb_lf_counts reports how many calibrations of each kind a lens has.
void rb_lf_counts(const lfLens *l, int *dist, int *tca, int *vig) {
	*dist = 0;
	*tca = 0;
	*vig = 0;
	if (l->CalibDistortion)
		while (l->CalibDistortion[*dist]) (*dist)++;
	if (l->CalibTCA)
		while (l->CalibTCA[*tca]) (*tca)++;
	if (l->CalibVignetting)
		while (l->CalibVignetting[*vig]) (*vig)++;
}
