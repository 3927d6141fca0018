package look

import (
	"math"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/colour"
)

// TestAnchorExposureDeltaE: when the camera's curve differs in shape from
// ours (here a flatter toe, brighter mid-tones), the ΔE-minimising EV
// differs from the median's and scores better on the scored cells (all
// cells unclipped in the raw: the search's own); the consistency verdict
// is the median's.
func TestAnchorExposureDeltaE(t *testing.T) {
	gw, gh := 64, 64
	c := Cells{Scene: Image{W: gw, H: gh, Pix: make([]float32, 3*gw*gh)}, Preview: Image{W: gw, H: gh, Pix: make([]float32, 3*gw*gh)}, Lum: colour.SRGB.ToXYZ[1]}
	other := NewParametric(1.2, 0.18, 0.45, 1)
	for k := range gw * gh {
		x := 0.01 + 0.5*float64(k)/float64(gw*gh)
		tint := [3]float64{1, 0.9, 0.8}
		for i := range 3 {
			c.Scene.Pix[3*k+i] = float32(x * tint[i])
		}
		p := RGBTone(other, c.Scene.cell(k))
		for i := range 3 {
			c.Preview.Pix[3*k+i] = float32(p[i])
		}
	}
	med, err := AnchorExposure(c, DefaultCurve, nil)
	if err != nil {
		t.Fatal(err)
	}
	de, err := AnchorExposureDeltaE(c, DefaultCurve, colour.SRGB, nil)
	if err != nil {
		t.Fatal(err)
	}
	score := func(ev float64) float64 {
		r := Image{W: gw, H: gh, Pix: make([]float32, len(c.Scene.Pix))}
		var mask []bool
		for k := range gw * gh {
			mask = append(mask, c.scored(k))
			s := c.Scene.cell(k)
			g := math.Exp2(ev)
			o := RGBTone(DefaultCurve, [3]float64{s[0] * g, s[1] * g, s[2] * g})
			for i := range 3 {
				r.Pix[3*k+i] = float32(o[i])
			}
		}
		d, err := MeanDeltaE2000(r, colour.SRGB, c.Preview, colour.SRGB, mask)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if math.Abs(de.EV-med.EV) < 0.03 || score(de.EV) >= score(med.EV) || de.Consistent != med.Consistent || de.Cells != med.Cells {
		t.Errorf("median %v (ΔE %.3f), ΔE-optimal %v (ΔE %.3f)", med, score(med.EV), de, score(de.EV))
	}
}

// TestAnchorExposureDeltaEScoresShadows: the exposure search scores the
// whole picture (every cell unclipped in the raw and above the noise),
// not only the mid-tones the median uses: a preview whose mid-tones
// match at 0 EV but whose shadows (seven eighths of the cells, under
// the mid-tone range in the preview) were rendered 0.6 EV brighter
// pulls the ΔE-optimal EV up from the median's 0, while a raw-clipped
// cell still does not count.
func TestAnchorExposureDeltaEScoresShadows(t *testing.T) {
	gw, gh := 64, 64
	n := gw * gh
	c := Cells{Scene: Image{W: gw, H: gh, Pix: make([]float32, 3*n)}, Preview: Image{W: gw, H: gh, Pix: make([]float32, 3*n)}, Clipped: make([]float32, n), Lum: colour.SRGB.ToXYZ[1]}
	for k := range n {
		x, ev := 0.08+0.2*float64(k%64)/64, 0.0 // mid-tones, matching at 0 EV
		if k%8 != 0 {
			x, ev = 0.01+0.01*float64(k%64)/64, 0.6 // shadows, rendered brighter
		}
		for i, tint := range [3]float64{1, 0.9, 0.8} {
			c.Scene.Pix[3*k+i] = float32(x * tint)
		}
		g := math.Exp2(ev)
		s := c.Scene.cell(k)
		p := RGBTone(DefaultCurve, [3]float64{s[0] * g, s[1] * g, s[2] * g})
		for i := range 3 {
			c.Preview.Pix[3*k+i] = float32(p[i])
		}
	}
	med, err := AnchorExposure(c, DefaultCurve, nil)
	if err != nil {
		t.Fatal(err)
	}
	de, err := AnchorExposureDeltaE(c, DefaultCurve, colour.SRGB, nil)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(med.EV) > 0.02 || de.EV < 0.2 || de.EV > 0.6+1e-9 {
		t.Errorf("median %v, ΔE-optimal %v: want the median at 0 and the ΔE optimum pulled toward the shadows' +0.6", med, de)
	}
	// Clipped in the raw, the shadows no longer count: back to 0 EV.
	for k := range n {
		if k%8 != 0 {
			c.Clipped[k] = 1
		}
	}
	de, err = AnchorExposureDeltaE(c, DefaultCurve, colour.SRGB, nil)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(de.EV) > 0.05 {
		t.Errorf("with the shadows clipped in the raw: ΔE-optimal %v, want 0", de)
	}
}
