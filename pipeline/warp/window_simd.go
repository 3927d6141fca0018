//go:build goexperiment.simd && amd64

package warp

import (
	"simd/archsimd"
	"unsafe"
)

// The bicubic samples eight output pixels of a channel at a time with
// AVX2 (Go's simd/archsimd, built with GOEXPERIMENT=simd; the Makefile
// sets it), where the eight positions allow it: every tap inside the
// image and the rows held, the eight rows at most one apart (a lens's
// curved rows cross from one source row to the next inside a group: 7 %
// of a 24 MP correction's groups), and their columns within 12 pixels.
// Each of the four rows' (five when the lanes' rows differ) channel is
// taken from the interleaved row as two vectors of eight pixels (from the
// first position's column less one), and each tap's values picked from
// them by the lanes' column offsets. The operations are sample's, in its
// order, without fused multiply-adds: the values are the scalar path's
// bit for bit (window_simd_test.go). On a CPU without AVX2 none are
// done this way.

var vec = archsimd.X86.AVX2()

// vecSample8 samples channel ch of a W×H image of 3 interleaved channels
// at the eight positions px[0:8], py[0:8] into out[0], out[3], …,
// out[21] when they allow it (see above): rows[i] is row lo+i of the
// image (3·W floats), rows lo to lo+len(rows)−1 held. It reports whether
// it sampled them. No scalar float instruction runs among its vector
// ones (Go's scalar floats are SSE instructions, which stall after AVX
// ones on some CPUs, unless the vector registers' upper halves are
// cleared first: every return does).
func vecSample8(px, py []float32, ch, w int, xMax, yMax float32, rows [][]float32, lo int, out []float32) bool {
	if !vec {
		return false
	}
	x := archsimd.LoadFloat32x8((*[8]float32)(px[:8]))
	y := archsimd.LoadFloat32x8((*[8]float32)(py[:8]))
	one := archsimd.BroadcastFloat32x8(1)
	in := x.GreaterEqual(one).And(y.GreaterEqual(one)).And(x.Less(archsimd.BroadcastFloat32x8(xMax))).And(y.Less(archsimd.BroadcastFloat32x8(yMax)))
	if in.ToBits() != 0xff {
		archsimd.ClearAVXUpperBits()
		return false
	}
	ix, iy := x.ConvertToInt32(), y.ConvertToInt32()
	var ixs, iys [8]int32
	ix.Store(&ixs)
	iy.Store(&iys)
	// The lanes' smallest and largest columns and rows (a loop of its
	// own: a call would spill the vectors).
	i0, iMax, y0, y1 := ixs[0], ixs[0], iys[0], iys[0]
	for i := 1; i < 8; i++ {
		i0, iMax = min(i0, ixs[i]), max(iMax, ixs[i])
		y0, y1 = min(y0, iys[i]), max(y1, iys[i])
	}
	off := ix.Sub(archsimd.BroadcastInt32x8(i0))
	if y1-y0 > 1 || iMax-i0 > 12 || int(i0)+15 > w || int(y0)-1 < lo || int(y1)+2 >= lo+len(rows) {
		archsimd.ClearAVXUpperBits()
		return false
	}
	// Pixels i0−1 to i0+14 of rows y0−1 to y1+2 are read.
	base := 12 * (int(i0) - 1)
	r := rows[int(y0)-1-lo : int(y1)+3-lo : int(y1)+3-lo]
	p0 := unsafe.Add(unsafe.Pointer(unsafe.SliceData(r[0][:3*w])), base)
	p1 := unsafe.Add(unsafe.Pointer(unsafe.SliceData(r[1][:3*w])), base)
	p2 := unsafe.Add(unsafe.Pointer(unsafe.SliceData(r[2][:3*w])), base)
	p3 := unsafe.Add(unsafe.Pointer(unsafe.SliceData(r[3][:3*w])), base)

	wx0, wx1, wx2, wx3 := keys8(x.Sub(ix.ConvertToFloat32()))
	wy0, wy1, wy2, wy3 := keys8(y.Sub(iy.ConvertToFloat32()))

	// The deinterleaving of channel ch from 24 floats (8 pixels) in three
	// vectors: float f = 3·i + ch lies in vector f/8 at position f mod 8.
	sel, perm := &deinterleave[ch][0], &deinterleave[ch][1]
	sv := archsimd.LoadInt32x8(sel)
	inA := sv.Equal(archsimd.BroadcastInt32x8(0))
	inAB := sv.Less(archsimd.BroadcastInt32x8(2))
	pm := archsimd.LoadInt32x8(perm).AsUint32x8()
	// Tap k of a lane reads value off + k of the 16 pixels': below 8 in
	// the first vector, else in the second (Permute takes it mod 8).
	i1 := off.Add(archsimd.BroadcastInt32x8(1))
	i2 := off.Add(archsimd.BroadcastInt32x8(2))
	i3 := off.Add(archsimd.BroadcastInt32x8(3))
	seven := archsimd.BroadcastInt32x8(7)
	h0, h1, h2, h3 := off.Greater(seven), i1.Greater(seven), i2.Greater(seven), i3.Greater(seven)
	u0, u1, u2, u3 := off.AsUint32x8(), i1.AsUint32x8(), i2.AsUint32x8(), i3.AsUint32x8()

	// Each of the four rows (written out: an array of vectors or a loop
	// over the rows' pointers would go through memory).
	a, b, c := archsimd.LoadFloat32x8((*[8]float32)(p0)), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p0, 32))), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p0, 64)))
	first := a.Merge(b, inA).Merge(c, inAB).Permute(pm)
	a, b, c = archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p0, 96))), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p0, 128))), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p0, 160)))
	second := a.Merge(b, inA).Merge(c, inAB).Permute(pm)
	v0 := wx0.Mul(second.Permute(u0).Merge(first.Permute(u0), h0)).
		Add(wx1.Mul(second.Permute(u1).Merge(first.Permute(u1), h1))).
		Add(wx2.Mul(second.Permute(u2).Merge(first.Permute(u2), h2))).
		Add(wx3.Mul(second.Permute(u3).Merge(first.Permute(u3), h3)))
	a, b, c = archsimd.LoadFloat32x8((*[8]float32)(p1)), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p1, 32))), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p1, 64)))
	first = a.Merge(b, inA).Merge(c, inAB).Permute(pm)
	a, b, c = archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p1, 96))), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p1, 128))), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p1, 160)))
	second = a.Merge(b, inA).Merge(c, inAB).Permute(pm)
	v1 := wx0.Mul(second.Permute(u0).Merge(first.Permute(u0), h0)).
		Add(wx1.Mul(second.Permute(u1).Merge(first.Permute(u1), h1))).
		Add(wx2.Mul(second.Permute(u2).Merge(first.Permute(u2), h2))).
		Add(wx3.Mul(second.Permute(u3).Merge(first.Permute(u3), h3)))
	a, b, c = archsimd.LoadFloat32x8((*[8]float32)(p2)), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p2, 32))), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p2, 64)))
	first = a.Merge(b, inA).Merge(c, inAB).Permute(pm)
	a, b, c = archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p2, 96))), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p2, 128))), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p2, 160)))
	second = a.Merge(b, inA).Merge(c, inAB).Permute(pm)
	v2 := wx0.Mul(second.Permute(u0).Merge(first.Permute(u0), h0)).
		Add(wx1.Mul(second.Permute(u1).Merge(first.Permute(u1), h1))).
		Add(wx2.Mul(second.Permute(u2).Merge(first.Permute(u2), h2))).
		Add(wx3.Mul(second.Permute(u3).Merge(first.Permute(u3), h3)))
	a, b, c = archsimd.LoadFloat32x8((*[8]float32)(p3)), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p3, 32))), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p3, 64)))
	first = a.Merge(b, inA).Merge(c, inAB).Permute(pm)
	a, b, c = archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p3, 96))), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p3, 128))), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p3, 160)))
	second = a.Merge(b, inA).Merge(c, inAB).Permute(pm)
	v3 := wx0.Mul(second.Permute(u0).Merge(first.Permute(u0), h0)).
		Add(wx1.Mul(second.Permute(u1).Merge(first.Permute(u1), h1))).
		Add(wx2.Mul(second.Permute(u2).Merge(first.Permute(u2), h2))).
		Add(wx3.Mul(second.Permute(u3).Merge(first.Permute(u3), h3)))
	if y1 != y0 {
		// The lanes on row y1 take rows 1 to 4 (the fifth, y1+2).
		p4 := unsafe.Add(unsafe.Pointer(unsafe.SliceData(r[4][:3*w])), base)
		a, b, c = archsimd.LoadFloat32x8((*[8]float32)(p4)), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p4, 32))), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p4, 64)))
		first = a.Merge(b, inA).Merge(c, inAB).Permute(pm)
		a, b, c = archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p4, 96))), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p4, 128))), archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p4, 160)))
		second = a.Merge(b, inA).Merge(c, inAB).Permute(pm)
		v4 := wx0.Mul(second.Permute(u0).Merge(first.Permute(u0), h0)).
			Add(wx1.Mul(second.Permute(u1).Merge(first.Permute(u1), h1))).
			Add(wx2.Mul(second.Permute(u2).Merge(first.Permute(u2), h2))).
			Add(wx3.Mul(second.Permute(u3).Merge(first.Permute(u3), h3)))
		low := iy.Equal(archsimd.BroadcastInt32x8(y0))
		v0, v1, v2, v3 = v0.Merge(v1, low), v1.Merge(v2, low), v2.Merge(v3, low), v3.Merge(v4, low)
	}
	res := wy0.Mul(v0).Add(wy1.Mul(v1)).Add(wy2.Mul(v2)).Add(wy3.Mul(v3))
	// Stored as bits: integer moves.
	var o [8]uint32
	res.AsUint32x8().Store(&o)
	archsimd.ClearAVXUpperBits()
	ob := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(out[:22]))), 22)
	for i := range 8 {
		ob[3*i] = o[i]
	}
	return true
}

// deinterleave[ch] is, for channel ch, which of three vectors holds
// each position's float (0, 1, 2) and the permutation that puts pixel i
// at lane i.
var deinterleave = func() (d [3][2][8]int32) {
	for ch := range 3 {
		for i := range 8 {
			f := 3*i + ch
			d[ch][0][f%8] = int32(f / 8)
			d[ch][1][i] = int32(f % 8)
		}
	}
	return d
}()

// keys8 is keys4 of eight fractions, in its order of operations.
func keys8(f archsimd.Float32x8) (w0, w1, w2, w3 archsimd.Float32x8) {
	one := archsimd.BroadcastFloat32x8(1)
	g := one.Sub(f)
	h := archsimd.BroadcastFloat32x8(-0.5).Mul(f).Mul(g)
	w0 = h.Mul(g)
	a, b := archsimd.BroadcastFloat32x8(1.5), archsimd.BroadcastFloat32x8(2.5)
	w1 = one.Add(f.Mul(f).Mul(a.Mul(f).Sub(b)))
	w2 = one.Add(g.Mul(g).Mul(a.Mul(g).Sub(b)))
	w3 = h.Mul(f)
	return
}
