//go:build goexperiment.simd && amd64

package demosaic

import (
	"simd/archsimd"
	"unsafe"
)

// RCD's per-row steps eight photosites at a time with AVX2 (Go's
// simd/archsimd, built with GOEXPERIMENT=simd; the Makefile sets it).
// Each kernel vec<Step> does its step's scalar loop (rcd.go) over the
// columns x, x+1, … (x, x+2, … for the steps of every other photosite) up
// to end, the scalar loop's bound, eight columns at a time for as long as
// all eight lie before end, and returns the column where the scalar loop
// goes on; on a CPU without AVX2, or with vecRCD off, it does none. Its
// operations are the scalar loop's, in the same order and without fused
// multiply-adds, so that the values are the scalar loop's bit for bit
// (rcd_vec_test.go).
//
// The steps of every other photosite (red and blue sites, or green ones)
// compute eight consecutive columns, of which the even lanes are the
// step's sites: where the plane written is red, green or blue, which
// hold values at the other sites too, the odd lanes are merged back from
// the plane as it was (no such step reads, in one row, a value that it
// writes in that row); the planes that only these steps write and read
// (LPF, P, Q, P/(P+Q), the diagonal, red and blue differences) are read
// only at the sites where they were written, so there all eight lanes
// are stored, the odd ones' values unused. The odd lanes may compute
// anything from the other sites' values, Inf and NaN too: they are
// discarded. Their last column is at most end, one past the scalar
// loop's last, so every load and store stays in the rows of the window
// (win) that the scalar loop reads.
//
// Each clears the vector registers' upper halves before it returns: Go's
// scalar float code is SSE, which stalls after AVX code on some CPUs
// until they are cleared.

// evenLanes selects lanes 0, 2, 4 and 6 (ToMask: non-zero).
var evenLanes = [8]int32{-1, 0, -1, 0, -1, 0, -1, 0}

// at is the address of w[i]. The kernels step a pointer along the row
// and load at constant offsets from it, which the compiler folds into
// the loads (an index register it does not: two more instructions a
// load).
func at(w *[winLen]float32, i int) unsafe.Pointer { return unsafe.Add(unsafe.Pointer(w), 4*i) }

// next is p eight float32 on.
func next(p unsafe.Pointer) unsafe.Pointer { return unsafe.Add(p, 32) }

// ld8 is the 8 float32 from index i of the window at p.
func ld8(p unsafe.Pointer, i int) archsimd.Float32x8 {
	return archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, 4*i)))
}

// st8 stores v at index i of the window at p.
func st8(v archsimd.Float32x8, p unsafe.Pointer, i int) {
	v.Store((*[8]float32)(unsafe.Add(p, 4*i)))
}

// merge8 stores the even lanes of v at index i of the window at p (even:
// evenLanes' mask), keeping the values there at the odd lanes.
func merge8(v archsimd.Float32x8, p unsafe.Pointer, i int, even archsimd.Mask32x8) {
	v.Merge(ld8(p, i), even).Store((*[8]float32)(unsafe.Add(p, 4*i)))
}

// vecOK is whether the kernels run for columns x to end of a window row.
func vecOK(x, end int) bool { return vecRCD && x >= 0 && end <= spanX }

// abs8 is abs of each lane (mag: 0x7fffffff in each).
func abs8(v archsimd.Float32x8, mag archsimd.Int32x8) archsimd.Float32x8 {
	return v.AsInt32x8().And(mag).AsFloat32x8()
}

// clamp01x8 is clamp01 of each lane (one: the bits of 1 in each).
func clamp01x8(v archsimd.Float32x8, one archsimd.Int32x8) archsimd.Float32x8 {
	b := v.AsInt32x8()
	return b.AndNot(b.ShiftAllRight(31)).Min(one).AsFloat32x8()
}

// refined8 is refined of each lane (half: ½ in each, mag: 0x7fffffff).
func refined8(c, n, half archsimd.Float32x8, mag archsimd.Int32x8) archsimd.Float32x8 {
	a := half.Sub(c).AsInt32x8().And(mag)
	b := half.Sub(n).AsInt32x8().And(mag)
	m := a.Sub(b).ShiftAllRight(31)
	cb := c.AsInt32x8()
	return cb.Xor(cb.Xor(n.AsInt32x8()).And(m)).AsFloat32x8()
}

// blend8 is blend of each lane: a·(b − c) + c.
func blend8(a, b, c archsimd.Float32x8) archsimd.Float32x8 { return a.Mul(b.Sub(c)).Add(c) }

// vecNorm is normInside's loop: out[i] for i from 0 while i+8 ≤
// len(out), src as long; b0, s0 the black and scale of the even
// indices, b1, s1 of the odd ones. It returns how many it did.
func vecNorm(src []uint16, out []float32, b0, s0, b1, s1 float32) int {
	n := min(len(src), len(out)) &^ 7
	if !vecRCD || n == 0 {
		return 0
	}
	src, out = src[:n], out[:n]
	even := archsimd.LoadInt32x8(&evenLanes).ToMask()
	B := archsimd.BroadcastFloat32x8(b0).Merge(archsimd.BroadcastFloat32x8(b1), even)
	S := archsimd.BroadcastFloat32x8(s0).Merge(archsimd.BroadcastFloat32x8(s1), even)
	one := archsimd.BroadcastInt32x8(0x3f800000)
	ps, po := unsafe.Pointer(unsafe.SliceData(src)), unsafe.Pointer(unsafe.SliceData(out))
	for i := 0; i < n; i += 8 {
		v := archsimd.LoadUint16x8((*[8]uint16)(unsafe.Add(ps, 2*i))).ExtendToUint32().AsInt32x8().ConvertToFloat32()
		clamp01x8(v.Sub(B).Mul(S), one).Store((*[8]float32)(unsafe.Add(po, 4*i)))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// vecLoad is load's loop: the CFA row's samples at the even columns
// from x into the plane at window offset p0, the odd ones into that at
// p1 (row y's column 0 of each).
func vecLoad(w *[winLen]float32, p0, p1, x, end int) int {
	if !vecOK(x, end) {
		return x
	}
	even := archsimd.LoadInt32x8(&evenLanes).ToMask()
	p := at(w, x)
	q0, q1 := at(w, p0+x), at(w, p1+x)
	for ; x+8 <= end; x += 8 {
		c := ld8(p, oCFA)
		st8(c.Merge(ld8(q0, 0), even), q0, 0)
		st8(ld8(q1, 0).Merge(c, even), q1, 0)
		p, q0, q1 = next(p), next(q0), next(q1)
	}
	archsimd.ClearAVXUpperBits()
	return x
}

// vecVH is vh's loop.
func vecVH(w *[winLen]float32, x, end int) int {
	if !vecOK(x, end) {
		return x
	}
	const s = spanX
	three, six := archsimd.BroadcastFloat32x8(3), archsimd.BroadcastFloat32x8(6)
	for p := at(w, x); x+8 <= end; x, p = x+8, next(p) {
		c := six.Mul(ld8(p, oCFA))
		v := ld8(p, oCFA-3*s).Sub(three.Mul(ld8(p, oCFA-2*s))).Sub(ld8(p, oCFA-s)).Add(c).
			Sub(ld8(p, oCFA+s)).Sub(three.Mul(ld8(p, oCFA+2*s))).Add(ld8(p, oCFA+3*s))
		st8(v.Mul(v), p, oV)
		h := ld8(p, oCFA-3).Sub(three.Mul(ld8(p, oCFA-2))).Sub(ld8(p, oCFA-1)).Add(c).
			Sub(ld8(p, oCFA+1)).Sub(three.Mul(ld8(p, oCFA+2))).Add(ld8(p, oCFA+3))
		st8(h.Mul(h), p, oH)
	}
	archsimd.ClearAVXUpperBits()
	return x
}

// vecVHRatio is vhRatio's loop.
func vecVHRatio(w *[winLen]float32, x, end int) int {
	if !vecOK(x, end) {
		return x
	}
	const s = spanX
	e := archsimd.BroadcastFloat32x8(epsSq).AsInt32x8()
	for p := at(w, x); x+8 <= end; x, p = x+8, next(p) {
		vs := ld8(p, oV-s).Add(ld8(p, oV)).Add(ld8(p, oV+s)).AsInt32x8().Max(e).AsFloat32x8()
		hs := ld8(p, oH-1).Add(ld8(p, oH)).Add(ld8(p, oH+1)).AsInt32x8().Max(e).AsFloat32x8()
		st8(vs.Div(vs.Add(hs)), p, oVH)
	}
	archsimd.ClearAVXUpperBits()
	return x
}

// vecLowPass is lowPass's loop (LPF: all lanes stored).
func vecLowPass(w *[winLen]float32, x, end int) int {
	if !vecOK(x, end) {
		return x
	}
	const s = spanX
	half, quarter := archsimd.BroadcastFloat32x8(0.5), archsimd.BroadcastFloat32x8(0.25)
	for p := at(w, x); x+7 <= end; x, p = x+8, next(p) {
		a := ld8(p, oCFA-s).Add(ld8(p, oCFA+s)).Add(ld8(p, oCFA-1)).Add(ld8(p, oCFA+1))
		d := ld8(p, oCFA-s-1).Add(ld8(p, oCFA-s+1)).Add(ld8(p, oCFA+s-1)).Add(ld8(p, oCFA+s+1))
		st8(ld8(p, oCFA).Add(half.Mul(a)).Add(quarter.Mul(d)), p, oLPF)
	}
	archsimd.ClearAVXUpperBits()
	return x
}

// vecDiffV is diffV's loop.
func vecDiffV(w *[winLen]float32, x, end int) int {
	if !vecOK(x, end) {
		return x
	}
	const s = spanX
	mag := archsimd.BroadcastInt32x8(0x7fffffff)
	for p := at(w, x); x+8 <= end; x, p = x+8, next(p) {
		st8(abs8(ld8(p, oCFA).Sub(ld8(p, oCFA+2*s)), mag), p, oDV)
	}
	archsimd.ClearAVXUpperBits()
	return x
}

// vecDiffH is diffH's loop.
func vecDiffH(w *[winLen]float32, x, end int) int {
	if !vecOK(x, end) {
		return x
	}
	mag := archsimd.BroadcastInt32x8(0x7fffffff)
	for p := at(w, x); x+8 <= end; x, p = x+8, next(p) {
		st8(abs8(ld8(p, oCFA).Sub(ld8(p, oCFA+2)), mag), p, oDH)
	}
	archsimd.ClearAVXUpperBits()
	return x
}

// vecGreen is green's loop (G: the odd lanes merged back).
func vecGreen(w *[winLen]float32, x, end int) int {
	if !vecOK(x, end) {
		return x
	}
	const s = spanX
	even := archsimd.LoadInt32x8(&evenLanes).ToMask()
	e := archsimd.BroadcastFloat32x8(eps)
	one := archsimd.BroadcastFloat32x8(1)
	half, quarter := archsimd.BroadcastFloat32x8(0.5), archsimd.BroadcastFloat32x8(0.25)
	mag, oneBits := archsimd.BroadcastInt32x8(0x7fffffff), archsimd.BroadcastInt32x8(0x3f800000)
	for p := at(w, x); x+7 <= end; x, p = x+8, next(p) {
		vg := ld8(p, oDV-s)
		hg := ld8(p, oDH-1)
		nG := e.Add(vg).Add(ld8(p, oDV-2*s)).Add(ld8(p, oDV-3*s)).Add(ld8(p, oDV-4*s))
		sG := e.Add(vg).Add(ld8(p, oDV)).Add(ld8(p, oDV+s)).Add(ld8(p, oDV+2*s))
		wG := e.Add(hg).Add(ld8(p, oDH-2)).Add(ld8(p, oDH-3)).Add(ld8(p, oDH-4))
		eG := e.Add(hg).Add(ld8(p, oDH)).Add(ld8(p, oDH+1)).Add(ld8(p, oDH+2))
		l := ld8(p, oLPF)
		el := e.Add(l) // eps + l + ln is (eps + l) + ln
		ln := ld8(p, oLPF-2*s)
		nE := ld8(p, oCFA-s).Mul(one.Add(l.Sub(ln).Div(el.Add(ln))))
		ls := ld8(p, oLPF+2*s)
		sE := ld8(p, oCFA+s).Mul(one.Add(l.Sub(ls).Div(el.Add(ls))))
		vE := sG.Mul(nE).Add(nG.Mul(sE)).Div(nG.Add(sG))
		lw := ld8(p, oLPF-2)
		wE := ld8(p, oCFA-1).Mul(one.Add(l.Sub(lw).Div(el.Add(lw))))
		le := ld8(p, oLPF+2)
		eE := ld8(p, oCFA+1).Mul(one.Add(l.Sub(le).Div(el.Add(le))))
		hE := eG.Mul(wE).Add(wG.Mul(eE)).Div(eG.Add(wG))
		n := quarter.Mul(ld8(p, oVH-s-1).Add(ld8(p, oVH-s+1)).Add(ld8(p, oVH+s-1)).Add(ld8(p, oVH+s+1)))
		d := refined8(ld8(p, oVH), n, half, mag)
		merge8(clamp01x8(blend8(d, hE, vE), oneBits), p, oG, even)
	}
	archsimd.ClearAVXUpperBits()
	return x
}

// vecPQ is pq's loop (P, Q: all lanes stored).
func vecPQ(w *[winLen]float32, x, end int) int {
	if !vecOK(x, end) {
		return x
	}
	const s = spanX
	three, six := archsimd.BroadcastFloat32x8(3), archsimd.BroadcastFloat32x8(6)
	for p := at(w, x); x+7 <= end; x, p = x+8, next(p) {
		c := six.Mul(ld8(p, oCFA))
		v := ld8(p, oCFA-3*s-3).Sub(three.Mul(ld8(p, oCFA-2*s-2))).Sub(ld8(p, oCFA-s-1)).Add(c).
			Sub(ld8(p, oCFA+s+1)).Sub(three.Mul(ld8(p, oCFA+2*s+2))).Add(ld8(p, oCFA+3*s+3))
		st8(v.Mul(v), p, oP)
		q := ld8(p, oCFA-3*s+3).Sub(three.Mul(ld8(p, oCFA-2*s+2))).Sub(ld8(p, oCFA-s+1)).Add(c).
			Sub(ld8(p, oCFA+s-1)).Sub(three.Mul(ld8(p, oCFA+2*s-2))).Add(ld8(p, oCFA+3*s-3))
		st8(q.Mul(q), p, oQ)
	}
	archsimd.ClearAVXUpperBits()
	return x
}

// vecPQRatio is pqRatio's loop (P/(P+Q): all lanes stored).
func vecPQRatio(w *[winLen]float32, x, end int) int {
	if !vecOK(x, end) {
		return x
	}
	const s = spanX
	e := archsimd.BroadcastFloat32x8(epsSq).AsInt32x8()
	for p := at(w, x); x+7 <= end; x, p = x+8, next(p) {
		ps := ld8(p, oP-s-1).Add(ld8(p, oP)).Add(ld8(p, oP+s+1)).AsInt32x8().Max(e).AsFloat32x8()
		qs := ld8(p, oQ-s+1).Add(ld8(p, oQ)).Add(ld8(p, oQ+s-1)).AsInt32x8().Max(e).AsFloat32x8()
		st8(ps.Div(ps.Add(qs)), p, oPQ)
	}
	archsimd.ClearAVXUpperBits()
	return x
}

// vecOpposite is rcdOpposite's loop (op, the colour's plane: the odd
// lanes merged back).
func vecOpposite(w *[winLen]float32, op *[7 * spanX]float32, x, end int) int {
	if !vecOK(x, end) {
		return x
	}
	const s, o = spanX, 3 * spanX
	even := archsimd.LoadInt32x8(&evenLanes).ToMask()
	e := archsimd.BroadcastFloat32x8(eps)
	half, quarter := archsimd.BroadcastFloat32x8(0.5), archsimd.BroadcastFloat32x8(0.25)
	mag, oneBits := archsimd.BroadcastInt32x8(0x7fffffff), archsimd.BroadcastInt32x8(0x3f800000)
	q := unsafe.Add(unsafe.Pointer(op), 4*x)
	for p := at(w, x); x+7 <= end; x, p, q = x+8, next(p), next(q) {
		pg, qg := ld8(p, oD1), ld8(p, oD2)
		nwG := e.Add(pg).Add(ld8(p, oD1-2*s-2)).Add(ld8(p, oGD1))
		seG := e.Add(pg).Add(ld8(p, oD1+2*s+2)).Add(ld8(p, oGD1+2*s+2))
		nwE := ld8(q, o-s-1).Sub(ld8(p, oG-s-1))
		seE := ld8(q, o+s+1).Sub(ld8(p, oG+s+1))
		pE := nwG.Mul(seE).Add(seG.Mul(nwE)).Div(nwG.Add(seG))
		neG := e.Add(qg).Add(ld8(p, oD2-2*s+2)).Add(ld8(p, oGD2))
		swG := e.Add(qg).Add(ld8(p, oD2+2*s-2)).Add(ld8(p, oGD2+2*s-2))
		neE := ld8(q, o-s+1).Sub(ld8(p, oG-s+1))
		swE := ld8(q, o+s-1).Sub(ld8(p, oG+s-1))
		qE := neG.Mul(swE).Add(swG.Mul(neE)).Div(neG.Add(swG))
		n := quarter.Mul(ld8(p, oPQ-s-1).Add(ld8(p, oPQ-s+1)).Add(ld8(p, oPQ+s-1)).Add(ld8(p, oPQ+s+1)))
		d := refined8(ld8(p, oPQ), n, half, mag)
		merge8(clamp01x8(ld8(p, oG).Add(blend8(d, qE, pE)), oneBits), q, o, even)
	}
	archsimd.ClearAVXUpperBits()
	return x
}

// vecDiagDiffs is diagDiffs' loop (op: rows y − 1 to y + 1 of the
// colour's plane; D1, D2, GD1, GD2: all lanes stored).
func vecDiagDiffs(w *[winLen]float32, op *[3 * spanX]float32, x, end int) int {
	if !vecOK(x, end) {
		return x
	}
	const s = spanX
	mag := archsimd.BroadcastInt32x8(0x7fffffff)
	q := unsafe.Add(unsafe.Pointer(op), 4*x)
	for p := at(w, x); x+7 <= end; x, p, q = x+8, next(p), next(q) {
		st8(abs8(ld8(q, -1).Sub(ld8(q, 2*s+1)), mag), p, oD1)
		st8(abs8(ld8(q, 1).Sub(ld8(q, 2*s-1)), mag), p, oD2)
		g := ld8(p, oG)
		st8(abs8(g.Sub(ld8(p, oG-2*s-2)), mag), p, oGD1)
		st8(abs8(g.Sub(ld8(p, oG-2*s+2)), mag), p, oGD2)
	}
	archsimd.ClearAVXUpperBits()
	return x
}

// vecDiffRBV is diffRBV's loop (RV, BV: all lanes stored).
func vecDiffRBV(w *[winLen]float32, x, end int) int {
	if !vecOK(x, end) {
		return x
	}
	const s = spanX
	mag := archsimd.BroadcastInt32x8(0x7fffffff)
	for p := at(w, x); x+7 <= end; x, p = x+8, next(p) {
		st8(abs8(ld8(p, oR).Sub(ld8(p, oR+2*s)), mag), p, oRV)
		st8(abs8(ld8(p, oB).Sub(ld8(p, oB+2*s)), mag), p, oBV)
	}
	archsimd.ClearAVXUpperBits()
	return x
}

// vecDiffRBH is diffRBH's loop (RH, BH: all lanes stored).
func vecDiffRBH(w *[winLen]float32, x, end int) int {
	if !vecOK(x, end) {
		return x
	}
	mag := archsimd.BroadcastInt32x8(0x7fffffff)
	for p := at(w, x); x+7 <= end; x, p = x+8, next(p) {
		st8(abs8(ld8(p, oR).Sub(ld8(p, oR+2)), mag), p, oRH)
		st8(abs8(ld8(p, oB).Sub(ld8(p, oB+2)), mag), p, oBH)
	}
	archsimd.ClearAVXUpperBits()
	return x
}

// vecRedBlue is redBlue's loop (R, B: the odd lanes, the row's red and
// blue sites, merged back; the even lanes read R and B of the row only
// there). Red and blue are written out one after the other: a call per
// colour would not be inlined, and its vectors would pass through
// memory.
func vecRedBlue(w *[winLen]float32, x, end int) int {
	if !vecOK(x, end) {
		return x
	}
	const s = spanX
	even := archsimd.LoadInt32x8(&evenLanes).ToMask()
	e := archsimd.BroadcastFloat32x8(eps)
	half, quarter := archsimd.BroadcastFloat32x8(0.5), archsimd.BroadcastFloat32x8(0.25)
	mag, oneBits := archsimd.BroadcastInt32x8(0x7fffffff), archsimd.BroadcastInt32x8(0x3f800000)
	for p := at(w, x); x+7 <= end; x, p = x+8, next(p) {
		gc := ld8(p, oG)
		n := quarter.Mul(ld8(p, oVH-s-1).Add(ld8(p, oVH-s+1)).Add(ld8(p, oVH+s-1)).Add(ld8(p, oVH+s+1)))
		d := refined8(ld8(p, oVH), n, half, mag)
		gn := e.Add(abs8(gc.Sub(ld8(p, oG-2*s)), mag))
		gs := e.Add(abs8(gc.Sub(ld8(p, oG+2*s)), mag))
		gw := e.Add(abs8(gc.Sub(ld8(p, oG-2)), mag))
		ge := e.Add(abs8(gc.Sub(ld8(p, oG+2)), mag))
		{
			vg, hg := ld8(p, oRV-s), ld8(p, oRH-1)
			nG := gn.Add(vg).Add(ld8(p, oRV-3*s))
			sG := gs.Add(vg).Add(ld8(p, oRV+s))
			nE := ld8(p, oR-s).Sub(ld8(p, oG-s))
			sE := ld8(p, oR+s).Sub(ld8(p, oG+s))
			vE := nG.Mul(sE).Add(sG.Mul(nE)).Div(nG.Add(sG))
			wG := gw.Add(hg).Add(ld8(p, oRH-3))
			eG := ge.Add(hg).Add(ld8(p, oRH+1))
			wE := ld8(p, oR-1).Sub(ld8(p, oG-1))
			eE := ld8(p, oR+1).Sub(ld8(p, oG+1))
			hE := eG.Mul(wE).Add(wG.Mul(eE)).Div(eG.Add(wG))
			merge8(clamp01x8(gc.Add(blend8(d, hE, vE)), oneBits), p, oR, even)
		}
		{
			vg, hg := ld8(p, oBV-s), ld8(p, oBH-1)
			nG := gn.Add(vg).Add(ld8(p, oBV-3*s))
			sG := gs.Add(vg).Add(ld8(p, oBV+s))
			nE := ld8(p, oB-s).Sub(ld8(p, oG-s))
			sE := ld8(p, oB+s).Sub(ld8(p, oG+s))
			vE := nG.Mul(sE).Add(sG.Mul(nE)).Div(nG.Add(sG))
			wG := gw.Add(hg).Add(ld8(p, oBH-3))
			eG := ge.Add(hg).Add(ld8(p, oBH+1))
			wE := ld8(p, oB-1).Sub(ld8(p, oG-1))
			eE := ld8(p, oB+1).Sub(ld8(p, oG+1))
			hE := eG.Mul(wE).Add(wG.Mul(eE)).Div(eG.Add(wG))
			merge8(clamp01x8(gc.Add(blend8(d, hE, vE)), oneBits), p, oB, even)
		}
	}
	archsimd.ClearAVXUpperBits()
	return x
}
