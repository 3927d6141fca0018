package look

import (
	"math"
	"math/rand"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/colour"
)

func hueDeg(l colour.Lab) float64 { return math.Atan2(l[2], l[1]) * 180 / math.Pi }

func hueDiff(a, b float64) float64 {
	d := math.Mod(math.Abs(a-b), 360)
	return min(d, 360-d)
}

// xyHue is the hue angle of a linear sRGB colour in the CIE xy
// chromaticity diagram about the D65 white (its dominant wavelength's
// direction), in degrees.
func xyHue(rgb [3]float64) float64 {
	xyz := colour.SRGB.ToXYZ.Apply(rgb)
	s := xyz[0] + xyz[1] + xyz[2]
	return math.Atan2(xyz[1]/s-0.3290, xyz[0]/s-0.3127) * 180 / math.Pi
}

// TestCompressGamut: ProPhoto colours brought into sRGB stay in the cube,
// keep luminance and their hue angle in CIE xy about white (exactly, to
// 1e-6°: mixing with the neutral of equal luminance moves along the line
// to the white point), the CIELAB hue shifts less than a per-channel
// clip's, and in-gamut colours are returned exactly.
func TestCompressGamut(t *testing.T) {
	m := colour.ConvertMatrix(colour.ProPhoto, colour.SRGB)
	lum := colour.SRGB.ToXYZ[1]
	rng := rand.New(rand.NewSource(1))
	var in, out, worstClip, worst float64
	for range 20000 {
		p := [3]float64{rng.Float64(), rng.Float64(), rng.Float64()}
		p = [3]float64{p[0] * 0.6, p[1] * 0.6, p[2] * 0.6}
		o := m.Apply(p)
		got := CompressGamut(m, lum, p)
		y := luminance(o, lum)
		inside := min(o[0], o[1], o[2]) >= 0 && max(o[0], o[1], o[2]) <= 1
		if inside {
			in++
			if got != o {
				t.Fatalf("in-gamut %v changed to %v", o, got)
			}
			continue
		}
		out++
		for _, c := range got {
			if c < 0 || c > 1 {
				t.Fatalf("%v → %v outside the cube", o, got)
			}
		}
		if y <= 0 || y >= 1 {
			continue
		}
		if math.Abs(luminance(got, lum)-y) > 1e-9 {
			t.Fatalf("luminance %g became %g", y, luminance(got, lum))
		}
		if c := math.Hypot(colour.SRGB.LinearToLab(got)[1], colour.SRGB.LinearToLab(got)[2]); c < 5 {
			continue // near-neutral result: hue undefined
		}
		if d := hueDiff(xyHue(o), xyHue(got)); d > 1e-6 {
			t.Fatalf("%v → %v: xy hue moved by %g°", o, got, d)
		}
		h0 := hueDeg(colour.SRGB.LinearToLab(o))
		worst = max(worst, hueDiff(h0, hueDeg(colour.SRGB.LinearToLab(got))))
		worstClip = max(worstClip, hueDiff(h0, hueDeg(colour.SRGB.LinearToLab(clampCube(o)))))
	}
	t.Logf("%v in gamut, %v out; worst CIELAB hue shift %.2f° (per-channel clip: %.2f°)", in, out, worst, worstClip)
	if in == 0 || out == 0 {
		t.Fatal("the sample does not exercise both cases")
	}
	if worst >= worstClip/2 {
		t.Fatalf("worst CIELAB hue shift %.2f°, want under half the clip's %.2f°", worst, worstClip)
	}
}
