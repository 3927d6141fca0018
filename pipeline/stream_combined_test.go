package pipeline

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestStreamLensDenoiseAnchor: a file that gets the three things most real
// photographs get at once, a lensfun correction, noise reduction and the
// exposure anchor on its embedded preview (three passes: the stored rows,
// the denoise and lens into them, the fused pass), streams, and its output
// is the whole-image path's within tolerance: the lens chart through the
// made-up lens (streamLensXML), noise reduction forced, a preview, upright
// and in orientation 6, to TIFF16 (PSNR ≥ 60 dB, mean ΔE2000 ≤ 0.01) and
// to JPEG (PSNR ≥ 50 dB, mean ΔE2000 ≤ 0.1, the bound of a two-pass JPEG:
// TestStreamDenoise says why).
func TestStreamLensDenoiseAnchor(t *testing.T) {
	dir := t.TempDir()
	db := streamLensDB(t)
	for _, c := range []struct {
		o          int
		spec       string
		psnr, mean float64
	}{
		{1, "main=tiff16", 60, 0.01},
		{6, "main=tiff16", 60, 0.01},
		{6, "main=jpeg", 50, 0.1},
	} {
		name := fmt.Sprintf("o%d_%s", c.o, strings.TrimPrefix(c.spec, "main="))
		t.Run(name, func(t *testing.T) {
			in := writeLensChart(t, dir, "Rawbatch Stream 28mm f/2.8", 360, 250, c.o, true, true)
			s := DefaultSettings()
			s.LensDB, s.Denoise = db, "1"
			got, sres := convertOpts(t, in, dir, name+"/stream", s, ConvertOptions{}, c.spec)
			want, wres := convertOpts(t, in, dir, name+"/whole", s, ConvertOptions{wholeImage: true}, c.spec)
			if !sres.Streamed || wres.Streamed {
				t.Fatalf("streamed %v, whole-image reference streamed %v", sres.Streamed, wres.Streamed)
			}
			if sres.Lens == nil || !strings.Contains(sres.Lens.Corrections, "distortion") || fmt.Sprint(sres.Lens) != fmt.Sprint(wres.Lens) {
				t.Fatalf("lens: stream %+v, whole %+v", sres.Lens, wres.Lens)
			}
			sd, wd := sres.Denoise, wres.Denoise
			if sd == nil || wd == nil || wd.Strength == 0 || sd.Strength != wd.Strength || math.Abs(sd.Sigma/wd.Sigma-1) > 0.01 {
				t.Fatalf("denoise: stream %+v, whole %+v", sd, wd)
			}
			// The anchor measures the chart against its preview (whether it
			// then moves the exposure or finds the estimate inconsistent):
			// the same decision both ways.
			if !strings.Contains(wres.Exposure.Source, " cells") || terms(sres.Exposure.Source) != terms(wres.Exposure.Source) || math.Abs(sres.Exposure.EV-wres.Exposure.EV) > 0.01 {
				t.Fatalf("exposure: stream %+v, whole %+v", sres.Exposure, wres.Exposure)
			}
			a, b := decodeImage(t, got[0]), decodeImage(t, want[0])
			p, mean, worst := imagePSNR(t, b, a)
			t.Logf("streamed vs whole: PSNR %.1f dB, ΔE2000 mean %.4f max %.3f", p, mean, worst)
			if p < c.psnr || mean > c.mean {
				t.Errorf("streamed output: PSNR %.1f dB (want ≥ %g), mean ΔE2000 %.4f (want ≤ %g) against the whole image's", p, c.psnr, mean, c.mean)
			}
		})
	}
}
