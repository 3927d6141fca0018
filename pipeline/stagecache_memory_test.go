package pipeline

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rawbatch/rawbatch/budget"
)

// TestStageCacheHitMemory: the stage cache's write and read paths fit the
// memory estimate a kept cache admits files at (Memory.Whole, the
// whole-image path's), and the storing run follows the estimate of what it
// does: a streamed conversion in two passes (its stored rows, 6 bytes a
// pixel, are the entry written), within the calibration's range of the
// streamed estimate with the stored rows. A hit maps the entry (tmpfs's
// pages, shared) and streams its last pass: it peaks no higher than the
// whole estimate. Measured on the 12 MP synthetic DNG: whole estimate 302
// MiB, storing run 102 MiB, hit 144 MiB.
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
	m := EstimateMemory(fi, s, threads)
	est := m.Whole // what a kept cache admits a file at
	streamed := m.Total
	if w, h := DecodedSize(fi, s); !twoPassPredicted(fi, s) {
		streamed += stored16Bytes(w, h) // a storing stream runs in two passes
	}
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
	t.Logf("whole estimate %s, streamed with the stored rows %s; storing run %s (%.2f of the streamed), cache hit %s (%.2f of the whole)",
		budget.FormatSize(est), budget.FormatSize(streamed), budget.FormatSize(sp), float64(sp)/float64(streamed), budget.FormatSize(hp), float64(hp)/float64(est))
	if r, lo := float64(sp)/float64(streamed), calibrationLow(fi, s, streamed); (r < lo || r > 1.25) && abs64(sp-streamed) > calibrationSlack {
		t.Errorf("storing run: peak %d is %.2f× the streamed estimate with the stored rows %d (want %.2f..1.25)", sp, r, streamed, lo)
	}
	if sp > est+calibrationSlack || hp > est+calibrationSlack {
		t.Errorf("storing run %d, cache hit %d: over the whole estimate %d", sp, hp, est)
	}
}
