package look

import (
	"math"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/colour"
)

// TestAnchorSearchScoresEachEVOnce: AnchorExposureDeltaE scores no EV
// twice (the start is not scored again on the coarse grid, nor the coarse
// best and its neighbours on the fine grid: 20 + 8 EVs after the start
// where the reference scores 21 + 11), and finds the reference's EV and
// score.
func TestAnchorSearchScoresEachEVOnce(t *testing.T) {
	gw, gh := 32, 32
	c := Cells{Scene: Image{W: gw, H: gh, Pix: make([]float32, 3*gw*gh)}, Preview: Image{W: gw, H: gh, Pix: make([]float32, 3*gw*gh)}, Lum: colour.SRGB.ToXYZ[1]}
	other := NewParametric(1.2, 0.18, 0.45, 1)
	for k := range gw * gh {
		x := 0.01 + 0.5*float64(k)/float64(gw*gh)
		for i, tint := range [3]float64{1, 0.9, 0.8} {
			c.Scene.Pix[3*k+i] = float32(x * tint)
		}
		p := RGBTone(other, c.Scene.cell(k))
		for i := range 3 {
			c.Preview.Pix[3*k+i] = float32(p[i])
		}
	}
	var evs []float64
	anchorScoreHook = func(ev float64) { evs = append(evs, ev) }
	defer func() { anchorScoreHook = func(float64) {} }()
	got, err := AnchorExposureDeltaE(c, DefaultCurve, colour.SRGB, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := len(evs)
	for i := range evs {
		for j := range i {
			if math.Abs(evs[i]-evs[j]) < 1e-6 {
				t.Errorf("EV %.6f scored twice", evs[i])
			}
		}
	}
	evs = nil
	want, err := AnchorExposureDeltaEReference(c, DefaultCurve, colour.SRGB, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n != 20+8 || len(evs) != 21+11 {
		t.Errorf("scored %d EVs after the start, reference %d: want 28 and 32", n, len(evs))
	}
	if math.Abs(got.Raw-want.Raw) > 1e-9 || math.Abs(got.Score-want.Score) > 1e-9 {
		t.Errorf("%v (ΔE %.9f), reference %v (ΔE %.9f)", got, got.Score, want, want.Score)
	}
}
