package look

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rawbatch/rawbatch/internal/testtool"
)

// TestGamutRowsVector: GamutRows (eight pixels at a time where the build
// allows) gives the one-pixel-at-a-time loop's values bit for bit, for
// every length up to 40 pixels, on pixels inside the cube, above white
// in one or more channels, with Y at or above 1, negative, NaN and
// infinite channels.
func TestGamutRowsVector(t *testing.T) {
	testtool.NeedVector(t, vec)
	rng := rand.New(rand.NewPCG(17, 18))
	lum := [3]float32{0.2126, 0.7152, 0.0722}
	special := []float32{0, -0.3, 1, 1.0000001, 3, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e30}
	for n := 0; n <= 40; n++ {
		pix := make([]float32, 3*n)
		for i := range pix {
			pix[i] = rng.Float32() * 1.3
			if rng.IntN(6) == 0 {
				pix[i] = special[rng.IntN(len(special))]
			}
		}
		want := append([]float32(nil), pix...)
		gamutRowsScalar(want, lum)
		GamutRows(pix, lum)
		for i := range pix {
			if math.Float32bits(pix[i]) != math.Float32bits(want[i]) {
				t.Fatalf("length %d, pixel %d, channel %d: %v, want %v", n, i/3, i%3, pix[i], want[i])
			}
		}
	}
}

// BenchmarkGamutRows brings one 6000-pixel row of varied colours into the
// cube.
func BenchmarkGamutRows(b *testing.B) {
	lum := [3]float32{0.2126, 0.7152, 0.0722}
	src := make([]float32, 3*6000)
	for i := range src {
		src[i] = float32((i*7919)%1000) / 800
	}
	pix := make([]float32, len(src))
	for b.Loop() {
		copy(pix, src)
		GamutRows(pix, lum)
	}
}
