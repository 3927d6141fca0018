//go:build goexperiment.simd && amd64

package lens

import "simd/archsimd"

// vec is whether the CPU runs the AVX2 kernel below (Go's simd/archsimd,
// built with GOEXPERIMENT=simd; the Makefile sets it).
var vec = archsimd.X86.AVX2()

// vecLerp8 is Nodes.row's loop on an interval of exactly eight pixels:
// px[n] = ax + t[n]·dx, py[n] = ay + t[n]·dy, the same operations
// (multiply, then add: no fused multiply-add), so the same values. It
// reports whether it did them (not on a CPU without AVX2). It clears the
// vector registers' upper halves before it returns (Go's scalar float
// code is SSE, which stalls after AVX code on some CPUs until they are).
func vecLerp8(t, px, py []float32, ax, ay, dx, dy float32) bool {
	if !vec {
		return false
	}
	tv := archsimd.LoadFloat32x8((*[8]float32)(t[:8]))
	archsimd.BroadcastFloat32x8(ax).Add(tv.Mul(archsimd.BroadcastFloat32x8(dx))).Store((*[8]float32)(px[:8]))
	archsimd.BroadcastFloat32x8(ay).Add(tv.Mul(archsimd.BroadcastFloat32x8(dy))).Store((*[8]float32)(py[:8]))
	archsimd.ClearAVXUpperBits()
	return true
}
