package highlight

import (
	"math"
	"strings"
	"testing"
)

// canon6D is the XYZ → camera matrix of the Canon EOS 6D (Adobe's, as in
// LibRaw's table, divided by 10000).
var canon6D = [3][3]float64{
	{0.7034, -0.0804, -0.1014},
	{-0.4420, 1.2564, 0.2058},
	{-0.0851, 0.1994, 0.5758},
}

// greyScene renders n grey surfaces of reflectance 0.02..0.8 under an
// illuminant of camera RGB light (G = 1) as camera RGB before white
// balance, with a few clipped light sources of another colour.
func greyScene(light [3]float64, n int) []float32 {
	var out []float32
	for i := range n {
		r := 0.02 + 0.78*float64(i)/float64(n-1)
		out = append(out, float32(r*light[0]*0.9), float32(r*light[1]*0.9), float32(r*light[2]*0.9))
	}
	for range n / 50 {
		out = append(out, 1, 1, 0.2) // clipped lamps: ignored
	}
	return out
}

func TestAutoWBKeepsTungstenWarmth(t *testing.T) {
	light := CameraWhite(canon6D, 3000)
	e, ok := EstimateIlluminant(greyScene(light, 1000))
	if !ok {
		t.Fatal("no estimate")
	}
	for c := range 3 {
		if math.Abs(e[c]/light[c]-1) > 0.005 {
			t.Fatalf("estimated illuminant %v, want %v", e, light)
		}
	}
	mul, est, corr := AutoWB(e, canon6D)
	if math.Abs(est-3000) > 20 {
		t.Errorf("estimated CCT %.0f K, want 3000 K", est)
	}
	// The documented amount: 60 % of the mired distance to 5500 K.
	wantCorr := 1e6 / (1e6/5500 + 0.6*(1e6/3000-1e6/5500))
	if math.Abs(corr-wantCorr) > 20 {
		t.Errorf("corrected to %.0f K, want %.0f K", corr, wantCorr)
	}
	// A grey under 3000 K comes out as the camera sees 3000 K light
	// relative to wantCorr light: warm (R/G > 1, B/G < 1), by that ratio.
	want := CameraWhite(canon6D, 3000)
	ref := CameraWhite(canon6D, wantCorr)
	got := [3]float64{mul[0] * e[0], mul[1] * e[1], mul[2] * e[2]}
	for c := range 3 {
		if w := want[c] / ref[c]; math.Abs(got[c]/got[1]/w-1) > 0.01 {
			t.Errorf("corrected grey %v, channel %d want %.4f", got, c, w)
		}
	}
	if !(got[0]/got[1] > 1.05 && got[2]/got[1] < 0.95) {
		t.Errorf("corrected grey under 3000 K %v is not warm", got)
	}
	t.Logf("3000 K: estimated %.0f K, corrected to %.0f K, multipliers %.3f %.3f %.3f, grey comes out R/G %.3f B/G %.3f", est, corr, mul[0], mul[1], mul[2], got[0]/got[1], got[2]/got[1])
}

func TestAutoWBNeutralInDaylight(t *testing.T) {
	for _, cct := range []float64{5500, 6500} {
		light := CameraWhite(canon6D, cct)
		// A green tint off the Planckian axis is corrected as well.
		light[1] *= 1.03
		e, ok := EstimateIlluminant(greyScene(light, 1000))
		if !ok {
			t.Fatal("no estimate")
		}
		mul, est, corr := AutoWB(e, canon6D)
		got := [3]float64{mul[0] * e[0], mul[1] * e[1], mul[2] * e[2]}
		if math.Abs(got[0]/got[1]-1) > 0.01 || math.Abs(got[2]/got[1]-1) > 0.01 {
			t.Errorf("%.0f K: corrected grey %v, want neutral (estimated %.0f K, corrected %.0f K)", cct, got, est, corr)
		}
	}
}

func TestAsShotUsable(t *testing.T) {
	for _, c := range []struct {
		mul [4]float64
		ok  bool
	}{
		{[4]float64{2.1, 1, 1.5, 0}, true},
		{[4]float64{-1, 0.976, 1.007, 0}, false}, // the D30 CRW in auto
		{[4]float64{0, 0, 0, 0}, false},
		{[4]float64{2, 1, 0, 1}, false}, // LibRaw's LIBRAW_WARN_BAD_CAMERA_WB case
		{[4]float64{math.NaN(), 1, 1, 1}, false},
		{[4]float64{math.Inf(1), 1, 1, 1}, false},
	} {
		if ok, why := AsShotUsable(c.mul); ok != c.ok || (!ok && why == "") {
			t.Errorf("AsShotUsable(%v) = %v %q, want %v", c.mul, ok, why, c.ok)
		}
	}
}

func TestChooseWBReasons(t *testing.T) {
	called := false
	illum := func() ([3]float64, bool) { called = true; return CameraWhite(canon6D, 3000), true }
	w := ChooseWB([4]float64{2000, 1000, 1400, 1000}, canon6D, illum)
	if w.Source != "as shot" || w.Reason != "as shot" || called || w.Multipliers != [4]float64{2, 1, 1.4, 1} {
		t.Errorf("as-shot file: %+v (illuminant called %v)", w, called)
	}
	w = ChooseWB([4]float64{-1, 1, 1, 0}, canon6D, illum)
	if w.Source != "auto" || !strings.HasPrefix(w.Reason, "auto: the file has none") || !called || !(w.EstimatedCCT > 2900 && w.EstimatedCCT < 3100) {
		t.Errorf("CRW auto: %+v", w)
	}
	w = ChooseWB([4]float64{-1, 1, 1, 0}, canon6D, func() ([3]float64, bool) { return [3]float64{}, false })
	d := CameraWhite(canon6D, ReferenceCCT)
	if w.Source != "daylight" || math.Abs(w.Multipliers[0]*d[0]-1) > 1e-9 || math.Abs(w.Multipliers[2]*d[2]-1) > 1e-9 {
		t.Errorf("no estimate: %+v", w)
	}
}

func TestCFAQuads(t *testing.T) {
	// RGGB 4×2: R=1100, G=600/700, B=300 over black 100, white 1100.
	raw := []uint16{1100, 600, 1100, 600, 700, 300, 700, 300}
	q := CFAQuads(raw, 4, 2, bayer, [4]float64{100, 100, 100, 100}, 1100, 1)
	want := []float32{1, 0.55, 0.2, 1, 0.55, 0.2}
	if len(q) != len(want) {
		t.Fatalf("quads %v, want %v", q, want)
	}
	for i := range q {
		if math.Abs(float64(q[i]-want[i])) > 1e-6 {
			t.Fatalf("quads %v, want %v", q, want)
		}
	}
}
