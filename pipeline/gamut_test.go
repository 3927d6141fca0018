package pipeline

import (
	"math/rand/v2"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/look"
)

// TestGamutInto: the output-space stage's gamut step clips negative
// channels and then is look.CompressGamut (desaturation toward the
// pixel's luminance) within float32 rounding: colours brighter than white
// in a channel land inside the cube with their luminance and their hue,
// in-gamut ones are unchanged.
func TestGamutInto(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	lum := colour.SRGB.ToXYZ[1]
	lf := [3]float32{float32(lum[0]), float32(lum[1]), float32(lum[2])}
	id := colour.Mat3{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
	for range 10000 {
		in := [3]float64{r.Float64()*1.6 - 0.3, r.Float64()*1.6 - 0.3, r.Float64()*1.6 - 0.3}
		want := look.CompressGamut(id, lum, [3]float64{max(in[0], 0), max(in[1], 0), max(in[2], 0)})
		got := []float32{float32(in[0]), float32(in[1]), float32(in[2])}
		look.GamutPixel(got, lf)
		for c := range 3 {
			if d := float64(got[c]) - want[c]; d > 1e-5 || d < -1e-5 {
				t.Fatalf("%v → %v, want %v", in, got, want)
			}
		}
	}
}
