package lens

import (
	"math"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/dngopcode"
)

// plausibleAll, checkGainsN's first look, agrees with
// dngopcode.PlausibleGain on every kind of gain, the edges included.
func TestPlausibleAll(t *testing.T) {
	for _, g := range []float32{1, 0.5, 16, math.Nextafter32(16, 17), 17, 0, float32(math.Copysign(0, -1)), -1,
		float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), math.SmallestNonzeroFloat32} {
		want := dngopcode.PlausibleGain(float64(g)) == ""
		if got := plausibleAll([]float32{1, g, 2}); got != want {
			t.Errorf("gain %v: plausibleAll %v, PlausibleGain plausible %v", g, got, want)
		}
	}
}
