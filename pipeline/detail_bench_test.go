package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// writeSyntheticISO is writeSynthetic's chart at the given ISO with the
// Poisson-Gaussian noise of synthdng.AddNoise (so --denoise auto runs
// above ISO 400).
func writeSyntheticISO(b testing.TB, dir string, w, h, iso int) string {
	return writeSyntheticISOLens(b, dir, w, h, iso, false)
}

// writeSyntheticISOLens is writeSyntheticISO; with lens, the file names a
// body and lens that lensfun's own database knows (Canon EOS 6D, EF
// 24-105mm f/4L IS USM at 65 mm f/5.6: vignetting, distortion and TCA),
// so --lens auto corrects all three.
func writeSyntheticISOLens(b testing.TB, dir string, w, h, iso int, lens bool) string {
	b.Helper()
	p := filepath.Join(dir, fmt.Sprintf("synthetic-%dx%d-iso%d.dng", w, h, iso))
	spec := synthdng.AddNoise(syntheticSpec(w, h), iso, 1)
	if lens {
		p = strings.TrimSuffix(p, ".dng") + "-lens.dng"
		spec.Make, spec.Model, spec.FocalLength, spec.FNumber = "Canon", "Canon EOS 6D", 65, 5.6
		spec.Tags = append(spec.Tags, synthdng.Tag{Dir: tifftag.DirExif, ID: tifftag.LensModel, ASCII: "EF24-105mm f/4L IS USM"})
	}
	if err := synthdng.WriteFile(p, spec); err != nil {
		b.Fatal(err)
	}
	return p
}

// detailExtrasOff turns off, one entry each, the detail stages (noise
// reduction, capture sharpening, lens correction) whose cost
// BenchmarkDetail24MP measures.
var detailExtrasOff = []func(*Settings){
	func(s *Settings) { s.Denoise = DenoiseOff },
	func(s *Settings) { s.CaptureSharpen = CaptureSharpenOff },
	func(s *Settings) { s.Lens = LensOff },
}

// detailMaxRatio is the detail stages' time target: the pipeline with the
// extras at their defaults should take at most this times the time without
// them.
const detailMaxRatio = 1.5

// BenchmarkDetail24MP converts the realistic 24 MP lossless DNG (realFiles:
// ISO 1600, so --denoise auto runs, and a lens lensfun corrects) to a JPEG
// with the detail stages at their defaults ("on") and with
// detailExtrasOff ("off"), in interleaved rounds (on, off, on, off, ...),
// and reports the median wall time of each, their ratio (printed against
// detailMaxRatio, not asserted: timings on a shared machine are noise)
// and the median time of the denoise, lens and capture-sharpen steps. It
// fails when denoise or the lens correction did not run.
func BenchmarkDetail24MP(b *testing.B) {
	const rounds = 5
	in := realFiles(b, synthdng.RealW, synthdng.RealH, synthdng.RealDNG)[0]
	out := filepath.Join(b.TempDir(), "out.jpg")
	on := DefaultSettings()
	off := DefaultSettings()
	for _, f := range detailExtrasOff {
		f(&off)
	}
	run := func(s Settings) (time.Duration, Result) {
		t0 := time.Now()
		res, err := ConvertFile(context.Background(), in, out, s)
		if err != nil {
			b.Fatal(err)
		}
		return time.Since(t0), res
	}
	median := func(d []time.Duration) time.Duration {
		d = slices.Clone(d)
		slices.Sort(d)
		return d[len(d)/2]
	}
	for b.Loop() {
		var tOn, tOff []time.Duration
		steps := map[string][]time.Duration{}
		for range rounds {
			d, res := run(on)
			tOn = append(tOn, d)
			for _, st := range res.Timings {
				steps[st.Stage] = append(steps[st.Stage], st.Duration)
			}
			if res.Denoise == nil || res.Denoise.Strength <= 0 {
				b.Fatalf("denoise did not run: %+v", res.Denoise)
			}
			if res.Lens == nil || res.Lens.Corrections != "vignetting, distortion, TCA" {
				b.Fatalf("the lens was not corrected: %+v", res.Lens)
			}
			d, _ = run(off)
			tOff = append(tOff, d)
		}
		mOn, mOff := median(tOn), median(tOff)
		ratio := float64(mOn) / float64(mOff)
		b.ReportMetric(float64(mOn.Milliseconds()), "on-ms")
		b.ReportMetric(float64(mOff.Milliseconds()), "off-ms")
		b.ReportMetric(ratio, "ratio")
		for _, name := range []string{"denoise", "lens", "capture-sharpen"} {
			if len(steps[name]) > 0 {
				b.ReportMetric(float64(median(steps[name]).Milliseconds()), name+"-ms")
			}
		}
		verdict := "met"
		if ratio > detailMaxRatio {
			verdict = "NOT met"
		}
		fmt.Printf("24 MP at ISO 1600: %v with the detail stages, %v without: %.2f× (target ≤ %.1f×: %s)\n", mOn, mOff, ratio, detailMaxRatio, verdict)
	}
}
