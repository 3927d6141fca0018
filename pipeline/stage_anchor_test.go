package pipeline

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnchorRealFiles: the preview-anchored exposure on the two sample
// files with a preview. The D30 CRW's JPEG is about 1 EV darker than the
// default curve makes it (−0.81 to −0.99 EV by the method): the
// anchor applies −1 ± 0.3 EV, says so in Result.Exposure, and brings the
// output closer to the preview; on the 6D DNG the exposure that matches
// the whole picture best is about 0.2 EV under its BaselineExposure
// (+0.25), so the total is +0.25 − 0.2 ± 0.2 EV. Anchored, both are
// within the look's target (mean ΔE2000 ≤ 5) and closer to the preview
// than unanchored. --exposure-anchor none and --look neutral apply no
// anchor.
func TestAnchorRealFiles(t *testing.T) {
	for _, tc := range []struct {
		file         string
		lo, hi, base float64
	}{{"canond30_CRW.CRW", -1.3, -0.7, 0}, {"canon_eos_6d.dng", -0.15, 0.25, 0.25}} {
		in := filepath.Join(testdata, "raw", tc.file)
		score := map[string]float64{}
		for _, mode := range []string{"none", "neutral", "preview"} {
			s := DefaultSettings()
			s.Format = PNG16
			s.Lens = LensOff // scored against the uncorrected preview
			switch mode {
			case "none":
				s.ExposureAnchor = AnchorNone
			case "neutral":
				s.Look = LookNeutral
			}
			out, res := convert(t, in, t.TempDir(), s)
			score[mode] = scoreAgainstPreview(t, in, out)
			t.Logf("%s %s: EV %+.2f (%s), mean ΔE2000 vs preview %.2f", tc.file, mode, res.Exposure.EV, res.Exposure.Source, score[mode])
			ev := res.Exposure.EV
			if mode != "preview" {
				if math.Abs(ev-tc.base) > 1e-9 || strings.Contains(res.Exposure.Source, "preview anchor +") || strings.Contains(res.Exposure.Source, "preview anchor -") {
					t.Errorf("%s %s: EV %+.3f (%s), want %+.2f without anchor", tc.file, mode, ev, res.Exposure.Source, tc.base)
				}
				continue
			}
			if ev < tc.lo || ev > tc.hi || !strings.Contains(res.Exposure.Source, "--exposure +0.00") {
				t.Errorf("%s: EV %+.3f (%s), want %+.2f..%+.2f", tc.file, ev, res.Exposure.Source, tc.lo, tc.hi)
			}
		}
		if score["preview"] > 5 {
			t.Errorf("%s: anchored %.2f, the look's target is ≤ 5", tc.file, score["preview"])
		}
		if score["preview"] > score["none"]+0.01 {
			t.Errorf("%s: anchored %.2f is worse than unanchored %.2f", tc.file, score["preview"], score["none"])
		}
	}
}

// TestCameraLookRealFiles: --look camera fits the preview per file and
// renders the full image with the fit: on both sample files its full
// render scores against the preview at most the default look's, the
// report's exposure source names the camera look, and no --look camera
// fallback warning is given (other warnings, such as the D30's white balance fitted to the
// preview, are the white balance stage's and do not count).
func TestCameraLookRealFiles(t *testing.T) {
	for _, f := range []string{"canon_eos_6d.dng", "canond30_CRW.CRW"} {
		in := filepath.Join(testdata, "raw", f)
		s := DefaultSettings()
		s.Format = PNG16
		out, res := convert(t, in, t.TempDir(), s)
		def := scoreAgainstPreview(t, in, out)
		s.Look = LookCamera
		out, res2 := convert(t, in, t.TempDir(), s)
		cam := scoreAgainstPreview(t, in, out)
		t.Logf("%s: default %.2f (EV %+.2f), camera %.2f (EV %+.2f: %s) %q", f, def, res.Exposure.EV, cam, res2.Exposure.EV, res2.Exposure.Source, res2.Warnings)
		var fallback []string
		for _, w := range res2.Warnings {
			if strings.HasPrefix(w, "--look camera") {
				fallback = append(fallback, w)
			}
		}
		if cam > def || !strings.Contains(res2.Exposure.Source, "camera look") || len(fallback) != 0 {
			t.Errorf("%s: camera look %.2f vs default %.2f; %s; fallback %q", f, cam, def, res2.Exposure.Source, fallback)
		}
	}
}
