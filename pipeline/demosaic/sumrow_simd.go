//go:build goexperiment.simd && amd64

package demosaic

import "simd/archsimd"

// vec is whether the CPU runs the AVX2 kernel (Go's simd/archsimd, built
// with GOEXPERIMENT=simd; the Makefile sets it).
var vec = archsimd.X86.AVX2()

// vecSumRow is SumRow's loop over the first multiple of 16 of len(row):
// sixteen samples clamped and compared at once with their columns'
// parities' bounds in alternate lanes, the sums widened to 32 bits eight
// at a time. Integer operations: the results are the scalar loop's. It
// returns how many leading columns it did (none on a CPU without AVX2).
func vecSumRow(row []uint16, lo, hi, clipAt [2]uint16, sum []uint32, clipped []uint16) int {
	if !vec {
		return 0
	}
	n := len(row) &^ 15
	var l, h, c [16]uint16
	for i := range 16 {
		l[i], h[i], c[i] = lo[i&1], hi[i&1], clipAt[i&1]
	}
	L, H, C := archsimd.LoadUint16x16(&l), archsimd.LoadUint16x16(&h), archsimd.LoadUint16x16(&c)
	for x := 0; x < n; x += 16 {
		v := archsimd.LoadUint16x16Slice(row[x : x+16]).Max(L).Min(H)
		// A true lane is all ones (−1): subtracting it adds one.
		cl := archsimd.LoadUint16x16Slice(clipped[x : x+16])
		cl = cl.Sub(v.GreaterEqual(C).ToInt16x16().AsUint16x16())
		cl.StoreSlice(clipped[x : x+16])
		s0 := archsimd.LoadUint32x8Slice(sum[x : x+8]).Add(v.GetLo().ExtendToUint32())
		s0.StoreSlice(sum[x : x+8])
		s1 := archsimd.LoadUint32x8Slice(sum[x+8 : x+16]).Add(v.GetHi().ExtendToUint32())
		s1.StoreSlice(sum[x+8 : x+16])
	}
	archsimd.ClearAVXUpperBits()
	return n
}
