package pipeline

import (
	"path/filepath"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// writeLensChart12 writes a 12 MP lens chart that lensfun's own database
// corrects (Canon EOS 6D, EF24-105mm f/4L IS USM at 24 mm f/4:
// vignetting, distortion and TCA) at ISO 1600 (so --denoise runs), with
// an embedded preview.
func writeLensChart12(t testing.TB, dir string) string {
	t.Helper()
	c := synthdng.LensChart{Width: 4240, Height: 2832, Spacing: 60, K1: -0.02, Vignetting: [3]float64{-0.3, 0.1, -0.05}, Level: 0.6,
		Make: "Canon", Model: "Canon EOS 6D", Lens: "EF24-105mm f/4L IS USM", FocalLength: 24, FNumber: 4}
	sp := c.Spec()
	sp.ISO = 1600
	sp.ThumbnailIFD0 = true
	p := filepath.Join(dir, "lens-12mp-iso1600.dng")
	if err := synthdng.WriteFile(p, sp); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEstimateCalibrationLensWhole: a 12 MP lens chart lensfun corrects
// (vignetting, distortion, TCA) at ISO 1600 (noise reduction runs), to
// PNG16 (the whole-image path), measures 0.9–1.15× its estimate, and the
// same with --lens off. The lens, denoise and capture-sharpen stages give
// what they drop back to the system (debug.FreeOSMemory: the lens step's
// input image, the denoiser's and the sharpener's planes): the collector
// would return them only after the next steps had allocated beside them,
// filling the worker's memory limit (LimitMemory) and going past it, and
// the peaks would exceed the 1.15× bound.
func TestEstimateCalibrationLensWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("measures conversions in child processes")
	}
	f := writeLensChart12(t, t.TempDir())
	fi, err := ReadInfo(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, lens := range []LensMode{LensAuto, LensOff} {
		s := DefaultSettings()
		s.Format = PNG16
		s.Lens = lens
		m := EstimateMemory(fi, s, 1)
		if m.Streamed {
			t.Fatalf("--lens %s: PNG16 estimated streamed; want the whole-image path", lens)
		}
		est := m.Total
		peak := measurePeak(t, f, filepath.Join(t.TempDir(), "out.png"), s, 1, est)
		r := float64(peak) / float64(est)
		t.Logf("--lens %s: estimate %.1f MiB, measured %.1f MiB, ratio %.3f", lens, mib(est), mib(peak), r)
		if r < 0.9 || r > 1.15 {
			t.Errorf("--lens %s: measured peak %d is %.3f× the estimate %d (want 0.9..1.15)", lens, peak, r, est)
		}
	}
}

func mib(x int64) float64 { return float64(x) / (1 << 20) }
