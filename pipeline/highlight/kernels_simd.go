//go:build goexperiment.simd && amd64

package highlight

import (
	"simd/archsimd"
	"unsafe"

	"github.com/rawbatch/rawbatch/pipeline/internal/rgb8"
)

// Reconstructor's per-pixel loops eight values or pixels at a time with
// AVX2 (Go's simd/archsimd, built with GOEXPERIMENT=simd; the Makefile
// sets it). Each kernel gives what its scalar loop gives, bit for bit
// (TestVectorKernels): the integer sums are exact in any order, and the
// float operations are the scalar loop's, in its order, without fused
// multiply-adds. It returns how far it got, and the scalar loop does the
// rest; on a CPU without AVX2 it does nothing. Constants are made before
// the loops (a float broadcast is an SSE move, which stalls after AVX
// code on some CPUs), and the vector registers' upper halves are cleared
// before returning, as Go's scalar float code is SSE.

// vec is whether the CPU runs the AVX2 kernels.
var vec = archsimd.X86.AVX2()

// The kernels load a block's 3·blockW floats as six vectors.
var _ [3*blockW - 48]struct{} = [0]struct{}{}

// vecFlag is flag's loop over the blocks of one row p (3·w floats) from
// block b on, setting block b's bit of bits when one of its floats is
// above lo. It does the blocks of a full blockW pixels and returns the
// first block it did not do: the row's short last block, or one with a
// float above lo and a NaN, whose result depends on which pixel holds
// the NaN (a pixel with a NaN channel has a NaN peak, never above lo).
// Without NaN, some pixel's peak is above lo exactly when some float is.
func vecFlag(p []float32, bits []uint64, b int, lo float32) int {
	full := len(p) / (3 * blockW)
	if !vec || b >= full {
		return b
	}
	lv := archsimd.BroadcastFloat32x8(lo)
	base := unsafe.Pointer(unsafe.SliceData(p))
	for ; b < full; b++ {
		q := unsafe.Add(base, 4*3*blockW*b)
		v0, v1, v2 := load8(q, 0), load8(q, 32), load8(q, 64)
		v3, v4, v5 := load8(q, 96), load8(q, 128), load8(q, 160)
		above := v0.Greater(lv).Or(v1.Greater(lv)).Or(v2.Greater(lv)).Or(v3.Greater(lv)).Or(v4.Greater(lv)).Or(v5.Greater(lv))
		if above.ToBits() == 0 {
			continue
		}
		nan := v0.IsNaN().Or(v1.IsNaN()).Or(v2.IsNaN()).Or(v3.IsNaN()).Or(v4.IsNaN()).Or(v5.IsNaN())
		if nan.ToBits() != 0 {
			break
		}
		bits[b/64] |= 1 << (b % 64)
	}
	archsimd.ClearAVXUpperBits()
	return b
}

// load8 is the 8 float32 at byte offset i from p.
func load8(p unsafe.Pointer, i int) archsimd.Float32x8 {
	return archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, i)))
}

// vecFeatures is features' loop over the first multiple of 8 of len(f)
// pixels of p (3 floats each), eight pixels at a time. A pixel is bright
// (chromaticity and both counts) when all its channels are below thr
// (ordered compares: false for NaN, which the scalar loop's NaN peak
// also excludes) and its peak is above minChromaLevel; unclipped (the
// count of unclipped pixels) when none is at or above thr. It returns
// how many pixels it did.
func vecFeatures(p []float32, f []feature, thr float32) int {
	n := len(f) &^ 7
	if !vec || n == 0 {
		return 0
	}
	p = p[:3*n]
	tv, minv := archsimd.BroadcastFloat32x8(thr), archsimd.BroadcastFloat32x8(minChromaLevel)
	one := archsimd.BroadcastFloat32x8(1)
	zero, fix := one.Sub(one), archsimd.BroadcastFloat32x8(fixOne)
	count := archsimd.BroadcastInt32x8(countUnclipped)
	src, dst := unsafe.Pointer(unsafe.SliceData(p)), unsafe.Pointer(unsafe.SliceData(f))
	for x := 0; x < n; x += 8 {
		r, g, b := rgb8.Split((*[24]float32)(unsafe.Add(src, 4*3*x)))
		clip := r.GreaterEqual(tv).Or(g.GreaterEqual(tv)).Or(b.GreaterEqual(tv))
		m := r.Max(g).Max(b)
		bright := r.Less(tv).And(g.Less(tv)).And(b.Less(tv)).And(m.Greater(minv))
		c0 := r.Max(zero).Div(m).Mul(fix).ConvertToInt32().Masked(bright)
		c1 := g.Max(zero).Div(m).Mul(fix).ConvertToInt32().Masked(bright)
		c2 := b.Max(zero).Div(m).Mul(fix).ConvertToInt32().Masked(bright)
		// A true mask lane is −1: subtracting it counts the bright pixel.
		c3 := count.AndNot(clip.ToInt32x8()).Sub(bright.ToInt32x8())
		storeFeatures(unsafe.Add(dst, 16*x), c0, c1, c2, c3)
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// storeFeatures stores the features of eight pixels, value k of pixel i
// at lane i of ck, as eight features (32 int32, pixel by pixel) at p.
func storeFeatures(p unsafe.Pointer, c0, c1, c2, c3 archsimd.Int32x8) {
	// Within each 128-bit half (pixels 0–3 and 4–7): pairs of values,
	// then whole pixels, pixel j of each half in pj.
	t0, t1 := c0.InterleaveLoGrouped(c1).AsInt64x4(), c0.InterleaveHiGrouped(c1).AsInt64x4()
	t2, t3 := c2.InterleaveLoGrouped(c3).AsInt64x4(), c2.InterleaveHiGrouped(c3).AsInt64x4()
	p0, p1 := t0.InterleaveLoGrouped(t2), t0.InterleaveHiGrouped(t2)
	p2, p3 := t1.InterleaveLoGrouped(t3), t1.InterleaveHiGrouped(t3)
	p0.Select128FromPair(0, 2, p1).Store((*[4]int64)(p))
	p2.Select128FromPair(0, 2, p3).Store((*[4]int64)(unsafe.Add(p, 32)))
	p0.Select128FromPair(1, 3, p1).Store((*[4]int64)(unsafe.Add(p, 64)))
	p2.Select128FromPair(1, 3, p3).Store((*[4]int64)(unsafe.Add(p, 96)))
}

// vecAddFeatures is addFeatures, a pixel's four sums at a time; it
// returns len(col).
func vecAddFeatures(col []colSum, f []feature) int {
	if !vec {
		return 0
	}
	f = f[:len(col)]
	for x := range col {
		c := (*[4]int64)(&col[x])
		archsimd.LoadInt64x4(c).Add(archsimd.LoadInt32x4((*[4]int32)(&f[x])).ExtendToInt64()).Store(c)
	}
	archsimd.ClearAVXUpperBits()
	return len(col)
}

// vecSubFeatures is subFeatures, a pixel's four sums at a time; it
// returns len(col).
func vecSubFeatures(col []colSum, f []feature) int {
	if !vec {
		return 0
	}
	f = f[:len(col)]
	for x := range col {
		c := (*[4]int64)(&col[x])
		archsimd.LoadInt64x4(c).Sub(archsimd.LoadInt32x4((*[4]int32)(&f[x])).ExtendToInt64()).Store(c)
	}
	archsimd.ClearAVXUpperBits()
	return len(col)
}
