package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestWorkerEstimateSmallFiles: for small files the worker's own baseline
// (batch.WorkerRSS) is most of what a conversion costs, so the report's
// estimated_bytes (the file's estimate plus that baseline) must be within
// 0.8–1.25× of the worker's measured peak (peak_bytes). A baseline of
// 12 MiB, too low, estimates a tiny synthetic DNG and canon_eos_6d.dng at
// 0.65× and 0.77× of their peaks.
func TestWorkerEstimateSmallFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("converts in worker processes")
	}
	bin := rawbatchBinary(t)
	in := t.TempDir()
	writeSynth(t, in, 1, 96, 64)
	files := []string{filepath.Join("..", "..", "testdata", "raw", "canon_eos_6d.dng"), filepath.Join("..", "..", "testdata", "raw", "adobesdk_05_PGTM2_unsigned8.dng")}
	ents, _ := filepath.Glob(filepath.Join(in, "*.dng"))
	files = append(files, ents...)
	for _, f := range files {
		out := t.TempDir()
		rep := filepath.Join(out, "r.json")
		cmd, stderr := benchCmd(bin, []string{"convert", "-q", f, "-o", out, "--report", rep})
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", f, err, stderr)
		}
		data, err := os.ReadFile(rep)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Files []struct {
				EstimatedBytes int64 `json:"estimated_bytes"`
				PeakBytes      int64 `json:"peak_bytes"`
			}
		}
		if err := json.Unmarshal(data, &r); err != nil || len(r.Files) != 1 {
			t.Fatalf("%s: report %s: %v", f, data, err)
		}
		est, peak := r.Files[0].EstimatedBytes, r.Files[0].PeakBytes
		ratio := float64(est) / float64(peak)
		t.Logf("%s: estimated %d, worker peak %d: %.2f×", filepath.Base(f), est, peak, ratio)
		if peak <= 0 || ratio < 0.8 || ratio > 1.25 {
			t.Errorf("%s: estimated_bytes %d is %.2f× the worker's peak %d (want 0.8..1.25)", filepath.Base(f), est, ratio, peak)
		}
	}
}
