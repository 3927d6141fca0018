package pipeline

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// TestExposureOnTopOfAnchor: --exposure is the photographer's change on
// top of the preview-anchored brightness, not measured away by the
// anchor. On the D30 CRW (anchor about -1 EV), --exposure +1 and -0.5
// change the EV applied by exactly that much and leave the anchor's
// own correction as it is (were --exposure undone by the anchor,
// --exposure 1 would give the same picture as 0).
func TestExposureOnTopOfAnchor(t *testing.T) {
	in := filepath.Join(testdata, "raw", "canond30_CRW.CRW")
	ev := map[float64]float64{}
	anchor := map[float64]float64{}
	for _, x := range []float64{0, 1, -0.5} {
		s := DefaultSettings()
		s.Exposure = x
		_, res := convert(t, in, t.TempDir(), s)
		ev[x] = res.Exposure.EV
		anchor[x] = res.Exposure.EV - x
		t.Logf("--exposure %+.1f: EV %+.3f (%s)", x, res.Exposure.EV, res.Exposure.Source)
	}
	if anchor[0] > -0.5 {
		t.Fatalf("the D30's anchor is %+.2f EV, want about -1 (is the anchor applied?)", anchor[0])
	}
	for _, x := range []float64{1, -0.5} {
		if math.Abs(anchor[x]-anchor[0]) > 0.02 {
			t.Errorf("--exposure %+.1f moved the anchor from %+.3f to %+.3f EV: it measures the photographer's change away", x, anchor[0], anchor[x])
		}
	}
}

// TestCameraLookKeepsChosenWB: --look camera fits gains only on top of
// the camera's own white balance; one the photographer chose (--wb
// daylight) is kept (gains 1), and --exposure stays on top of the fit.
func TestCameraLookKeepsChosenWB(t *testing.T) {
	in := filepath.Join(testdata, "raw", "canon_eos_6d.dng")
	s := DefaultSettings()
	s.Look = LookCamera
	s.WhiteBalance = WhiteBalance{Mode: "daylight"}
	_, res := convert(t, in, t.TempDir(), s)
	if !strings.Contains(res.Exposure.Source, "gains 1.000/1.000/1.000") {
		t.Errorf("--wb daylight --look camera: %s; want the chosen white balance kept (gains 1.000/1.000/1.000)", res.Exposure.Source)
	}
	s.Exposure = 1
	_, res1 := convert(t, in, t.TempDir(), s)
	if d := res1.Exposure.EV - res.Exposure.EV; math.Abs(d-1) > 0.02 {
		t.Errorf("--look camera: --exposure +1 changed the EV applied by %+.3f, want +1 (%s → %s)", d, res.Exposure.Source, res1.Exposure.Source)
	}
}
