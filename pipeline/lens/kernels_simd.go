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

// vecRow is Nodes.row's loop over its first n intervals of exactly eight
// pixels (Step = 8: interval k is pixels 8k to 8k+7): px = ax + t·dx,
// py = ay + t·dy with node k's ax, ay, dx, dy (line[4k:4k+4], broadcast
// by permutations of the vector loaded from there: a scalar float load
// between the vector instructions would be an SSE one) and each pixel's
// fraction t; the operations of the scalar loop (multiply, then add), so
// the same values. It returns how many pixels it did (8n; none on a CPU
// without AVX2). line holds at least 4k+8 floats for each k < n.
func vecRow(line, t, px, py []float32, n int) int {
	if !vec || Step != 8 || n <= 0 || 4*n+4 > len(line) || 8*n > len(t) || 8*n > len(px) || 8*n > len(py) {
		return 0
	}
	i0 := archsimd.BroadcastInt32x8(0).AsUint32x8()
	i1 := archsimd.BroadcastInt32x8(1).AsUint32x8()
	i2 := archsimd.BroadcastInt32x8(2).AsUint32x8()
	i3 := archsimd.BroadcastInt32x8(3).AsUint32x8()
	for k := range n {
		node := archsimd.LoadFloat32x8((*[8]float32)(line[4*k : 4*k+8]))
		tv := archsimd.LoadFloat32x8((*[8]float32)(t[8*k : 8*k+8]))
		node.Permute(i0).Add(tv.Mul(node.Permute(i2))).Store((*[8]float32)(px[8*k : 8*k+8]))
		node.Permute(i1).Add(tv.Mul(node.Permute(i3))).Store((*[8]float32)(py[8*k : 8*k+8]))
	}
	archsimd.ClearAVXUpperBits()
	return 8 * n
}
