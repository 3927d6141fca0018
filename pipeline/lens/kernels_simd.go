//go:build goexperiment.simd && amd64

package lens

import (
	"simd/archsimd"

	"github.com/rawbatch/rawbatch/pipeline/internal/rgb8"
)

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

// vecGains is devignetteRow's loop of one gain a pixel, upright: the first
// 8k pixels of row (interleaved RGB, 3 values a pixel) times their gain
// a + t·(b − a) (a, b the node rows' gains), the same operations; it
// returns how many pixels it did.
func vecGains(row, a, b []float32, t float32) int {
	if !vec {
		return 0
	}
	n := len(a) &^ 7
	row, b = row[:3*n], b[:n]
	T := archsimd.BroadcastFloat32x8(t)
	for x := 0; x < n; x += 8 {
		ga := archsimd.LoadFloat32x8((*[8]float32)(a[x : x+8]))
		g0, g1, g2 := rgb8.Spread(ga.Add(T.Mul(archsimd.LoadFloat32x8((*[8]float32)(b[x : x+8])).Sub(ga))))
		p := (*[24]float32)(row[3*x : 3*x+24])
		archsimd.LoadFloat32x8((*[8]float32)(p[0:8])).Mul(g0).Store((*[8]float32)(p[0:8]))
		archsimd.LoadFloat32x8((*[8]float32)(p[8:16])).Mul(g1).Store((*[8]float32)(p[8:16]))
		archsimd.LoadFloat32x8((*[8]float32)(p[16:24])).Mul(g2).Store((*[8]float32)(p[16:24]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}
