package pipeline

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/look"
)

// TestApplyToneIsRGBTone: the tone stage's table-driven loop gives
// look.RGBTone (the DNG "RGB tone" method: hue kept) within 1e-4 on random
// colours, including values below 0 and above the white point.
func TestApplyToneIsRGBTone(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	img := Image{W: 1000, H: 1, Pix: make([]float32, 3000)}
	for i := range img.Pix {
		img.Pix[i] = float32(r.Float64()*1.4 - 0.1)
	}
	in := slices.Clone(img.Pix)
	applyTone(img, look.DefaultCurve)
	for i := 0; i < len(in); i += 3 {
		want := look.RGBTone(look.DefaultCurve, [3]float64{float64(in[i]), float64(in[i+1]), float64(in[i+2])})
		for c := range 3 {
			if d := math.Abs(float64(img.Pix[i+c]) - want[c]); d > 1e-4 {
				t.Fatalf("%v → %v, want %v", in[i:i+3], img.Pix[i:i+3], want)
			}
		}
	}
}

// TestToneNonFinite: toneRows keeps its promise of [0, 1] for pixels with
// NaN and infinite channels (two infinite channels made ∞/∞ = NaN before).
func TestToneNonFinite(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	px := [][3]float32{
		{inf, inf, 0.2}, {inf, 0.5, 0.1}, {-inf, inf, 0.3}, {-inf, -inf, 0.5},
		{nan, inf, 0.1}, {nan, nan, nan}, {inf, inf, inf}, {0.2, -inf, 0.4},
	}
	lut := look.ToneLUT(look.DefaultCurve)
	for _, p := range px {
		got := p
		look.ToneRows(lut, got[:])
		for c, v := range got {
			if !(v >= 0 && v <= 1) {
				t.Errorf("%v → %v: channel %d outside [0, 1]", p, got, c)
			}
		}
	}
}

// TestProfileToneCurve: the header reads a DNG's ProfileToneCurve (the
// Adobe SDK sample carries the identity, 0 0 1 1), and the default tone
// then applies it instead of the default curve: the output equals --tone
// none's.
func TestProfileToneCurve(t *testing.T) {
	in := filepath.Join(testdata, "raw", "adobesdk_05_PGTM2_unsigned8.dng")
	hdr, err := ReadHeader(in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(hdr.ProfileToneCurve, []float32{0, 0, 1, 1}) {
		t.Fatalf("ProfileToneCurve %v", hdr.ProfileToneCurve)
	}
	dir := t.TempDir()
	s := referenceSettings()
	s.ExposureAnchor = AnchorNone
	none, _ := convert(t, in, t.TempDir(), s)
	s.Tone = ToneDefault
	prof, _ := convert(t, in, dir, s)
	if mean, p99 := deltaEStats(t, decodeImage(t, none), decodeImage(t, prof), 0); mean > 0.05 || p99 > 0.2 {
		t.Errorf("identity ProfileToneCurve vs --tone none: mean ΔE2000 %.3f, p99 %.3f", mean, p99)
	}
}
