//go:build goexperiment.simd && amd64

package look

import (
	"simd/archsimd"

	"github.com/rawbatch/rawbatch/pipeline/internal/rgb8"
)

// vec is whether the CPU runs the AVX2 kernels (Go's simd/archsimd, built
// with GOEXPERIMENT=simd; the Makefile sets it).
var vec = archsimd.X86.AVX2()

// vecGamutRows is GamutRows on the first multiple of 8 pixels of pix,
// eight at a time, and returns how many pixels it did (none on a CPU
// without AVX2): every lane computes both of the scalar loop's moves
// (channels at most 1, and the shrink toward Y) and keeps the one the
// scalar loop takes, or white where Y ≥ 1; the operations are the scalar
// loop's, in its order, no fused multiply-adds, so the values are the
// same bit for bit (TestGamutRowsVector). The constants are made before
// the loop (a float broadcast is an SSE move, which stalls after AVX
// code on some CPUs), and the vector registers' upper halves are cleared
// before it returns.
func vecGamutRows(pix []float32, lum [3]float32) int {
	if !vec {
		return 0
	}
	n := len(pix) / 3 &^ 7
	l0, l1, l2 := archsimd.BroadcastFloat32x8(lum[0]), archsimd.BroadcastFloat32x8(lum[1]), archsimd.BroadcastFloat32x8(lum[2])
	zero, one := archsimd.BroadcastFloat32x8(0), archsimd.BroadcastFloat32x8(1)
	for x := 0; x < n; x += 8 {
		p := (*[24]float32)(pix[3*x : 3*x+24])
		r, g, b := rgb8.Split(p)
		// !(c > 0) → 0 (NaN too).
		r, g, b = r.Merge(zero, r.Greater(zero)), g.Merge(zero, g.Greater(zero)), b.Merge(zero, b.Greater(zero))
		y := l0.Mul(r).Add(l1.Mul(g)).Add(l2.Mul(b))
		// The shrink factor t where a channel is above 1 (the others'
		// lanes compute it too, unused), then each channel's move:
		// y + (c − y) where none is above 1, y + t·(c − y) otherwise.
		inside := r.LessEqual(one).And(g.LessEqual(one)).And(b.LessEqual(one))
		t := one.Sub(y).Div(r.Max(g).Max(b).Sub(y))
		white := y.GreaterEqual(one)
		rgb8.Join(gamutMove(r, y, t, one, inside, white), gamutMove(g, y, t, one, inside, white), gamutMove(b, y, t, one, inside, white), p)
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// gamutMove is a channel c's value: white (1) where white, else min(1,
// y + (c − y)) where inside, min(1, y + t·(c − y)) otherwise. The min's
// operands are in the order that keeps a NaN, as Go's min does.
func gamutMove(c, y, t, one archsimd.Float32x8, inside, white archsimd.Mask32x8) archsimd.Float32x8 {
	d := c.Sub(y)
	return one.Merge(one.Min(y.Add(d).Merge(y.Add(t.Mul(d)), inside)), white)
}
