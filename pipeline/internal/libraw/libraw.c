// libraw.c: the C half of libraw.go: LibRaw's callbacks, the calling
// thread, the library linked, the copy of the processed image, and glibc's
// heap.
#define _GNU_SOURCE
#include <stdlib.h>
#include <malloc.h>
#include <unistd.h>
#include <dlfcn.h>
#include <sys/syscall.h>
#include <omp.h>
#include "rb_libraw.h"

static void rb_data_cb(void *data, const char *file, const int offset) {
	rb_ctl *c = (rb_ctl *)data;
	if (c->data_errors == 0) c->data_offset = offset;
	c->data_errors++;
}

#if LIBRAW_VERSION < LIBRAW_MAKE_VERSION(0, 21, 0)
static void rb_mem_cb(void *data, const char *file, const char *where) {
	rb_ctl *c = (rb_ctl *)data;
	c->mem_errors++;
}
#endif

static int rb_progress_cb(void *data, enum LibRaw_progress stage, int iteration, int expected) {
	rb_ctl *c = (rb_ctl *)data;
	return __atomic_load_n(&c->cancel, __ATOMIC_RELAXED) ? 1 : 0;
}

// rb_install replaces LibRaw's data-error and memory-error callbacks, which
// print, by ones that count into c, and installs a progress callback that
// stops processing once c->cancel is set.
void rb_install(libraw_data_t *lr, rb_ctl *c) {
	libraw_set_dataerror_handler(lr, rb_data_cb, c);
#if LIBRAW_VERSION < LIBRAW_MAKE_VERSION(0, 21, 0)
	// LibRaw 0.21 removed the memory-error callback (it throws instead).
	libraw_set_memerror_handler(lr, rb_mem_cb, c);
#endif
	libraw_set_progress_handler(lr, rb_progress_cb, c);
}

// rb_cancel makes LibRaw's next progress callback stop processing; any
// thread may call it.
void rb_cancel(rb_ctl *c) { __atomic_store_n(&c->cancel, 1, __ATOMIC_RELAXED); }

// rb_gettid is the calling OS thread's id.
long rb_gettid(void) { return syscall(SYS_gettid); }

// rb_set_threads sets the number of OpenMP threads of parallel regions
// started from the calling thread (libgomp keeps nthreads-var per thread).
void rb_set_threads(int n) { omp_set_num_threads(n); }

int rb_max_threads(void) { return omp_get_max_threads(); }

// rb_bundled is 1 when the binding is compiled against rawbatch's bundled
// static libraw_r.a (scripts/libraw.sh's environment defines
// RB_LIBRAW_BUNDLED), 0 for the system's shared libraw_r.
int rb_bundled(void) {
#ifdef RB_LIBRAW_BUNDLED
	return 1;
#else
	return 0;
#endif
}

// rb_lib_path names the shared object that provides libraw_init.
const char *rb_lib_path(void) {
	Dl_info info;
	if (dladdr((void *)libraw_init, &info) && info.dli_fname) return info.dli_fname;
	return "";
}

// rb_copy_image converts LibRaw's processed image (iwidth x iheight, 4 ushort
// slots per pixel, the first `colors` used) into interleaved float32 in
// [0,1] (value / 65535), `colors` channels per pixel, rows top to bottom, no
// rotation. dst must hold iwidth*iheight*colors floats.
void rb_copy_image(libraw_data_t *lr, float *dst, int colors) {
	size_t n = (size_t)lr->sizes.iwidth * (size_t)lr->sizes.iheight;
	ushort (*img)[4] = lr->image;
	const float k = 1.0f / 65535.0f;
	for (size_t i = 0; i < n; i++) {
		for (int c = 0; c < colors; c++) dst[i * colors + c] = (float)img[i][c] * k;
	}
}

// rb_inset_crop writes LibRaw's first inset crop (left, top, width,
// height in raw pixels; 0xffff left/top when unset): sizes.raw_inset_crops[0]
// since LibRaw 0.21, sizes.raw_inset_crop (one) in 0.20.
void rb_inset_crop(libraw_data_t *lr, int *out) {
#if LIBRAW_VERSION >= LIBRAW_MAKE_VERSION(0, 21, 0)
	libraw_raw_inset_crop_t *c = &lr->sizes.raw_inset_crops[0];
#else
	libraw_raw_inset_crop_t *c = &lr->sizes.raw_inset_crop;
#endif
	out[0] = c->cleft;
	out[1] = c->ctop;
	out[2] = c->cwidth;
	out[3] = c->cheight;
}

// rb_malloc_setup makes glibc serve every block of 1 MiB or more with its
// own mmap, returned to the system on free. LibRaw's raw and image buffers
// are such blocks; by default glibc raises its mmap threshold dynamically
// up to 32 MiB and keeps freed blocks below it in per-thread arenas, which
// across LibRaw's and OpenMP's threads let the process's RSS grow over
// hundreds of conversions without any leak (BenchmarkNoLeak500).
void rb_malloc_setup(void) { mallopt(M_MMAP_THRESHOLD, 1 << 20); }

// rb_malloc_stats reports glibc's heap: bytes in use by malloc (arena and
// mmapped blocks) and free bytes held in the arenas.
void rb_malloc_stats(long long *inuse, long long *free_held) {
	struct mallinfo2 m = mallinfo2();
	*inuse = (long long)m.uordblks + (long long)m.hblkhd;
	*free_held = (long long)m.fordblks;
}

// rb_crash dereferences a null pointer: a real crash in C code, for the
// worker's test-only fault hook.
void rb_crash(void) { *(volatile int *)0 = 0; }

// rb_hang never returns and uses no CPU: a C call that blocks as LibRaw's
// open does on some damaged files, for the test-only fault hook.
void rb_hang(void) {
	for (;;) pause();
}
