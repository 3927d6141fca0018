//go:build goexperiment.simd && amd64

package demosaic

import (
	"simd/archsimd"
	"unsafe"

	"github.com/rawbatch/rawbatch/pipeline/internal/rgb8"
)

// halfOrder puts back in order the lanes of an even (odd) split made by
// SelectFromPairGrouped over two vectors: it leaves the columns in the
// order 0, 1, 4, 5, 2, 3, 6, 7.
var halfOrder = [8]uint32{0, 1, 4, 5, 2, 3, 6, 7}

// vecHalf is Half's loop over a pair of normalised CFA rows r0, r1 (the
// block's top and bottom rows, W values each) into dst (3·W/2 values,
// interleaved), eight output pixels at a time for as long as eight fit:
// red is the phase red, green the mean of phases g0 and g1, blue the
// phase blue (a phase p is row p>>1, column parity p&1 of the block).
// The arithmetic is the scalar loop's ((a + b)/2 is (a + b)·0.5 exactly),
// so the values are the same. It returns how many pixels it did (none on
// a CPU without AVX2, or with vecHalfOn off).
func vecHalf(r0, r1, dst []float32, red, g0, g1, blue int) int {
	n := min(len(r0), len(r1), 2*(len(dst)/3)) / 16 * 8
	if !vecHalfOn || n == 0 {
		return 0
	}
	p0, p1 := unsafe.Pointer(unsafe.SliceData(r0)), unsafe.Pointer(unsafe.SliceData(r1))
	pd := unsafe.Pointer(unsafe.SliceData(dst))
	order := archsimd.LoadUint32x8(&halfOrder)
	half := archsimd.BroadcastFloat32x8(0.5)
	var ph [4]archsimd.Float32x8
	for i := 0; i < n; i += 8 {
		a0 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p0, 8*i)))
		b0 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p0, 8*i+32)))
		a1 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p1, 8*i)))
		b1 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p1, 8*i+32)))
		ph[0], ph[1] = a0.SelectFromPairGrouped(0, 2, 4, 6, b0), a0.SelectFromPairGrouped(1, 3, 5, 7, b0)
		ph[2], ph[3] = a1.SelectFromPairGrouped(0, 2, 4, 6, b1), a1.SelectFromPairGrouped(1, 3, 5, 7, b1)
		r := ph[red&3].Permute(order)
		g := ph[g0&3].Add(ph[g1&3]).Mul(half).Permute(order)
		b := ph[blue&3].Permute(order)
		rgb8.Join(r, g, b, (*[24]float32)(unsafe.Add(pd, 12*i)))
	}
	archsimd.ClearAVXUpperBits()
	return n
}
