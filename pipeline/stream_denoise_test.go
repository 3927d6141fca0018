package pipeline

import (
	"context"
	"errors"
	"fmt"
	"image"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/denoise"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// writeNoisyStream writes syntheticSpec's chart at w×h with Poisson-Gaussian
// noise of the given ISO (synthdng.AddNoise; the ISO in its EXIF), in
// orientation o, with or without an embedded preview, a bright disc
// clipped in the raw data, and a DefaultCrop of odd size.
func writeNoisyStream(t testing.TB, dir string, w, h, o, iso int, preview bool) string {
	t.Helper()
	sp := synthdng.AddNoise(syntheticSpec(w, h), iso, 3)
	sp.Orientation, sp.ThumbnailIFD0 = o, preview
	// An odd picture area: the colour planes' 2×2 grid and the noise's
	// sample grid fall otherwise when the rows are turned.
	sp.DefaultCropOrigin, sp.DefaultCropSize = [2]int{7, 5}, [2]int{sp.Width - 21, sp.Height - 13}
	scene := sp.Scene
	sp.Scene = func(x, y, c int) float64 {
		if dx, dy := x-w/3, y-h/2; dx*dx+dy*dy < 400 {
			return 1.5
		}
		return scene(x, y, c)
	}
	p := filepath.Join(dir, fmt.Sprintf("noisy-%dx%d-o%d-iso%d-p%v.dng", w, h, o, iso, preview))
	if err := synthdng.WriteFile(p, sp); err != nil {
		t.Fatal(err)
	}
	return p
}

// denoisePSNR is the PSNR in dB (peak 1) of b against a, both read as 16-bit
// RGB.
func denoisePSNR(a, b image.Image) float64 {
	var se float64
	n := 0
	for y := range a.Bounds().Dy() {
		for x := range a.Bounds().Dx() {
			r1, g1, b1 := rgb16(a, x, y)
			r2, g2, b2 := rgb16(b, x, y)
			for _, d := range [3]float64{float64(r1) - float64(r2), float64(g1) - float64(g2), float64(b1) - float64(b2)} {
				se += d * d / (65535 * 65535)
				n++
			}
		}
	}
	if se == 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(float64(n)/se)
}

// TestStreamDenoise: a file with noise reduction (ISO 1600, --denoise
// auto; ISO 100 with --denoise 2) streams, split at its denoise step
// (stream_denoise.go), to within PSNR 50 dB and mean CIEDE2000 0.05 of
// the whole-image path, without a preview (two passes) and with one (the
// exposure anchor: three), in orientations 1 and 6 (an odd-sized
// DefaultCrop), for JPEG and TIFF16 (a JPEG of the turned file with a
// preview within mean ΔE2000 0.1: see its case), with the
// same noise measured (σ within 1 %; exactly in orientation 1 without a
// preview, where the rows are the whole path's), the same strength and
// the exposure anchor's EV within 0.01.
func TestStreamDenoise(t *testing.T) {
	dir := t.TempDir()
	forced := DefaultSettings()
	forced.Denoise = "2"
	real := DefaultSettings()
	real.Denoise = "1"
	for _, c := range []struct {
		name     string
		o, iso   int
		preview  bool
		s        Settings
		spec     string
		exactSig bool
		maxDE    float64
	}{
		{"o1-jpeg", 1, 1600, false, DefaultSettings(), "main=jpeg", true, 0.05},
		{"o1-preview-tiff16", 1, 1600, true, DefaultSettings(), "main=tiff16", false, 0.05},
		{"o6-preview-tiff16", 6, 1600, true, DefaultSettings(), "main=tiff16", false, 0.05},
		// A JPEG of the noisy image turns the stored rows' 16-bit
		// rounding into code values over 8×8 blocks: with --denoise off
		// the same file's two-pass stream (the anchor alone) measures
		// mean ΔE2000 0.14 against its whole image, PSNR 50.9 dB.
		{"o6-preview-jpeg", 6, 1600, true, DefaultSettings(), "main=jpeg", false, 0.1},
		{"o6-tiff16", 6, 3200, false, DefaultSettings(), "main=tiff16", false, 0.05},
		{"o1-forced-iso100", 1, 100, false, forced, "main=jpeg", true, 0.05},
		// A real camera file with an embedded preview (three passes),
		// whose ISO 100 gets a strength given (the 6D sample at ISO 1000
		// is a linear DNG: no CFA to stream).
		{"canond30_CRW", 0, 0, true, real, "main=tiff16", false, 0.05},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := filepath.Join(testdata, "raw", "canond30_CRW.CRW")
			if c.o != 0 {
				in = writeNoisyStream(t, dir, 300, 224, c.o, c.iso, c.preview)
			}
			got, sres := convertOpts(t, in, dir, c.name+"/stream", c.s, ConvertOptions{}, c.spec)
			want, wres := convertOpts(t, in, dir, c.name+"/whole", c.s, ConvertOptions{wholeImage: true}, c.spec)
			if !sres.Streamed || wres.Streamed {
				t.Fatalf("streamed %v, whole-image reference streamed %v", sres.Streamed, wres.Streamed)
			}
			if !slices.Equal(timingNames(sres), timingNames(wres)) {
				t.Errorf("steps differ:\n stream %q\n whole  %q", timingNames(sres), timingNames(wres))
			}
			sd, wd := sres.Denoise, wres.Denoise
			if sd == nil || wd == nil || wd.Strength == 0 || sd.Strength != wd.Strength || wd.Sigma == 0 {
				t.Fatalf("denoise streamed %+v, whole %+v", sd, wd)
			}
			if r := math.Abs(sd.Sigma/wd.Sigma - 1); r > 0.01 || c.exactSig && sd.Sigma != wd.Sigma {
				t.Errorf("σ streamed %g, whole %g", sd.Sigma, wd.Sigma)
			}
			if c.preview {
				if !strings.Contains(wres.Exposure.Source, ", preview anchor ") {
					t.Fatalf("whole-image run's exposure %q measured no preview", wres.Exposure.Source)
				}
				if d := math.Abs(sres.Exposure.EV - wres.Exposure.EV); d > 0.01 || terms(sres.Exposure.Source) != terms(wres.Exposure.Source) {
					t.Errorf("exposure %+.4f EV (%s), whole-image path %+.4f (%s)", sres.Exposure.EV, sres.Exposure.Source, wres.Exposure.EV, wres.Exposure.Source)
				}
			}
			if fmt.Sprint(sres.CaptureSharpen) != fmt.Sprint(wres.CaptureSharpen) {
				t.Errorf("capture sharpening %+v, whole %+v", sres.CaptureSharpen, wres.CaptureSharpen)
			}
			a, b := decodeImage(t, got[0]), decodeImage(t, want[0])
			if a.Bounds() != b.Bounds() {
				t.Fatalf("sizes %v, %v", a.Bounds(), b.Bounds())
			}
			p := denoisePSNR(b, a)
			de, worst := deltaEMeanMax(a, b)
			t.Logf("σ %.5f / %.5f, PSNR %.1f dB, ΔE2000 mean %.4f max %.2f", sd.Sigma, wd.Sigma, p, de, worst)
			if p < 50 || de > c.maxDE {
				t.Errorf("streamed output against the whole image's: PSNR %.1f dB (want ≥ 50), mean ΔE2000 %.4f (want ≤ %g)", p, de, c.maxDE)
			}
		})
	}
}

// TestStreamDenoiseEstimate: the estimate of a file with noise reduction
// is the streamed one (Memory.Streamed) with its two passes' stored rows, pass 1's noise meter in the demosaic
// step and the denoise step's own streamed buffers (denoiseCost's
// streamed form, not the whole image's planes of 6 bytes a pixel), and
// the file streams.
func TestStreamDenoiseEstimate(t *testing.T) {
	dir := t.TempDir()
	in := writeNoisyStream(t, dir, 1200, 800, 1, 1600, false)
	fi, err := ReadInfo(in)
	if err != nil {
		t.Fatal(err)
	}
	s := DefaultSettings()
	e := EstimateMemory(fi, s, 1)
	if !e.Streamed {
		t.Fatalf("estimate not streamed: %+v", e)
	}
	off := s
	off.Denoise = DenoiseOff
	eo := EstimateMemory(fi, off, 1)
	step := func(m Memory, name string) StepMemory {
		for _, st := range m.Steps {
			if st.Step == name {
				return st
			}
		}
		t.Fatalf("no step %s in %+v", name, m.Steps)
		return StepMemory{}
	}
	d, do := step(e, "demosaic"), step(eo, "demosaic")
	p := PlanStages(fi, s)
	w, h := p.W, p.H
	long := max(w, h)
	if got, want := d.Scratch-do.Scratch, denoise.MeterScratchBytes(long); got != want {
		t.Errorf("demosaic step's scratch grows by %d with the denoise, want the meter's %d", got, want)
	}
	if !eo.Streamed || !twoPassPredicted(fi, s) || twoPassPredicted(fi, off) {
		t.Errorf("two passes predicted %v (denoise off: %v, streamed %v)", twoPassPredicted(fi, s), twoPassPredicted(fi, off), eo.Streamed)
	}
	// The whole-image planes of denoise's reference Wavelet: luminance
	// and two quarter-size colour planes of float32.
	whole := 4*int64(w)*int64(h) + 8*int64((w+1)/2)*int64((h+1)/2)
	if got := step(e, "denoise"); got.Scratch != 0 || got.Alloc == 0 || got.Alloc >= whole {
		t.Errorf("denoise step %+v: want its streamed buffers (rings and rows, under the whole image's planes, %d)", got, whole)
	}
	if _, res := convertOpts(t, in, dir, "out", s, ConvertOptions{}, "main=jpeg"); !res.Streamed || res.Denoise == nil || res.Denoise.Strength == 0 {
		t.Errorf("streamed %v, denoise %+v", res.Streamed, res.Denoise)
	}
}

// TestStreamDenoiseCancelled: a streamed denoise cancelled in its second
// pass (the stored rows read back through the shrinkage, with and without
// the anchor's third pass) fails with the context's error naming the
// input and leaves no output.
func TestStreamDenoiseCancelled(t *testing.T) {
	for _, preview := range []bool{false, true} {
		t.Run(fmt.Sprintf("preview=%v", preview), func(t *testing.T) {
			dir := t.TempDir()
			in := writeNoisyStream(t, dir, 300, 600, 1, 1600, preview)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			last, second := 0, false
			streamBandHook = func(made int) {
				if made < last { // pass 2 starts over from the first row
					second = true
					cancel()
				}
				last = made
			}
			defer func() { streamBandHook = nil }()
			out := filepath.Join(dir, "out", "x.jpg")
			os.MkdirAll(filepath.Dir(out), 0o755)
			s := DefaultSettings()
			_, err := ConvertOutputs(ctx, in, []OutputSpec{{Variant: s.OutputVariants()[0], Path: out}}, s, ConvertOptions{})
			if !second || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), in) {
				t.Fatalf("pass 2 reached %v, err %v, want context.Canceled naming the input", second, err)
			}
			if left, _ := os.ReadDir(filepath.Dir(out)); len(left) != 0 {
				t.Errorf("left %v", left)
			}
		})
	}
}
