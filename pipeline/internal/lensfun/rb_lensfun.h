// rb_lensfun.h: the C half of package lensfun (lensfun.c), declared for
// its Go files.
#ifndef RAWBATCH_RB_LENSFUN_H
#define RAWBATCH_RB_LENSFUN_H
#include <lensfun.h>

void rb_lf_quiet(void);
const char *rb_lf_take_log(void);
void rb_lf_clear_log(void);
long rb_lf_gettid(void);
const lfCamera *rb_lf_cam_at(const lfCamera **l, int i);
const lfLens *rb_lf_lens_at(const lfLens **l, int i);
int rb_lf_subpixel_rows(lfModifier *m, float y0, int width, int rows, float *res);
int rb_lf_subpixel_points(lfModifier *m, const float *xy, int n, float *res);
int rb_lf_rgb_role(void);
void rb_lf_counts(const lfLens *l, int *dist, int *tca, int *vig);
#endif
