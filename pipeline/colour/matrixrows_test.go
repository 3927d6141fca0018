package colour

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rawbatch/rawbatch/internal/testtool"
)

// TestMulRows: MulRows, then ScaleRows, give a plain loop's values bit for bit on rows of
// every length up to 40 pixels (eight at a time and the tail), with
// negatives, zeros, infinities and NaN among the values.
func TestMulRows(t *testing.T) {
	testtool.NeedVector(t, vec)
	rng := rand.New(rand.NewPCG(15, 16))
	m := [3][3]float32{{1.7, -0.5, -0.2}, {-0.3, 1.6, -0.3}, {0.05, -0.6, 1.55}}
	special := []float32{0, float32(math.Inf(1)), float32(math.NaN()), -1}
	for n := 0; n <= 40; n++ {
		px := make([]float32, 3*n)
		for i := range px {
			px[i] = rng.Float32() * 2
			if rng.IntN(8) == 0 {
				px[i] = special[rng.IntN(len(special))]
			}
		}
		want := append([]float32(nil), px...)
		for i := 0; i+2 < len(want); i += 3 {
			r, g, b := want[i], want[i+1], want[i+2]
			want[i] = m[0][0]*r + m[0][1]*g + m[0][2]*b
			want[i+1] = m[1][0]*r + m[1][1]*g + m[1][2]*b
			want[i+2] = m[2][0]*r + m[2][1]*g + m[2][2]*b
		}
		MulRows(&m, px)
		// ScaleRows after it, on both.
		for i := range want {
			want[i] *= 0.7
		}
		ScaleRows(px, 0.7)
		for i := range px {
			if math.Float32bits(px[i]) != math.Float32bits(want[i]) && !(px[i] != px[i] && want[i] != want[i]) {
				t.Fatalf("length %d, value %d: %v, want %v", n, i, px[i], want[i])
			}
		}
	}
}
