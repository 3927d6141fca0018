//go:build goexperiment.simd && amd64

package colour

import "simd/archsimd"

// vec is whether the CPU runs the AVX2 kernels (Go's simd/archsimd, built
// with GOEXPERIMENT=simd; the Makefile sets it). Each does its scalar
// loop's operations (no fused multiply-add), returns how many leading
// values it did, and clears the vector registers' upper halves before it
// returns (Go's scalar float code is SSE, which stalls after AVX code on
// some CPUs until they are).
var vec = archsimd.X86.AVX2()

// vecQuantiseLinear16 is QuantiseLinear16's loop over the first multiple
// of 8 values: x·inv + 0.5, NaN and below 0 to 0 (a compare, false for
// NaN), above 65535 to 65535, truncated, packed to 16 bits.
func vecQuantiseLinear16(dst []uint16, src []float32, inv float32) int {
	if !vec {
		return 0
	}
	n := len(src) &^ 7
	dst = dst[:n]
	inv8, half := archsimd.BroadcastFloat32x8(inv), archsimd.BroadcastFloat32x8(0.5)
	zero, top := archsimd.BroadcastFloat32x8(0), archsimd.BroadcastFloat32x8(65535)
	for i := 0; i < n; i += 8 {
		x := archsimd.LoadFloat32x8((*[8]float32)(src[i : i+8])).Mul(inv8).Add(half)
		x = x.Merge(zero, x.GreaterEqual(zero)).Min(top)
		c := x.ConvertToInt32()
		c.GetLo().SaturateToUint16Concat(c.GetHi()).StoreSlice(dst[i : i+8])
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// vecDequantiseLinear16 is DequantiseLinear16's loop over the first
// multiple of 8 values.
func vecDequantiseLinear16(dst []float32, src []uint16, scale float32) int {
	if !vec {
		return 0
	}
	n := len(src) &^ 7
	dst = dst[:n]
	s := archsimd.BroadcastFloat32x8(scale)
	for i := 0; i < n; i += 8 {
		v := archsimd.LoadUint16x8Slice(src[i : i+8]).ExtendToUint32().AsInt32x8().ConvertToFloat32()
		v.Mul(s).Store((*[8]float32)(dst[i : i+8]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}
