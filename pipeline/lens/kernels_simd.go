//go:build goexperiment.simd && amd64

package lens

import (
	"simd/archsimd"
	"unsafe"

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

// vecGainsPlanar is copyRow's loop: the first 8k pixels of row
// (interleaved RGB) times their gain a + t·(b − a), written planar to r,
// g, bl (rgb8.Split), vecGains' operations, so the same values; it
// returns how many pixels it did.
func vecGainsPlanar(r, g, bl, row, a, b []float32, t float32) int {
	if !vec {
		return 0
	}
	n := len(a) &^ 7
	row, b, r, g, bl = row[:3*n], b[:n], r[:n], g[:n], bl[:n]
	T := archsimd.BroadcastFloat32x8(t)
	for x := 0; x < n; x += 8 {
		ga := archsimd.LoadFloat32x8((*[8]float32)(a[x : x+8]))
		gx := ga.Add(T.Mul(archsimd.LoadFloat32x8((*[8]float32)(b[x : x+8])).Sub(ga)))
		pr, pg, pb := rgb8.Split((*[24]float32)(row[3*x : 3*x+24]))
		pr.Mul(gx).Store((*[8]float32)(r[x : x+8]))
		pg.Mul(gx).Store((*[8]float32)(g[x : x+8]))
		pb.Mul(gx).Store((*[8]float32)(bl[x : x+8]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// vecOneGain is NodeGainsCompact's loop over a row's first 8k pixels
// (row: the three channels' gains of each pixel): each pixel's red gain
// into one while its three are equal (==, as the scalar loop compares
// them), eight pixels at a time; it returns how many pixels it took,
// stopping before the first eight with a pixel whose gains differ (none
// on a CPU without AVX2).
func vecOneGain(one, row []float32) int {
	if !vec {
		return 0
	}
	n := len(one) &^ 7
	row = row[:3*n]
	for x := 0; x < n; x += 8 {
		r, g, b := rgb8.Split((*[24]float32)(row[3*x : 3*x+24]))
		if r.Equal(g).And(r.Equal(b)).ToBits() != 0xff {
			archsimd.ClearAVXUpperBits()
			return x
		}
		r.Store((*[8]float32)(one[x : x+8]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// vecRow is Nodes.row's loop over its first n intervals of exactly eight
// pixels (Step = 8: interval k is pixels 8k to 8k+7): px = ax + t·dx,
// py = ay + t·dy with node k's ax, ay, dx, dy (lx, ly, dx, dy [k],
// broadcast by permutations of the eight nodes' vectors loaded from
// there, eight intervals at a time: a scalar float load between the
// vector instructions would be an SSE one) and each pixel's fraction t,
// i/8 for pixel i of an interval (eighths: NewNodes' tx of an interval
// of eight, exactly); the operations of the scalar loop (multiply, then
// add), so the same values. It returns how many pixels it did (8n; none
// on a CPU without AVX2). lx, ly, dx and dy hold at least n+8 floats
// each.
func vecRow(lx, ly, dx, dy, px, py []float32, n int) int {
	if !vec || Step != 8 || n <= 0 || n+8 > len(lx) || n+8 > len(ly) || n+8 > len(dx) || n+8 > len(dy) || 8*n > len(px) || 8*n > len(py) {
		return 0
	}
	tv := archsimd.LoadFloat32x8(&eighths)
	// Unchecked stores: 8n ≤ len(px), len(py).
	qx, qy := unsafe.Pointer(unsafe.SliceData(px)), unsafe.Pointer(unsafe.SliceData(py))
	for k0 := 0; k0 < n; k0 += 8 {
		ax := archsimd.LoadFloat32x8((*[8]float32)(lx[k0 : k0+8]))
		ay := archsimd.LoadFloat32x8((*[8]float32)(ly[k0 : k0+8]))
		ex := archsimd.LoadFloat32x8((*[8]float32)(dx[k0 : k0+8]))
		ey := archsimd.LoadFloat32x8((*[8]float32)(dy[k0 : k0+8]))
		ox, oy := unsafe.Add(qx, 32*k0), unsafe.Add(qy, 32*k0)
		for i := range min(8, n-k0) {
			l := archsimd.LoadInt32x8(&laneOf[i&7]).AsUint32x8()
			ax.Permute(l).Add(tv.Mul(ex.Permute(l))).Store((*[8]float32)(unsafe.Add(ox, 32*i)))
			ay.Permute(l).Add(tv.Mul(ey.Permute(l))).Store((*[8]float32)(unsafe.Add(oy, 32*i)))
		}
	}
	archsimd.ClearAVXUpperBits()
	return 8 * n
}

// eighths is each pixel's fraction of the way across an interval of
// eight: float32(i) / 8, as NewNodes computes it.
var eighths = [8]float32{0, 1. / 8, 2. / 8, 3. / 8, 4. / 8, 5. / 8, 6. / 8, 7. / 8}

// laneOf[i] is lane i in every lane: Permute's indices that broadcast it.
var laneOf = [8][8]int32{
	{0, 0, 0, 0, 0, 0, 0, 0}, {1, 1, 1, 1, 1, 1, 1, 1}, {2, 2, 2, 2, 2, 2, 2, 2}, {3, 3, 3, 3, 3, 3, 3, 3},
	{4, 4, 4, 4, 4, 4, 4, 4}, {5, 5, 5, 5, 5, 5, 5, 5}, {6, 6, 6, 6, 6, 6, 6, 6}, {7, 7, 7, 7, 7, 7, 7, 7},
}

// vecLerpRow is lerpRow's loop over the first multiple of eight of the
// nodes: l = a + t·(b − a), the scalar loop's operations (subtract,
// multiply, add), so the same values; it returns how many it did (none on
// a CPU without AVX2).
func vecLerpRow(a, b []float32, t float32, l []float32) int {
	if !vec {
		return 0
	}
	n := len(a) &^ 7
	b, l = b[:n], l[:n]
	T := archsimd.BroadcastFloat32x8(t)
	for k := 0; k < n; k += 8 {
		av := archsimd.LoadFloat32x8((*[8]float32)(a[k : k+8]))
		bv := archsimd.LoadFloat32x8((*[8]float32)(b[k : k+8]))
		av.Add(T.Mul(bv.Sub(av))).Store((*[8]float32)(l[k : k+8]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// vecDiffRow is diffRow's loop over the first multiple of eight of the
// differences d[k] = l[k+1] − l[k] (k < len(l) − 1); it returns how many
// it did (none on a CPU without AVX2).
func vecDiffRow(l, d []float32) int {
	if !vec || len(l) == 0 {
		return 0
	}
	n := (len(l) - 1) &^ 7
	d = d[:n]
	for k := 0; k < n; k += 8 {
		a := archsimd.LoadFloat32x8((*[8]float32)(l[k : k+8]))
		b := archsimd.LoadFloat32x8((*[8]float32)(l[k+1 : k+9]))
		b.Sub(a).Store((*[8]float32)(d[k : k+8]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}
