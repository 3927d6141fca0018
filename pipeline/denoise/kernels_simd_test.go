//go:build goexperiment.simd && amd64

package denoise

import (
	"math"
	"simd/archsimd"
	"testing"

	"github.com/rawbatch/rawbatch/internal/testtool"
)

// TestVectorStabSpecials: stab8 and unstab8 (through pos8) give stab and
// unstab bit for bit on the values where a max-like sequence may differ:
// ±0, NaNs of either sign, the infinities, the smallest subnormals and
// numbers on both sides of 0 and of ε.
func TestVectorStabSpecials(t *testing.T) {
	testtool.NeedVector(t, vec)
	if !vec {
		return
	}
	xs := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), math.Float32frombits(0xffc00000),
		float32(math.Inf(1)), float32(math.Inf(-1)), math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
		1, -1, Epsilon, -Epsilon, float32(math.Sqrt(Epsilon)), -float32(math.Sqrt(Epsilon)), 0.5, -0.5}
	for len(xs)%8 != 0 {
		xs = append(xs, 0.25)
	}
	check := func(what string, x, got, want float32) {
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Errorf("%s(%v): vector %x, scalar %x", what, x, math.Float32bits(got), math.Float32bits(want))
		}
	}
	for i := 0; i < len(xs); i += 8 {
		in := (*[8]float32)(xs[i : i+8])
		var s, u [8]float32
		zero, eps := zero8(), archsimd.BroadcastFloat32x8(Epsilon)
		stab8(archsimd.LoadFloat32x8(in), zero, eps).Store(&s)
		unstab8(archsimd.LoadFloat32x8(in), zero, eps).Store(&u)
		archsimd.ClearAVXUpperBits()
		for k, x := range in {
			check("stab", x, s[k], stab(x))
			check("unstab", x, u[k], unstab(x))
		}
	}
}
