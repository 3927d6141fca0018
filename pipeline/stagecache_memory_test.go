package pipeline

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rawbatch/rawbatch/budget"
)

// TestStageCacheHitMemory: the stage cache's write and read paths fit the
// memory estimate. A conversion that stores its decoded image (16-bit,
// through at most 1 MiB of buffers) lies within the calibration's 0.8–1.25
// of the estimate, and one that reads it back (into the job's own float32
// image, nothing mapped; the camera matrix then works in place) peaks no
// higher than that estimate, which counts a decode (LibRaw's buffers) the
// hit does not have. Measured on the 12 MP synthetic DNG: estimate
// 306 MiB, storing 258 MiB, hit 246 MiB; with the float32 entry mapped
// read-only and the camera matrix writing a second image beside it, the
// hit peaked at 333 MiB (1.09×, failing here).
func TestStageCacheHitMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("measures conversions in child processes")
	}
	dir := t.TempDir()
	in := writeSynthetic(t, dir, 4240, 2832)
	fi, err := ReadInfo(in)
	if err != nil {
		t.Fatal(err)
	}
	s := DefaultSettings()
	threads := 1
	est := EstimateMemory(fi, s, threads).Whole // a kept cache entry: not streamed
	spec := measureSpec{In: in, Out: filepath.Join(dir, "out.jpg"), Settings: s, Threads: threads, Estimate: est, CacheDir: filepath.Join(dir, "cache")}
	if d, err := os.MkdirTemp("/dev/shm", "rawbatch-hitmem-*"); err == nil {
		// tmpfs, as the default cache directory is.
		t.Cleanup(func() { os.RemoveAll(d) })
		spec.CacheDir = filepath.Join(d, "cache")
	}
	store := measure(t, spec)
	hit := measure(t, spec)
	if store.FromCache || !hit.FromCache {
		t.Fatalf("from cache: storing run %v, reading run %v; want false, true", store.FromCache, hit.FromCache)
	}
	sp, hp := store.PeakRSS-store.IdleRSS, hit.PeakRSS-hit.IdleRSS
	t.Logf("estimate %s; storing run %s (%.2f), cache hit %s (%.2f)", budget.FormatSize(est),
		budget.FormatSize(sp), float64(sp)/float64(est), budget.FormatSize(hp), float64(hp)/float64(est))
	if r, lo := float64(sp)/float64(est), calibrationLow(fi, s, est); (r < lo || r > 1.25) && abs64(sp-est) > calibrationSlack {
		t.Errorf("storing run: peak %d is %.2f× the estimate %d (want %.2f..1.25)", sp, r, est, lo)
	}
	if hp > est+calibrationSlack {
		t.Errorf("cache hit: peak %d over the estimate %d (%.2f×)", hp, est, float64(hp)/float64(est))
	}
}
