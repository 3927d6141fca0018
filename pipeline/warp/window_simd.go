//go:build goexperiment.simd && amd64

package warp

import (
	"simd/archsimd"
	"unsafe"

	"github.com/rawbatch/rawbatch/pipeline/internal/rgb8"
)

// The bicubic samples eight output pixels of a channel at a time with
// AVX2 (Go's simd/archsimd, built with GOEXPERIMENT=simd; the Makefile
// sets it), where the eight positions allow it: every tap inside the
// image and the rows held, the eight rows at most one apart (a lens's
// curved rows cross from one source row to the next inside a group: 7 %
// of a 24 MP correction's groups), and their columns within 12 pixels.
// A Window's rows are planar, so a row's taps are read from the
// channel's values as they lie: where the eight lanes' columns are eight
// consecutive ones (a lens's local scale is within a few per cent of one,
// so most groups are), tap k of the lanes is the eight values from the
// first column less one plus k, one load; otherwise the sixteen values
// from the first column less one are loaded as two vectors and each
// tap's values picked from them by the lanes' column offsets. From an
// interleaved image (RemapInto's) the two vectors are first picked out of
// six (rgb8.Channel). The
// operations are sample's, in its order, without fused multiply-adds:
// the values are the scalar path's bit for bit (window_vec_test.go). On
// a CPU without AVX2 none are done this way.

var vec = archsimd.X86.AVX2()

// tapStep is 4, the bytes of a float32: the step from one tap's values to
// the next one's, held in a variable rather than written as a constant so
// that the compiler points at a tap with one address computation from the
// row's pointer instead of two (it splits base + index + constant in
// two).
var tapStep = 4

// lanes is 0, 1, …, 7: the column offsets of eight consecutive columns.
var lanes = [8]int32{0, 1, 2, 3, 4, 5, 6, 7}

// vecSample8 samples channel ch of a W×H image of 3 channels at the
// eight positions px[0:8], py[0:8] into out[0], out[3], …, out[21] when
// they allow it (see above): rows[i] is row lo+i of the image (3·W
// floats, interleaved), rows lo to lo+len(rows)−1 held. It reports
// whether it sampled them. (A Window's planar rows go through
// vecSampleRun.) No scalar
// float instruction runs among its vector ones (Go's scalar floats are
// SSE instructions, which stall after AVX ones on some CPUs, unless the
// vector registers' upper halves are cleared first: every return does).
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
	if y1-y0 > 1 || iMax-i0 > 12 || int(i0)+15 > w || int(y0)-1 < lo || int(y1)+2 >= lo+len(rows) {
		archsimd.ClearAVXUpperBits()
		return false
	}
	off := ix.Sub(archsimd.BroadcastInt32x8(i0))
	// Columns i0−1 to i0+14 of rows y0−1 to y1+2 are read: pk points at
	// row k's first one (its channel's value).
	base := 12 * (int(i0) - 1)
	p0, p1, p2, p3, p4 := tapRows(rows[int(y0)-1-lo:int(y1)+3-lo:int(y1)+3-lo], w, base, y1 != y0)
	wx0, wx1, wx2, wx3 := keys8(x.Sub(ix.ConvertToFloat32()))
	wy0, wy1, wy2, wy3 := keys8(y.Sub(iy.ConvertToFloat32()))

	// Each row's horizontal pass (v4: the fifth row's, when the lanes'
	// rows differ), on the lanes' columns as offsets into the sixteen
	// values of the channel from column i0−1 on (tap k of lane i: value
	// off[i] + k, in the second vector past 7).
	var v0, v1, v2, v3, v4 archsimd.Float32x8
	seven := archsimd.BroadcastInt32x8(7)
	i1 := off.Add(archsimd.BroadcastInt32x8(1))
	i2 := off.Add(archsimd.BroadcastInt32x8(2))
	i3 := off.Add(archsimd.BroadcastInt32x8(3))
	u0, u1, u2, u3 := off.AsUint32x8(), i1.AsUint32x8(), i2.AsUint32x8(), i3.AsUint32x8()
	h0, h1, h2, h3 := off.Greater(seven), i1.Greater(seven), i2.Greater(seven), i3.Greater(seven)
	v0 = tapsOf(pick(p0, ch), pick(unsafe.Add(p0, 96), ch), u0, u1, u2, u3, h0, h1, h2, h3, wx0, wx1, wx2, wx3)
	v1 = tapsOf(pick(p1, ch), pick(unsafe.Add(p1, 96), ch), u0, u1, u2, u3, h0, h1, h2, h3, wx0, wx1, wx2, wx3)
	v2 = tapsOf(pick(p2, ch), pick(unsafe.Add(p2, 96), ch), u0, u1, u2, u3, h0, h1, h2, h3, wx0, wx1, wx2, wx3)
	v3 = tapsOf(pick(p3, ch), pick(unsafe.Add(p3, 96), ch), u0, u1, u2, u3, h0, h1, h2, h3, wx0, wx1, wx2, wx3)
	if y1 != y0 {
		v4 = tapsOf(pick(p4, ch), pick(unsafe.Add(p4, 96), ch), u0, u1, u2, u3, h0, h1, h2, h3, wx0, wx1, wx2, wx3)
	}
	if y1 != y0 {
		// The lanes on row y1 take rows 1 to 4.
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

// tapRows points at byte offset base of the first four rows of r (3·w
// float32 each, checked), and of the fifth when five (else p4 is p3): the
// rows of a group's taps.
func tapRows(r [][]float32, w, base int, five bool) (p0, p1, p2, p3, p4 unsafe.Pointer) {
	k := 4
	if !five {
		k = 3
	}
	r = r[:k+1]
	n := 3 * w
	p0 = unsafe.Add(unsafe.Pointer(unsafe.SliceData(r[0][:n])), base)
	p1 = unsafe.Add(unsafe.Pointer(unsafe.SliceData(r[1][:n])), base)
	p2 = unsafe.Add(unsafe.Pointer(unsafe.SliceData(r[2][:n])), base)
	p3 = unsafe.Add(unsafe.Pointer(unsafe.SliceData(r[3][:n])), base)
	p4 = unsafe.Add(unsafe.Pointer(unsafe.SliceData(r[k][:n])), base)
	return
}

// tapsAt is a row's horizontal pass for eight lanes at consecutive
// columns of a planar row: p points at the first lane's column less one,
// and tap k of the lanes is the eight values from p + k.
func tapsAt(p unsafe.Pointer, wx0, wx1, wx2, wx3 archsimd.Float32x8) archsimd.Float32x8 {
	t0 := archsimd.LoadFloat32x8((*[8]float32)(p))
	t1 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, tapStep)))
	t2 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, 2*tapStep)))
	t3 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, 3*tapStep)))
	return wx0.Mul(t0).Add(wx1.Mul(t1)).Add(wx2.Mul(t2)).Add(wx3.Mul(t3))
}

// tapsOf is a row's horizontal pass for eight lanes from the sixteen
// values first, second from the lanes' first column less one: tap k of
// lane i is value uk[i] mod 8 of second where hk[i], else of first.
func tapsOf(first, second archsimd.Float32x8, u0, u1, u2, u3 archsimd.Uint32x8, h0, h1, h2, h3 archsimd.Mask32x8, wx0, wx1, wx2, wx3 archsimd.Float32x8) archsimd.Float32x8 {
	return wx0.Mul(second.Permute(u0).Merge(first.Permute(u0), h0)).
		Add(wx1.Mul(second.Permute(u1).Merge(first.Permute(u1), h1))).
		Add(wx2.Mul(second.Permute(u2).Merge(first.Permute(u2), h2))).
		Add(wx3.Mul(second.Permute(u3).Merge(first.Permute(u3), h3)))
}

// load is the eight floats at p.
func load(p unsafe.Pointer) archsimd.Float32x8 { return archsimd.LoadFloat32x8((*[8]float32)(p)) }

// pick is channel ch of the eight interleaved pixels at p (rgb8.Channel).
func pick(p unsafe.Pointer, ch int) archsimd.Float32x8 { return rgb8.Channel((*[24]float32)(p), ch) }

// vecDeinterleave3 is Deinterleave3's loop over the first multiple of 8
// of the row's pixels (rgb8.Split: moves only, the values are the same);
// it returns how many pixels it did (none on a CPU without AVX2).
func vecDeinterleave3(r, g, b, src []float32) int {
	if !vec {
		return 0
	}
	n := len(r) &^ 7
	for x := 0; x < n; x += 8 {
		pr, pg, pb := rgb8.Split((*[24]float32)(src[3*x : 3*x+24]))
		pr.Store((*[8]float32)(r[x : x+8]))
		pg.Store((*[8]float32)(g[x : x+8]))
		pb.Store((*[8]float32)(b[x : x+8]))
	}
	archsimd.ClearAVXUpperBits()
	return n
}

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

// vecSampleRun is the vector path of Window.SampleRow3 over the groups of
// one channel's row: for each group g of eight positions (sx, sy
// [8g:8g+8], g < len(dst)/8) the bicubic of channel ch of the window's
// planar rows, as vecSample8 computes it, into dst[8g:8g+8]. The groups
// it does not take are appended to skip, which it returns; none are
// taken (every group is in skip) on a CPU without AVX2. Its loop calls
// nothing: the checks are vector compares against the first lane's
// column and row, which need the lanes' columns to grow along the row
// (the first lane's the smallest, as a lens correction's positions do),
// and where the lanes' columns are consecutive but for one step of two
// or of none (a local scale within a seventh of one: the lanes' columns
// less their lane numbers take two neighbouring values), a tap's values
// are the merge of two loads from the row instead of picks from two
// vectors (tapsOf).
func vecSampleRun(win *Window, ptrs []unsafe.Pointer, ch int, sx, sy, dst []float32, skip []int32) []int32 {
	n := len(dst) / 8
	if !vec || len(ptrs) != len(win.Rows)+1 {
		for g := range n {
			skip = append(skip, int32(g))
		}
		return skip
	}
	w, lo := win.W, win.Lo
	// The first lane's column a and the group's top row y0 (y1 = y0 or
	// y0 + 1 the bottom one) that the group's taps allow: columns a − 1
	// to a + 14 inside the image (a − 1 from 0 to W − 16: nCols
	// values), rows y0 − 1 to y1 + 2 held and inside it (y0 − 1 from loY
	// on: nOne values for one row, nTwo for two).
	loY, hiY := max(lo, 0), min(lo+len(win.Rows), win.H)
	nCols, nOne, nTwo := uint(max(0, w-15)), uint(max(0, hiY-loY-3)), uint(max(0, hiY-loY-4))
	sx, sy, dst = sx[:8*n], sy[:8*n], dst[:8*n]
	// Unchecked pointers: sx, sy and dst hold 8n values, and a group that
	// passes the checks below reads ptrs[y0−1−lo] to ptrs[y0+3−lo], all
	// within ptrs (the last is the padding when y0 + 2 is the last row).
	psx, psy, pdst := unsafe.Pointer(unsafe.SliceData(sx)), unsafe.Pointer(unsafe.SliceData(sy)), unsafe.Pointer(unsafe.SliceData(dst))
	prow := unsafe.Pointer(unsafe.SliceData(ptrs))
	first := archsimd.Int32x8{}.AsUint32x8() // Permute's indices: lane 0 everywhere
	iZero := archsimd.Int32x8{}
	iOne, iMinusOne := archsimd.BroadcastInt32x8(1), archsimd.BroadcastInt32x8(-1)
	iTwo, iMinusTwo, iThirteen := archsimd.BroadcastInt32x8(2), archsimd.BroadcastInt32x8(-2), archsimd.BroadcastInt32x8(13)
	consecutive := archsimd.LoadInt32x8(&lanes)
	plane := ch * w
	for g := 0; g < n; g++ {
		x := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(psx, 32*g)))
		y := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(psy, 32*g)))
		ix, iy := x.ConvertToInt32(), y.ConvertToInt32()
		// off: the lanes' columns less the first lane's (0 to 12); dy:
		// their rows less the first lane's (−1 to 1, not both signs).
		// Every tap is inside the image (x ≥ 1, y ≥ 1, x < W − 2, y <
		// H − 2 in every lane) when, besides, a and y0 are (the lanes'
		// columns are a to a + 12): a position that is not finite or
		// beyond the int32 range converts to −2³¹, which fails these.
		off := ix.Sub(ix.Permute(first))
		dy := iy.Sub(iy.Permute(first))
		ok := off.Greater(iMinusOne).And(iThirteen.Greater(off)).And(dy.Greater(iMinusTwo)).And(iTwo.Greater(dy)).ToBits()
		above, below := iZero.Greater(dy).ToBits(), dy.Greater(iZero).ToBits()
		a, y0 := int(ix.GetLo().GetElem(0)), int(iy.GetLo().GetElem(0))
		rows, five := nOne, false
		if above|below != 0 {
			// On two rows.
			if above != 0 && below != 0 {
				ok = 0
			}
			if above != 0 {
				y0--
			}
			rows, five = nTwo, true
		}
		if ok != 0xff || uint(a-1) >= nCols || uint(y0-1-loY) >= rows {
			skip = append(skip, int32(g))
			continue
		}
		base := 4 * (plane + a - 1)
		pp := (*[5]unsafe.Pointer)(unsafe.Add(prow, 8*(y0-1-lo)))
		p0, p1, p2, p3, p4 := unsafe.Add(pp[0], base), unsafe.Add(pp[1], base), unsafe.Add(pp[2], base), unsafe.Add(pp[3], base), unsafe.Add(pp[4], base)
		wx0, wx1, wx2, wx3 := keys8(x.Sub(ix.ConvertToFloat32()))
		wy0, wy1, wy2, wy3 := keys8(y.Sub(iy.ConvertToFloat32()))
		var v0, v1, v2, v3, v4 archsimd.Float32x8
		e := off.Sub(consecutive) // lane i's column less the first's less i
		if e.Equal(iZero).ToBits() == 0xff {
			v0, v1 = tapsAt(p0, wx0, wx1, wx2, wx3), tapsAt(p1, wx0, wx1, wx2, wx3)
			v2, v3 = tapsAt(p2, wx0, wx1, wx2, wx3), tapsAt(p3, wx0, wx1, wx2, wx3)
			if five {
				v4 = tapsAt(p4, wx0, wx1, wx2, wx3)
			}
		} else if up, down := e.Equal(iOne), e.Equal(iMinusOne); up.Or(down).Or(e.Equal(iZero)).ToBits() == 0xff && (down.ToBits() == 0 || a >= 2) && (up.ToBits() == 0 || down.ToBits() == 0) {
			// The lanes of up (down) take their taps one column to the
			// right (left) of the consecutive ones.
			if down.ToBits() == 0 {
				v0, v1 = tapsRight(p0, up, wx0, wx1, wx2, wx3), tapsRight(p1, up, wx0, wx1, wx2, wx3)
				v2, v3 = tapsRight(p2, up, wx0, wx1, wx2, wx3), tapsRight(p3, up, wx0, wx1, wx2, wx3)
				if five {
					v4 = tapsRight(p4, up, wx0, wx1, wx2, wx3)
				}
			} else {
				v0, v1 = tapsLeft(p0, down, wx0, wx1, wx2, wx3), tapsLeft(p1, down, wx0, wx1, wx2, wx3)
				v2, v3 = tapsLeft(p2, down, wx0, wx1, wx2, wx3), tapsLeft(p3, down, wx0, wx1, wx2, wx3)
				if five {
					v4 = tapsLeft(p4, down, wx0, wx1, wx2, wx3)
				}
			}
		} else {
			seven := archsimd.BroadcastInt32x8(7)
			i1 := off.Add(iOne)
			i2 := off.Add(iTwo)
			i3 := off.Add(archsimd.BroadcastInt32x8(3))
			u0, u1, u2, u3 := off.AsUint32x8(), i1.AsUint32x8(), i2.AsUint32x8(), i3.AsUint32x8()
			h0, h1, h2, h3 := off.Greater(seven), i1.Greater(seven), i2.Greater(seven), i3.Greater(seven)
			v0 = tapsOf(load(p0), load(unsafe.Add(p0, 32)), u0, u1, u2, u3, h0, h1, h2, h3, wx0, wx1, wx2, wx3)
			v1 = tapsOf(load(p1), load(unsafe.Add(p1, 32)), u0, u1, u2, u3, h0, h1, h2, h3, wx0, wx1, wx2, wx3)
			v2 = tapsOf(load(p2), load(unsafe.Add(p2, 32)), u0, u1, u2, u3, h0, h1, h2, h3, wx0, wx1, wx2, wx3)
			v3 = tapsOf(load(p3), load(unsafe.Add(p3, 32)), u0, u1, u2, u3, h0, h1, h2, h3, wx0, wx1, wx2, wx3)
			if five {
				v4 = tapsOf(load(p4), load(unsafe.Add(p4, 32)), u0, u1, u2, u3, h0, h1, h2, h3, wx0, wx1, wx2, wx3)
			}
		}
		if five {
			// The lanes on row y1 take rows 1 to 4.
			low := iy.Equal(archsimd.BroadcastInt32x8(int32(y0)))
			v0, v1, v2, v3 = v0.Merge(v1, low), v1.Merge(v2, low), v2.Merge(v3, low), v3.Merge(v4, low)
		}
		wy0.Mul(v0).Add(wy1.Mul(v1)).Add(wy2.Mul(v2)).Add(wy3.Mul(v3)).Store((*[8]float32)(unsafe.Add(pdst, 32*g)))
	}
	archsimd.ClearAVXUpperBits()
	return skip
}

// tapsRight is a row's horizontal pass for eight lanes at consecutive
// columns of a planar row but for those of m, whose columns are one
// further: p points at the first lane's column less one, tap k of a lane
// is the value at p + k (p + k + 1 in m's lanes).
func tapsRight(p unsafe.Pointer, m archsimd.Mask32x8, wx0, wx1, wx2, wx3 archsimd.Float32x8) archsimd.Float32x8 {
	t0 := archsimd.LoadFloat32x8((*[8]float32)(p))
	t1 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, tapStep)))
	t2 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, 2*tapStep)))
	t3 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, 3*tapStep)))
	t4 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, 4*tapStep)))
	return wx0.Mul(t1.Merge(t0, m)).Add(wx1.Mul(t2.Merge(t1, m))).Add(wx2.Mul(t3.Merge(t2, m))).Add(wx3.Mul(t4.Merge(t3, m)))
}

// tapsLeft is tapsRight with the columns of m's lanes one back: tap k of
// a lane is the value at p + k (p + k − 1 in m's lanes).
func tapsLeft(p unsafe.Pointer, m archsimd.Mask32x8, wx0, wx1, wx2, wx3 archsimd.Float32x8) archsimd.Float32x8 {
	t := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, -tapStep)))
	t0 := archsimd.LoadFloat32x8((*[8]float32)(p))
	t1 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, tapStep)))
	t2 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, 2*tapStep)))
	t3 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, 3*tapStep)))
	return wx0.Mul(t.Merge(t0, m)).Add(wx1.Mul(t0.Merge(t1, m))).Add(wx2.Mul(t1.Merge(t2, m))).Add(wx3.Mul(t2.Merge(t3, m)))
}

// vecInterleave3 is interleave3's loop over the first multiple of eight
// of the pixels (rgb8.JoinRow: moves only); it returns how many it did
// (none on a CPU without AVX2).
func vecInterleave3(r, g, b, dst []float32) int {
	if !vec {
		return 0
	}
	n := rgb8.JoinRow(r, g, b, dst)
	archsimd.ClearAVXUpperBits()
	return n
}
