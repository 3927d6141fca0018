package colour

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rawbatch/rawbatch/internal/testtool"
)

// TestLinear16: QuantiseLinear16 and DequantiseLinear16 give a plain
// loop's codes and values for every length up to 40 (the vector loop's
// groups of eight and the tail) of random values, negatives, values past
// the top code, NaN, ±Inf, and values at a half code.
func TestLinear16(t *testing.T) {
	testtool.NeedVector(t, vec)
	rng := rand.New(rand.NewPCG(9, 10))
	const inv = 65535 / 1.5
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), -0.0, -1e-9, 1.5, 1.6, 0.5 / inv, 1.5 / inv, 65534.5 / inv}
	for n := 0; n <= 40; n++ {
		src := make([]float32, n)
		for i := range src {
			src[i] = rng.Float32()*1.8 - 0.1
			if rng.IntN(3) == 0 {
				src[i] = special[rng.IntN(len(special))]
			}
		}
		got := make([]uint16, n)
		QuantiseLinear16(got, src, inv)
		for i, v := range src {
			x := v*inv + 0.5
			var want uint16
			switch {
			case !(x >= 0):
			case x > 65535:
				want = 65535
			default:
				want = uint16(int32(x))
			}
			if got[i] != want {
				t.Fatalf("length %d, value %d (%v): code %d, want %d", n, i, v, got[i], want)
			}
		}
		back := make([]float32, n)
		DequantiseLinear16(back, got, 1/inv)
		for i, c := range got {
			if want := float32(c) * (1 / inv); back[i] != want {
				t.Fatalf("length %d, code %d: %v, want %v", n, c, back[i], want)
			}
		}
	}
}

// BenchmarkLinear16 stores and reads back one 6000-pixel row of three
// channels (the two-pass stream's stored rows: put16 and row16).
func BenchmarkLinear16(b *testing.B) {
	src := make([]float32, 3*6000)
	for i := range src {
		src[i] = float32(i%997) / 997
	}
	codes, back := make([]uint16, len(src)), make([]float32, len(src))
	for b.Loop() {
		QuantiseLinear16(codes, src, 40000)
		DequantiseLinear16(back, codes, 1.0/40000)
	}
}
