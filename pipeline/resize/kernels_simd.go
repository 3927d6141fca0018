//go:build goexperiment.simd && amd64

package resize

import (
	"simd/archsimd"
	"unsafe"
)

// The Lanczos-3 passes run eight floats at a time with AVX2 (Go's
// simd/archsimd, built with GOEXPERIMENT=simd; the Makefile sets it):
// the vertical pass along the row, the horizontal pass on eight rows at
// once, each lane one row. The operations are the scalar loops', in
// their order, without fused multiply-adds, so the values are the same
// bit for bit (kernels_simd_test.go). No scalar float instruction runs
// among the vector ones (Go's scalar floats are SSE instructions, which
// stall after AVX ones on some CPUs unless the vector registers' upper
// halves are cleared first: every kernel clears them before it returns).

var vec = archsimd.X86.AVX2()

// vecAxpy sets dst[i] = wt·row[i] (first) or adds wt·row[i] to dst[i],
// for the first len(dst) rounded down to a multiple of 8 elements, and
// returns that count (0 without AVX2); row is at least as long as dst.
func vecAxpy(dst, row []float32, wt float32, first bool) int {
	if !vec {
		return 0
	}
	n := len(dst) &^ 7
	row = row[:n]
	w := archsimd.BroadcastFloat32x8(wt)
	if first {
		for i := 0; i < n; i += 8 {
			w.Mul(archsimd.LoadFloat32x8((*[8]float32)(row[i : i+8]))).Store((*[8]float32)(dst[i : i+8]))
		}
	} else {
		for i := 0; i < n; i += 8 {
			d := archsimd.LoadFloat32x8((*[8]float32)(dst[i : i+8]))
			d.Add(w.Mul(archsimd.LoadFloat32x8((*[8]float32)(row[i : i+8])))).Store((*[8]float32)(dst[i : i+8]))
		}
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// vecVertical sets dst[i] = Σ_k ws[k]·rows[k][i] for k from 0 to n−1
// (the first tap's product, then each later one's added in order), for
// the first len(dst) rounded down to a multiple of 8 elements, and
// returns that count (0 without AVX2): one output row of the vertical
// pass, each value's sum kept in a register across the taps. rows[k]
// points at row k's first float (len(dst) floats at least); ws holds 8
// floats past its n weights.
func vecVertical(dst []float32, rows *[maxTaps]unsafe.Pointer, n int, ws []float32) int {
	if !vec {
		return 0
	}
	m := len(dst) &^ 7
	ws = ws[:n+8]
	dp := unsafe.Pointer(unsafe.SliceData(dst))
	for i := uintptr(0); i < uintptr(4*m); i += 32 {
		wv := archsimd.LoadFloat32x8((*[8]float32)(ws[0:8]))
		acc := wv.Permute(archsimd.LoadUint32x8(&lanes[0])).Mul(archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(rows[0], i))))
		for k := 1; k < n; k++ {
			if k&7 == 0 {
				wv = archsimd.LoadFloat32x8((*[8]float32)(ws[k : k+8]))
			}
			acc = acc.Add(wv.Permute(archsimd.LoadUint32x8(&lanes[k&7])).Mul(archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(rows[k], i)))))
		}
		acc.Store((*[8]float32)(unsafe.Add(dp, i)))
	}
	archsimd.ClearAVXUpperBits()
	return m
}

// hTile is how many output pixels the horizontal kernel makes from one
// transposed block of source columns (a block of 3·(hTile·ratio + taps)
// columns of eight rows stays in the first-level cache).
const hTile = 64

// lanes[k] picks lane k into every lane (Permute): weight k of eight
// loaded at once, broadcast without a scalar float instruction.
var lanes = func() (l [8][8]uint32) {
	for k := range 8 {
		for i := range 8 {
			l[k][i] = uint32(k)
		}
	}
	return l
}()

// vecHorizontal8 resamples the eight rows src[0:8] of 3 interleaved
// channels into dst[0:8] with table t, as horizontalRow does each (the
// first tap's product, then each later tap's added in order), and
// reports whether it did (false without AVX2). For each tile of hTile
// output pixels, the source columns under it are transposed into blk
// (column-major, the eight rows' values of a column together), each
// output value computed for the eight rows at once, and the results
// transposed back; values move between the layouts as bits (integer
// moves). t.w must hold 8 floats past its last tap (makeWeightsExtent
// pads it).
func vecHorizontal8(dst, src [][]float32, t *weights, blk, ob []uint32) bool {
	if !vec {
		return false
	}
	dst, src = dst[:8:8], src[:8:8]
	dw := len(t.start)
	var s [8]unsafe.Pointer
	var d [8]unsafe.Pointer
	for l := range 8 {
		s[l] = unsafe.Pointer(unsafe.SliceData(src[l]))
		d[l] = unsafe.Pointer(unsafe.SliceData(dst[l][:3*dw]))
	}
	for x0 := 0; x0 < dw; x0 += hTile {
		x1 := min(x0+hTile, dw)
		lo, hi := t.start[x0], 0
		for x := x0; x < x1; x++ {
			lo, hi = min(lo, t.start[x]), max(hi, t.start[x]+t.n[x])
		}
		// Source floats 3·lo to 3·hi of each row, column-major.
		cols := 3 * (hi - lo)
		b := blk[:8*cols]
		bp := unsafe.Pointer(unsafe.SliceData(b))
		i := 0
		for ; i+8 <= cols; i += 8 {
			transposeIn(&s, uintptr(4*(3*lo+i)), unsafe.Add(bp, 32*i))
		}
		for ; i < cols; i++ {
			for l := range 8 {
				b[8*i+l] = *(*uint32)(unsafe.Add(s[l], 4*(3*lo+i)))
			}
		}
		vals := 3 * (x1 - x0)
		o := ob[:8*vals]
		hTileKernel(o, b, t, x0, x1, lo)
		op := unsafe.Pointer(unsafe.SliceData(o))
		i = 0
		for ; i+8 <= vals; i += 8 {
			transposeOut(unsafe.Add(op, 32*i), &d, uintptr(4*(3*x0+i)))
		}
		for ; i < vals; i++ {
			for l := range 8 {
				*(*uint32)(unsafe.Add(d[l], 4*(3*x0+i))) = o[8*i+l]
			}
		}
	}
	archsimd.ClearAVXUpperBits()
	return true
}

// transposeIn reads eight values from each of the eight rows at byte
// offset off and writes them column by column at out: value c of row l
// to out's word 8c+l.
func transposeIn(rows *[8]unsafe.Pointer, off uintptr, out unsafe.Pointer) {
	r0 := archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(rows[0], off)))
	r1 := archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(rows[1], off)))
	r2 := archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(rows[2], off)))
	r3 := archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(rows[3], off)))
	r4 := archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(rows[4], off)))
	r5 := archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(rows[5], off)))
	r6 := archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(rows[6], off)))
	r7 := archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(rows[7], off)))
	c0, c1, c2, c3, c4, c5, c6, c7 := transpose8(r0, r1, r2, r3, r4, r5, r6, r7)
	c0.Store((*[8]uint32)(out))
	c1.Store((*[8]uint32)(unsafe.Add(out, 32)))
	c2.Store((*[8]uint32)(unsafe.Add(out, 64)))
	c3.Store((*[8]uint32)(unsafe.Add(out, 96)))
	c4.Store((*[8]uint32)(unsafe.Add(out, 128)))
	c5.Store((*[8]uint32)(unsafe.Add(out, 160)))
	c6.Store((*[8]uint32)(unsafe.Add(out, 192)))
	c7.Store((*[8]uint32)(unsafe.Add(out, 224)))
}

// transposeOut is transposeIn's inverse: word 8c+l at in goes to value
// c of row l at byte offset off.
func transposeOut(in unsafe.Pointer, rows *[8]unsafe.Pointer, off uintptr) {
	c0 := archsimd.LoadUint32x8((*[8]uint32)(in))
	c1 := archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(in, 32)))
	c2 := archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(in, 64)))
	c3 := archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(in, 96)))
	c4 := archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(in, 128)))
	c5 := archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(in, 160)))
	c6 := archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(in, 192)))
	c7 := archsimd.LoadUint32x8((*[8]uint32)(unsafe.Add(in, 224)))
	r0, r1, r2, r3, r4, r5, r6, r7 := transpose8(c0, c1, c2, c3, c4, c5, c6, c7)
	r0.Store((*[8]uint32)(unsafe.Add(rows[0], off)))
	r1.Store((*[8]uint32)(unsafe.Add(rows[1], off)))
	r2.Store((*[8]uint32)(unsafe.Add(rows[2], off)))
	r3.Store((*[8]uint32)(unsafe.Add(rows[3], off)))
	r4.Store((*[8]uint32)(unsafe.Add(rows[4], off)))
	r5.Store((*[8]uint32)(unsafe.Add(rows[5], off)))
	r6.Store((*[8]uint32)(unsafe.Add(rows[6], off)))
	r7.Store((*[8]uint32)(unsafe.Add(rows[7], off)))
}

// transpose8 transposes the 8×8 matrix of 32-bit words whose rows are
// r0…r7: interleaving pairs of rows' words, then pairs of words, then
// swapping 128-bit halves.
func transpose8(r0, r1, r2, r3, r4, r5, r6, r7 archsimd.Uint32x8) (c0, c1, c2, c3, c4, c5, c6, c7 archsimd.Uint32x8) {
	t0, t1 := r0.InterleaveLoGrouped(r1).AsUint64x4(), r0.InterleaveHiGrouped(r1).AsUint64x4()
	t2, t3 := r2.InterleaveLoGrouped(r3).AsUint64x4(), r2.InterleaveHiGrouped(r3).AsUint64x4()
	t4, t5 := r4.InterleaveLoGrouped(r5).AsUint64x4(), r4.InterleaveHiGrouped(r5).AsUint64x4()
	t6, t7 := r6.InterleaveLoGrouped(r7).AsUint64x4(), r6.InterleaveHiGrouped(r7).AsUint64x4()
	u0, u1 := t0.InterleaveLoGrouped(t2).AsUint32x8(), t0.InterleaveHiGrouped(t2).AsUint32x8()
	u2, u3 := t1.InterleaveLoGrouped(t3).AsUint32x8(), t1.InterleaveHiGrouped(t3).AsUint32x8()
	u4, u5 := t4.InterleaveLoGrouped(t6).AsUint32x8(), t4.InterleaveHiGrouped(t6).AsUint32x8()
	u6, u7 := t5.InterleaveLoGrouped(t7).AsUint32x8(), t5.InterleaveHiGrouped(t7).AsUint32x8()
	c0, c4 = u0.Select128FromPair(0, 2, u4), u0.Select128FromPair(1, 3, u4)
	c1, c5 = u1.Select128FromPair(0, 2, u5), u1.Select128FromPair(1, 3, u5)
	c2, c6 = u2.Select128FromPair(0, 2, u6), u2.Select128FromPair(1, 3, u6)
	c3, c7 = u3.Select128FromPair(0, 2, u7), u3.Select128FromPair(1, 3, u7)
	return
}

// hTileKernel computes output pixels x0 to x1 of the eight rows into o
// (column-major as blk: value c of pixel x at o[24·(x−x0)+8c:][:8]) from
// blk, the source columns from pixel lo on.
func hTileKernel(o, blk []uint32, t *weights, x0, x1, lo int) {
	bp := unsafe.Pointer(unsafe.SliceData(blk))
	for x := x0; x < x1; x++ {
		s, n, off := t.start[x], t.n[x], t.off[x]
		ws := t.w[off : off+n+8]
		p := unsafe.Add(bp, 96*(s-lo))
		wv := archsimd.LoadFloat32x8((*[8]float32)(ws[0:8]))
		w := wv.Permute(archsimd.LoadUint32x8(&lanes[0]))
		r := w.Mul(archsimd.LoadFloat32x8((*[8]float32)(p)))
		g := w.Mul(archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, 32))))
		bl := w.Mul(archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, 64))))
		for k := 1; k < n; k++ {
			if k&7 == 0 {
				wv = archsimd.LoadFloat32x8((*[8]float32)(ws[k : k+8]))
			}
			w = wv.Permute(archsimd.LoadUint32x8(&lanes[k&7]))
			p = unsafe.Add(p, 96)
			r = r.Add(w.Mul(archsimd.LoadFloat32x8((*[8]float32)(p))))
			g = g.Add(w.Mul(archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, 32)))))
			bl = bl.Add(w.Mul(archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, 64)))))
		}
		q := unsafe.Pointer(unsafe.SliceData(o[24*(x-x0) : 24*(x-x0)+24]))
		r.Store((*[8]float32)(q))
		g.Store((*[8]float32)(unsafe.Add(q, 32)))
		bl.Store((*[8]float32)(unsafe.Add(q, 64)))
	}
	archsimd.ClearAVXUpperBits()
}
