//go:build goexperiment.simd && amd64

package denoise

import (
	"math"
	"simd/archsimd"
	"unsafe"

	rgbsplit "github.com/rawbatch/rawbatch/pipeline/internal/rgb8"
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

// vecB3x4 is the vertical pass of blurRows4 over the first multiple of
// 8 of len(t[0]): t[k] from r[k] to r[k+4], each vector of the eight
// rows loaded once for the four outputs.
func vecB3x4(r [8][]float32, t [4][]float32) int {
	if !vec {
		return 0
	}
	n := len(t[0]) &^ 7
	var p [8]unsafe.Pointer
	for i := range r {
		p[i] = at(r[i][:n])
	}
	o0, o1, o2, o3 := at(t[0][:n]), at(t[1][:n]), at(t[2][:n]), at(t[3][:n])
	K0, K1, K2 := archsimd.BroadcastFloat32x8(hot.b3[0]), archsimd.BroadcastFloat32x8(hot.b3[1]), archsimd.BroadcastFloat32x8(hot.b3[2])
	for i := 0; i < 4*n; i += 32 {
		v0 := archsimd.LoadFloat32x8(f8(p[0], i))
		v1 := archsimd.LoadFloat32x8(f8(p[1], i))
		v2 := archsimd.LoadFloat32x8(f8(p[2], i))
		v3 := archsimd.LoadFloat32x8(f8(p[3], i))
		v4 := archsimd.LoadFloat32x8(f8(p[4], i))
		v0.Add(v4).Mul(K0).Add(v1.Add(v3).Mul(K1)).Add(v2.Mul(K2)).Store(f8(o0, i))
		v5 := archsimd.LoadFloat32x8(f8(p[5], i))
		v1.Add(v5).Mul(K0).Add(v2.Add(v4).Mul(K1)).Add(v3.Mul(K2)).Store(f8(o1, i))
		v6 := archsimd.LoadFloat32x8(f8(p[6], i))
		v2.Add(v6).Mul(K0).Add(v3.Add(v5).Mul(K1)).Add(v4.Mul(K2)).Store(f8(o2, i))
		v7 := archsimd.LoadFloat32x8(f8(p[7], i))
		v3.Add(v7).Mul(K0).Add(v4.Add(v6).Mul(K1)).Add(v5.Mul(K2)).Store(f8(o3, i))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// vecB3Wide is blurH's loop over its inner columns (from 2·step on, m
// of them; every tap inside) at hole spacing 4 or 8, over the first
// multiple of 8 of m (0 at other spacings: vecB3 does them). The taps of
// eight columns are then whole vectors, or halves of two, of the row
// tmp, the same ones for the next eight columns shifted by one: each
// step loads one vector (and at spacing 4 makes one of two halves)
// where vecB3 loads five. The operations are vecB3's.
func vecB3Wide(tmp, out []float32, step, m int) int {
	n := m &^ 7
	s2 := 2 * step
	if !vec || (step != 4 && step != 8) || n == 0 || s2+n+s2 > len(tmp) || s2+n > len(out) {
		return 0
	}
	K0, K1, K2 := archsimd.BroadcastFloat32x8(hot.b3[0]), archsimd.BroadcastFloat32x8(hot.b3[1]), archsimd.BroadcastFloat32x8(hot.b3[2])
	// The vector at byte offset i of pt is the taps x−2·step of the eight
	// columns of out at byte offset i of po.
	pt, po := at(tmp), at(out[s2:])
	if step == 8 {
		a, b := archsimd.LoadFloat32x8(f8(pt, 0)), archsimd.LoadFloat32x8(f8(pt, 32))
		c, d := archsimd.LoadFloat32x8(f8(pt, 64)), archsimd.LoadFloat32x8(f8(pt, 96))
		for i := 0; i < 4*n; i += 32 {
			e := archsimd.LoadFloat32x8(f8(pt, i+128))
			a.Add(e).Mul(K0).Add(b.Add(d).Mul(K1)).Add(c.Mul(K2)).Store(f8(po, i))
			a, b, c, d = b, c, d, e
		}
	} else {
		// Taps x−8, x, x+8 loaded; x−4 and x+4 their neighbours' halves.
		a, c := archsimd.LoadFloat32x8(f8(pt, 0)), archsimd.LoadFloat32x8(f8(pt, 32))
		b := a.Select128FromPair(1, 2, c)
		for i := 0; i < 4*n; i += 32 {
			e := archsimd.LoadFloat32x8(f8(pt, i+64))
			d := c.Select128FromPair(1, 2, e)
			a.Add(e).Mul(K0).Add(b.Add(d).Mul(K1)).Add(c.Mul(K2)).Store(f8(po, i))
			a, b, c = c, d, e
		}
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

// rgb8 is the eight interleaved pixels at p as three vectors
// (rgb8.Split).
func rgb8(p unsafe.Pointer) (r, g, b archsimd.Float32x8) { return rgbsplit.Split((*[24]float32)(p)) }

// store8 writes the 8 pixels r, g, b interleaved (24 floats) at p
// (rgb8.Join).
func store8(p unsafe.Pointer, r, g, b archsimd.Float32x8) { rgbsplit.Join(r, g, b, (*[24]float32)(p)) }

// pos8 is pos of eight values: x where x > 0 or x is NaN, else +0
// (zero: zero8's, made once outside the loops). The lanes to clear are
// those with x ≤ 0, an ordered compare that is false for NaN: one
// compare and an and-not instead of two compares, an or and a blend.
func pos8(x, zero archsimd.Float32x8) archsimd.Float32x8 {
	return x.AsInt32x8().AndNot(x.LessEqual(zero).ToInt32x8()).AsFloat32x8()
}

// stab8 is stab of eight values (eps: ε in every lane): √(pos(x) + ε) rounded to float32 once,
// which the float64 square root rounded to float32 also is (a float64
// holds more than twice a float32's digits and two more, so rounding
// twice gives the correctly rounded float32 root): the same value, and
// the table's (codeStab), bit for bit.
func stab8(x, zero, eps archsimd.Float32x8) archsimd.Float32x8 {
	return pos8(x, zero).Add(eps).Sqrt()
}

// vecSplit is splitRow's loop over its column pairs, eight columns (four
// half columns) at a time: s the pairs' pixels (RGB), ys their luminance,
// q1, q2 their half columns. It returns how many half columns it did.
func vecSplit(s, ys, q1, q2 []float32) int {
	if !vec {
		return 0
	}
	n := len(q1) &^ 3
	s, ys, q2 = s[:6*n], ys[:2*n], q2[:n]
	ps, py, p1, p2 := at(s), at(ys), at(q1), at(q2)
	quarter := archsimd.BroadcastFloat32x8(0.25)
	three := archsimd.BroadcastFloat32x8(3)
	zero, eps := zero8(), archsimd.BroadcastFloat32x8(Epsilon)
	even := archsimd.LoadInt32x8(&pairLanes).AsUint32x8()
	for i := 0; i < n; i += 4 {
		r, g, b := rgb8(unsafe.Add(ps, 4*6*i))
		r, g, b = stab8(r, zero, eps), stab8(g, zero, eps), stab8(b, zero, eps)
		r.Add(g).Add(b).Div(three).Store(f8(py, 4*2*i))
		// Each half column's two columns: the even lanes' differences,
		// then the odd lanes', added in splitRow's order.
		d1 := r.Sub(g).Mul(quarter).Permute(even)
		d2 := b.Sub(g).Mul(quarter).Permute(even)
		a := (*[4]float32)(unsafe.Add(p1, 4*i))
		archsimd.LoadFloat32x4(a).Add(d1.GetLo()).Add(d1.GetHi()).Store(a)
		a = (*[4]float32)(unsafe.Add(p2, 4*i))
		archsimd.LoadFloat32x4(a).Add(d2.GetLo()).Add(d2.GetHi()).Store(a)
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// pairLanes puts the even lanes first, then the odd ones.
var pairLanes = [8]int32{0, 2, 4, 6, 1, 3, 5, 7}

// unstab8 is unstab of eight values (zero, eps as for stab8).
func unstab8(v, zero, eps archsimd.Float32x8) archsimd.Float32x8 {
	v = pos8(v, zero)
	return pos8(v.Mul(v).Sub(eps), zero)
}

// vecMergePairs is mergeRow's loop over its column pairs, eight pairs
// (sixteen columns) at a time: pair i's columns take half columns i and
// i+1 of the colour rows p1a, p1b, p2a, p2b (each n+1 long) at weights
// 1/4 and 3/4, ty between the rows; ys their luminance, d their pixels
// (RGB). It returns how many pairs it did. The bilinear weights are
// applied to the half columns (half column i and its right neighbour
// i+1, loaded from one further on), once for the left and once for the
// right columns of the pairs, and the results spread over the columns
// (spreadPairs): the operations of each column's bilerp, on its own
// operands, in its order.
func vecMergePairs(p1a, p1b, p2a, p2b, ys, d []float32, n int, ty float32) int {
	m := n &^ 7 // the loads of half columns i+1 .. i+8 stay within n+1
	if !vec || m == 0 {
		return 0
	}
	p1a, p1b, p2a, p2b, ys, d = p1a[:n+1], p1b[:n+1], p2a[:n+1], p2b[:n+1], ys[:2*m], d[:6*m]
	qa, qb, ra, rb, py, pd := at(p1a), at(p1b), at(p2a), at(p2b), at(ys), at(d)
	q25, q75 := archsimd.BroadcastFloat32x8(0.25), archsimd.BroadcastFloat32x8(0.75)
	TY := archsimd.BroadcastFloat32x8(ty)
	three := archsimd.BroadcastFloat32x8(3)
	zero, eps := zero8(), archsimd.BroadcastFloat32x8(Epsilon)
	// bilerp of the left (tx 1/4) and right (tx 3/4) columns of eight
	// pairs, from half columns i (a0, b0 of the two rows) and i+1 (a1,
	// b1).
	bilerp8 := func(a0, a1, b0, b1 archsimd.Float32x8) (l, r archsimd.Float32x8) {
		da, db := a1.Sub(a0), b1.Sub(b0)
		tl, tr := a0.Add(q25.Mul(da)), a0.Add(q75.Mul(da))
		bl, br := b0.Add(q25.Mul(db)), b0.Add(q75.Mul(db))
		return tl.Add(TY.Mul(bl.Sub(tl))), tr.Add(TY.Mul(br.Sub(tr)))
	}
	for i := 0; i < m; i += 8 {
		c1l, c1r := bilerp8(archsimd.LoadFloat32x8(f8(qa, 4*i)), archsimd.LoadFloat32x8(f8(qa, 4*i+4)),
			archsimd.LoadFloat32x8(f8(qb, 4*i)), archsimd.LoadFloat32x8(f8(qb, 4*i+4)))
		c2l, c2r := bilerp8(archsimd.LoadFloat32x8(f8(ra, 4*i)), archsimd.LoadFloat32x8(f8(ra, 4*i+4)),
			archsimd.LoadFloat32x8(f8(rb, 4*i)), archsimd.LoadFloat32x8(f8(rb, 4*i+4)))
		for h := range 2 {
			c1, c2 := spreadPairs(c1l, c1r, h), spreadPairs(c2l, c2r, h)
			g := archsimd.LoadFloat32x8(f8(py, 4*(2*i+8*h))).Sub(c1.Add(c2).Div(three))
			store8(unsafe.Add(pd, 4*(6*i+24*h)), unstab8(g.Add(c1), zero, eps), unstab8(g, zero, eps), unstab8(g.Add(c2), zero, eps))
		}
	}
	archsimd.ClearAVXUpperBits()
	return m
}

// spreadPairs is the eight columns of pairs 4h to 4h+3 whose left and
// right columns' values are l and r (pair k at lane k): l's at the even
// lanes, r's at the odd ones.
func spreadPairs(l, r archsimd.Float32x8, h int) archsimd.Float32x8 {
	p := archsimd.LoadUint32x8(&pairSpread[h])
	odd := archsimd.LoadUint32x8(&oddLanes)
	return l.Permute(p).AsUint32x8().AndNot(odd).Or(r.Permute(p).AsUint32x8().And(odd)).AsFloat32x8()
}

// pairSpread[h] takes pairs 4h to 4h+3 to their columns' lanes; oddLanes
// is all ones in the odd lanes.
var (
	pairSpread = [2][8]uint32{{0, 0, 1, 1, 2, 2, 3, 3}, {4, 4, 5, 5, 6, 6, 7, 7}}
	oddLanes   = [8]uint32{0, ^uint32(0), 0, ^uint32(0), 0, ^uint32(0), 0, ^uint32(0)}
)

// zero8 is eight +0s, made by AVX instructions (1 − 1): the compiler
// makes a zero float constant with an SSE one, which stalls after AVX
// code on some CPUs.
func zero8() archsimd.Float32x8 {
	one := archsimd.BroadcastFloat32x8(1)
	return one.Sub(one)
}

// vecBlur7 is Sharpener.Rows' vertical pass of radius 3 over the first
// multiple of 8 of len(tmp): k0·(r0+r6) + k1·(r1+r5) + k2·(r2+r4) +
// k3·r3, added in that order.
func vecBlur7(r0, r1, r2, r3, r4, r5, r6, tmp []float32, k0, k1, k2, k3 float32) int {
	if !vec {
		return 0
	}
	n := len(tmp) &^ 7
	r0, r1, r2, r3, r4, r5, r6 = r0[:n], r1[:n], r2[:n], r3[:n], r4[:n], r5[:n], r6[:n]
	K0, K1, K2, K3 := archsimd.BroadcastFloat32x8(k0), archsimd.BroadcastFloat32x8(k1), archsimd.BroadcastFloat32x8(k2), archsimd.BroadcastFloat32x8(k3)
	for x := 0; x < n; x += 8 {
		a0, a6 := archsimd.LoadFloat32x8((*[8]float32)(r0[x:x+8])), archsimd.LoadFloat32x8((*[8]float32)(r6[x:x+8]))
		a1, a5 := archsimd.LoadFloat32x8((*[8]float32)(r1[x:x+8])), archsimd.LoadFloat32x8((*[8]float32)(r5[x:x+8]))
		a2, a4 := archsimd.LoadFloat32x8((*[8]float32)(r2[x:x+8])), archsimd.LoadFloat32x8((*[8]float32)(r4[x:x+8]))
		a3 := archsimd.LoadFloat32x8((*[8]float32)(r3[x : x+8]))
		K0.Mul(a0.Add(a6)).Add(K1.Mul(a1.Add(a5))).Add(K2.Mul(a2.Add(a4))).Add(K3.Mul(a3)).Store((*[8]float32)(tmp[x : x+8]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// vecSharpen3 is Sharpener.Rows' inner loop of radius 3 (sharpen3) on
// eight columns at a time from x while x+8 ≤ end, and returns the column
// where it stopped: end's last group short of eight, or a group with a
// luminance or a blur that is not finite (NaN, ±Inf: the scalar loop's
// max keeps a NaN, the vector one would not), which the scalar loop does.
// A pixel whose luminance is not above 0 is multiplied by 1 (left as it
// is, as the scalar loop leaves it); the others by max(Y + a·(Y − B),
// SharpenFloor·Y) / Y, the scalar loop's operations in its order.
func vecSharpen3(px, ly, tmp []float32, x, end int, k0, k1, k2, k3, a float32) int {
	if !vec || x < 3 || end+3 > len(tmp) || end > len(ly) || 3*end > len(px) {
		return x
	}
	K0, K1, K2, K3 := archsimd.BroadcastFloat32x8(k0), archsimd.BroadcastFloat32x8(k1), archsimd.BroadcastFloat32x8(k2), archsimd.BroadcastFloat32x8(k3)
	A, floor := archsimd.BroadcastFloat32x8(a), archsimd.BroadcastFloat32x8(SharpenFloor)
	zero, one := archsimd.BroadcastFloat32x8(0), archsimd.BroadcastFloat32x8(1)
	inf, ninf := archsimd.BroadcastFloat32x8(float32(math.Inf(1))), archsimd.BroadcastFloat32x8(float32(math.Inf(-1)))
	for ; x+8 <= end; x += 8 {
		t := unsafe.Pointer(&tmp[x-3])
		b := K0.Mul(archsimd.LoadFloat32x8(f8(t, 0)).Add(archsimd.LoadFloat32x8(f8(t, 24)))).
			Add(K1.Mul(archsimd.LoadFloat32x8(f8(t, 4)).Add(archsimd.LoadFloat32x8(f8(t, 20))))).
			Add(K2.Mul(archsimd.LoadFloat32x8(f8(t, 8)).Add(archsimd.LoadFloat32x8(f8(t, 16))))).
			Add(K3.Mul(archsimd.LoadFloat32x8(f8(t, 12))))
		lv := archsimd.LoadFloat32x8((*[8]float32)(ly[x : x+8]))
		finite := lv.Less(inf).And(lv.Greater(ninf)).And(b.Less(inf)).And(b.Greater(ninf))
		if finite.ToBits() != 0xff {
			break
		}
		g := lv.Add(A.Mul(lv.Sub(b))).Max(floor.Mul(lv)).Div(lv).Merge(one, lv.Greater(zero))
		p := unsafe.Pointer(&px[3*x])
		g0, g1, g2 := rgbsplit.Spread(g)
		archsimd.LoadFloat32x8(f8(p, 0)).Mul(g0).Store(f8(p, 0))
		archsimd.LoadFloat32x8(f8(p, 32)).Mul(g1).Store(f8(p, 32))
		archsimd.LoadFloat32x8(f8(p, 64)).Mul(g2).Store(f8(p, 64))
	}
	archsimd.ClearAVXUpperBits()
	return x
}

// vecLum is Sharpener.Rows' luminance loop over the first multiple of 8
// of len(l): pos((R + G + B) / 3) of each pixel of p (interleaved RGB),
// the sums in that order.
func vecLum(p, l []float32) int {
	if !vec {
		return 0
	}
	n := min(len(l), len(p)/3) &^ 7
	three, zero := archsimd.BroadcastFloat32x8(3), archsimd.BroadcastFloat32x8(0)
	for x := 0; x < n; x += 8 {
		r, g, b := rgb8(unsafe.Pointer(&p[3*x]))
		pos8(r.Add(g).Add(b).Div(three), zero).Store((*[8]float32)(l[x : x+8]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}
