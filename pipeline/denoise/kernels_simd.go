//go:build goexperiment.simd && amd64

package denoise

import (
	"simd/archsimd"
	"unsafe"
)

// The denoise's inner loops eight pixels at a time with AVX2 (Go's
// simd/archsimd, built with GOEXPERIMENT=simd; the Makefile sets it).
// Each vector kernel does the operations of its scalar loop in the same
// order, without fused multiply-adds, so its results are the scalar
// loop's bit for bit (kernels_test.go); it returns how many leading
// elements it did, and the scalar loop does the rest. On a CPU without
// AVX2 it does none. Each clears the vector registers' upper halves
// before it returns: Go's scalar float code is SSE, which stalls after
// AVX code on some CPUs until they are cleared.

// vec is whether the CPU runs the AVX2 kernels.
var vec = archsimd.X86.AVX2()

// vecB3 is b3Combine's loop over the first multiple of 8 of len(out).
func vecB3(a0, a1, a2, a3, a4, out []float32, k0, k1, k2 float32) int {
	if !vec {
		return 0
	}
	n := len(out) &^ 7
	a0, a1, a2, a3, a4 = a0[:n], a1[:n], a2[:n], a3[:n], a4[:n]
	K0, K1, K2 := archsimd.BroadcastFloat32x8(k0), archsimd.BroadcastFloat32x8(k1), archsimd.BroadcastFloat32x8(k2)
	p0, p1, p2, p3, p4, po := at(a0), at(a1), at(a2), at(a3), at(a4), at(out)
	for i := 0; i < 4*n; i += 32 {
		v0 := archsimd.LoadFloat32x8(f8(p0, i))
		v4 := archsimd.LoadFloat32x8(f8(p4, i))
		v1 := archsimd.LoadFloat32x8(f8(p1, i))
		v3 := archsimd.LoadFloat32x8(f8(p3, i))
		v2 := archsimd.LoadFloat32x8(f8(p2, i))
		r := v0.Add(v4).Mul(K0).Add(v1.Add(v3).Mul(K1)).Add(v2.Mul(K2))
		r.Store(f8(po, i))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// at is the address of s's first element (s not empty, or never read).
func at[T any](s []T) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(s)) }

// f8 is the 8 float32 at byte offset i from p: the kernels check their
// slices' lengths once, before their loops, instead of at every load.
func f8(p unsafe.Pointer, i int) *[8]float32 { return (*[8]float32)(unsafe.Add(p, i)) }

// u8 is f8 for uint32.
func u8(p unsafe.Pointer, i int) *[8]uint32 { return (*[8]uint32)(unsafe.Add(p, i)) }

// garrote8 is garrote on eight coefficients d, squared threshold t2.
func garrote8(d, t2 archsimd.Float32x8) archsimd.Float32x8 {
	dd := d.Mul(d).Max(archsimd.BroadcastFloat32x8(1e-30))
	q := archsimd.BroadcastFloat32x8(1).Sub(t2.Div(dd))
	qi := q.AsInt32x8()
	return d.Mul(qi.AndNot(qi.ShiftAllRight(31)).AsFloat32x8())
}

// vecSum4 is sumDetails' loop of four levels over the first multiple of
// 8 of len(d0).
func vecSum4(d0, c1, c2, c3, c4 []float32, t1, t2, t3 float32) int {
	if !vec {
		return 0
	}
	n := len(d0) &^ 7
	c1, c2, c3, c4 = c1[:n], c2[:n], c3[:n], c4[:n]
	T1, T2, T3 := archsimd.BroadcastFloat32x8(t1), archsimd.BroadcastFloat32x8(t2), archsimd.BroadcastFloat32x8(t3)
	pd, p1, p2, p3, p4 := at(d0), at(c1), at(c2), at(c3), at(c4)
	for i := 0; i < 4*n; i += 32 {
		b := archsimd.LoadFloat32x8(f8(p1, i))
		e2 := archsimd.LoadFloat32x8(f8(p2, i))
		e3 := archsimd.LoadFloat32x8(f8(p3, i))
		e4 := archsimd.LoadFloat32x8(f8(p4, i))
		v := archsimd.LoadFloat32x8(f8(pd, i)).Add(garrote8(b.Sub(e2), T1))
		v = v.Add(garrote8(e2.Sub(e3), T2))
		v = v.Add(garrote8(e3.Sub(e4), T3))
		v.Add(e4).Store(f8(pd, i))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// vecGarroteKeys is garroteKeys' loop over the first multiple of 8 of
// len(c0).
func vecGarroteKeys(c0, c1 []float32, t2 float32, p, n []uint32) int {
	if !vec {
		return 0
	}
	m := len(c0) &^ 7
	c1, p, n = c1[:m], p[:m], n[:m]
	T := archsimd.BroadcastFloat32x8(t2)
	abs := archsimd.BroadcastUint32x8(0x7fffffff)
	q0, q1, pp, pn := at(c0), at(c1), at(p), at(n)
	for i := 0; i < 4*m; i += 32 {
		g := garrote8(archsimd.LoadFloat32x8(f8(q0, i)).Sub(archsimd.LoadFloat32x8(f8(q1, i))), T)
		neg := g.AsInt32x8().ShiftAllRight(31).AsUint32x8()
		b := g.AsUint32x8()
		b.AndNot(neg).Store(u8(pp, i))
		b.And(abs).And(neg).Store(u8(pn, i))
	}
	archsimd.ClearAVXUpperBits()
	return m
}

// vecGuard is guardKeys' sliding loop for the columns x = 1 .. k, k the
// largest multiple of 8 with 1+k ≤ w−1: it returns k.
func vecGuard(pu, pm, pd, nu, nm, nd []uint32, out []float32, m float32) int {
	w := len(pm)
	if !vec || w < 10 {
		return 0
	}
	k := (w - 2) &^ 7
	pu, pd, nu, nm, nd, out = pu[:w], pd[:w], nu[:w], nm[:w], nd[:w], out[:w]
	M := archsimd.BroadcastFloat32x8(m)
	// Column x's row pointers: x−1 at byte offset i−4, x+1 at i+4.
	a, b, c := at(pu), at(pm), at(pd)
	d, e, f := at(nu), at(nm), at(nd)
	o := at(out)
	for i := 4; i < 4*(1+k); i += 32 {
		hp := archsimd.LoadUint32x8(u8(a, i-4)).Max(archsimd.LoadUint32x8(u8(a, i))).Max(archsimd.LoadUint32x8(u8(a, i+4)))
		hp = hp.Max(archsimd.LoadUint32x8(u8(c, i-4))).Max(archsimd.LoadUint32x8(u8(c, i))).Max(archsimd.LoadUint32x8(u8(c, i+4)))
		hp = hp.Max(archsimd.LoadUint32x8(u8(b, i-4))).Max(archsimd.LoadUint32x8(u8(b, i+4)))
		hn := archsimd.LoadUint32x8(u8(d, i-4)).Max(archsimd.LoadUint32x8(u8(d, i))).Max(archsimd.LoadUint32x8(u8(d, i+4)))
		hn = hn.Max(archsimd.LoadUint32x8(u8(f, i-4))).Max(archsimd.LoadUint32x8(u8(f, i))).Max(archsimd.LoadUint32x8(u8(f, i+4)))
		hn = hn.Max(archsimd.LoadUint32x8(u8(e, i-4))).Max(archsimd.LoadUint32x8(u8(e, i+4)))
		bp := archsimd.LoadUint32x8(u8(b, i)).Min(hp.AsFloat32x8().Add(M).AsUint32x8())
		bn := archsimd.LoadUint32x8(u8(e, i)).Min(hn.AsFloat32x8().Add(M).AsUint32x8())
		bp.AsFloat32x8().Sub(bn.AsFloat32x8()).Store(f8(o, i))
	}
	archsimd.ClearAVXUpperBits()
	return k
}
