//go:build goexperiment.simd && amd64

package look

import (
	"simd/archsimd"

	"github.com/rawbatch/rawbatch/pipeline/internal/rgb8"
)

// toneChunk is how many pixels vecToneRows takes through each of its
// passes before the next: the scratch (28 bytes a pixel) stays in the L1
// cache, and a pass's stores have retired long before the next pass
// loads them (a load that needs an unretired store of another width
// stalls). A multiple of 8.
const toneChunk = 512

// toneScratch holds m ≤ toneChunk pixels between the passes: their
// channels clamped as ToneRows clamps them, one array a channel, and the
// table lookups of the largest channel of pixel i at i, of the smallest
// at m+i: k the table interval, v its fraction (from toneIndex), then
// the interpolated value (from toneLookup).
type toneScratch struct {
	r, g, b [toneChunk]float32
	k       [2 * toneChunk]int32
	v       [2 * toneChunk]float32
}

// vecToneRows is ToneRows on the first multiple of 8 pixels of pix and
// returns how many pixels it did (none on a CPU without AVX2, or with a
// table whose ends toneExactEnds rejects); lut is a ToneLUT table
// (toneLUTSize+2 values). A chunk of pixels at a time, in three passes:
// the vector pass toneIndex clamps the channels and puts the largest and
// smallest channel's table position in the scratch, the scalar
// toneLookup interpolates the table there (simd/archsimd has no gather),
// and the vector pass tonePlace ranks the channels and writes the
// pixels. The operations are the scalar loop's, in its order, no fused
// multiply-adds (but for lutAt's ends, which the interpolation gives
// exactly: toneExactEnds), so the values are the same bit for bit
// (TestToneRowsVector).
func vecToneRows(lut []float32, pix []float32) int {
	if !vec || !toneExactEnds(lut) {
		return 0
	}
	n := len(pix) / 3 &^ 7
	t := (*[toneLUTSize + 2]float32)(lut)
	var s toneScratch
	for x := 0; x < n; x += toneChunk {
		p := pix[3*x : 3*min(x+toneChunk, n)]
		toneIndex(p, &s)
		toneLookup(t, &s, len(p)/3)
		tonePlace(p, &s)
	}
	return n
}

// rank orders the channels r, g, b of eight pixels as order3f does,
// with its comparisons in its order, so that equal channels take the
// same ranks: h the largest, m the middle, l the smallest, and the lanes
// of its three swaps.
func rank(r, g, b archsimd.Float32x8) (h, m, l archsimd.Float32x8, s1, s2, s3 archsimd.Mask32x8) {
	s1 = r.Less(g)
	h, m = swap(r, g, s1)
	s2 = m.Less(b)
	m, l = swap(m, b, s2)
	s3 = h.Less(m)
	h, m = swap(h, m, s3)
	return
}

// swap exchanges a and b in the lanes of s (through the bits where they
// differ: three operations where two blends take six µops on some CPUs).
func swap(a, b archsimd.Float32x8, s archsimd.Mask32x8) (archsimd.Float32x8, archsimd.Float32x8) {
	x, y := a.AsInt32x8(), b.AsInt32x8()
	d := x.Xor(y).And(s.ToInt32x8())
	return x.Xor(d).AsFloat32x8(), y.Xor(d).AsFloat32x8()
}

// clamp is ToneRows' bound on a channel v: as it is in [lo, hi]
// (±toneFinite), beyond it the nearer bound, NaN 0 (its lanes' bits
// cleared).
func clamp(v, lo, hi archsimd.Float32x8) archsimd.Float32x8 {
	return v.Max(lo).Min(hi).Masked(v.Equal(v))
}

// toneIndex is the first pass over the pixels p (a multiple of 8, at most
// toneChunk): their clamped channels into s, and for the largest and
// smallest channel v of each, lutAt's table interval
// k = ⌊v·toneLUTSize⌋ and fraction v·toneLUTSize − k, with v taken as 0
// below 0 and as 1 above 1.
func toneIndex(p []float32, s *toneScratch) {
	lo, hi := archsimd.BroadcastFloat32x8(-toneFinite), archsimd.BroadcastFloat32x8(toneFinite)
	zero, one, size := archsimd.BroadcastFloat32x8(0), archsimd.BroadcastFloat32x8(1), archsimd.BroadcastFloat32x8(toneLUTSize)
	m := len(p) / 3
	for i := 0; i < m; i += 8 {
		r, g, b := rgb8.Split((*[24]float32)(p[3*i : 3*i+24]))
		r, g, b = clamp(r, lo, hi), clamp(g, lo, hi), clamp(b, lo, hi)
		r.Store((*[8]float32)(s.r[i : i+8]))
		g.Store((*[8]float32)(s.g[i : i+8]))
		b.Store((*[8]float32)(s.b[i : i+8]))
		// The largest and smallest value (ties: equal values, or 0 and
		// −0, which lutAt does not tell apart), in [0, 1].
		vh, vl := r.Max(g).Max(b).Max(zero).Min(one), r.Min(g).Min(b).Max(zero).Min(one)
		fh, fl := vh.Mul(size), vl.Mul(size)
		kh, kl := fh.ConvertToInt32(), fl.ConvertToInt32()
		kh.Store((*[8]int32)(s.k[i : i+8]))
		kl.Store((*[8]int32)(s.k[m+i : m+i+8]))
		fh.Sub(kh.ConvertToFloat32()).Store((*[8]float32)(s.v[i : i+8]))
		fl.Sub(kl.ConvertToFloat32()).Store((*[8]float32)(s.v[m+i : m+i+8]))
	}
	archsimd.ClearAVXUpperBits()
}

// toneLookup is the second pass: the table t interpolated at the first
// 2m intervals and fractions of s, in place of the fractions (lutAt's
// operations).
func toneLookup(t *[toneLUTSize + 2]float32, s *toneScratch, m int) {
	k := s.k[:2*m]
	v := s.v[:len(k)]
	for i, ki := range k {
		j := min(uint32(ki), toneLUTSize) // is ki; tells the compiler t[j+1] is in range
		v[i] = t[j] + v[i]*(t[j+1]-t[j])
	}
}

// tonePlace is the last pass: the pixels p (those of toneIndex) get their
// largest and smallest channel's curve values (from s) and the middle
// channel's by placeTone's formula.
func tonePlace(p []float32, s *toneScratch) {
	zero := archsimd.BroadcastFloat32x8(0)
	m := len(p) / 3
	for i := 0; i < m; i += 8 {
		r := archsimd.LoadFloat32x8((*[8]float32)(s.r[i : i+8]))
		g := archsimd.LoadFloat32x8((*[8]float32)(s.g[i : i+8]))
		b := archsimd.LoadFloat32x8((*[8]float32)(s.b[i : i+8]))
		ph, pm, pl, s1, s2, s3 := rank(r, g, b)
		vh := archsimd.LoadFloat32x8((*[8]float32)(s.v[i : i+8]))
		vl := archsimd.LoadFloat32x8((*[8]float32)(s.v[m+i : m+i+8]))
		d := ph.Sub(pl)
		vm := vl.Add(vh.Sub(vl).Mul(pm.Sub(pl)).Div(d)).Merge(vl, d.Greater(zero))
		// Undo the ranking's swaps in reverse order: each value goes to
		// the channel it ranks.
		vh, vm = swap(vh, vm, s3)
		vm, vl = swap(vm, vl, s2)
		vh, vm = swap(vh, vm, s1)
		rgb8.Join(vh, vm, vl, (*[24]float32)(p[3*i:3*i+24]))
	}
	archsimd.ClearAVXUpperBits()
}
