//go:build goexperiment.simd && amd64

package rgb8

import "simd/archsimd"

// Float f = 3·i + c of the 24 (pixel i, channel c) lies in vector f/8 at
// lane f mod 8. split[c] holds, for channel c, the lanes of the second
// and third vectors that hold it (Merge's masks: −1 in a lane that does,
// 0 elsewhere) and the permutation taking the merged vector's lanes to
// pixel order; join[v] holds, for output vector v, the pixel each lane
// takes (a permutation of every channel's vector) and the lanes that take
// red and green. The masks are vectors for an AVX2 compare (lanes), not
// bits: making a mask from bits takes AVX-512 instructions.
var split, join = func() (s [3]struct {
	in   [3][8]int32
	perm [8]int32
}, j [3]struct {
	pixel      [8]int32
	red, green [8]int32
}) {
	for c := range 3 {
		for i := range 8 {
			f := 3*i + c
			s[c].in[f/8][f%8] = -1
			s[c].perm[i] = int32(f % 8)
		}
	}
	for v := range 3 {
		for l := range 8 {
			f := 8*v + l
			j[v].pixel[l] = int32(f / 3)
			switch f % 3 {
			case 0:
				j[v].red[l] = -1
			case 1:
				j[v].green[l] = -1
			}
		}
	}
	return
}()

// lanes is the mask of the lanes of m that are −1 (one AVX2 compare).
func lanes(m *[8]int32) archsimd.Mask32x8 {
	return archsimd.Int32x8{}.Greater(archsimd.LoadInt32x8(m))
}

// Split returns the red, green and blue of the eight pixels at p, pixel i
// at lane i.
func Split(p *[24]float32) (r, g, b archsimd.Float32x8) {
	v0 := archsimd.LoadFloat32x8((*[8]float32)(p[0:8]))
	v1 := archsimd.LoadFloat32x8((*[8]float32)(p[8:16]))
	v2 := archsimd.LoadFloat32x8((*[8]float32)(p[16:24]))
	return channel(v0, v1, v2, 0), channel(v0, v1, v2, 1), channel(v0, v1, v2, 2)
}

// Channel returns channel c (0 red, 1 green, 2 blue) of the eight pixels
// at p, pixel i at lane i.
func Channel(p *[24]float32, c int) archsimd.Float32x8 {
	return channel(archsimd.LoadFloat32x8((*[8]float32)(p[0:8])), archsimd.LoadFloat32x8((*[8]float32)(p[8:16])), archsimd.LoadFloat32x8((*[8]float32)(p[16:24])), c)
}

// channel is channel c of the pixels whose 24 floats are v0, v1, v2.
func channel(v0, v1, v2 archsimd.Float32x8, c int) archsimd.Float32x8 {
	s := &split[c]
	m := v2.Merge(v1.Merge(v0, lanes(&s.in[1])), lanes(&s.in[2]))
	return m.Permute(archsimd.LoadInt32x8(&s.perm).AsUint32x8())
}

// Join stores the eight pixels r, g, b (pixel i at lane i) interleaved at
// p.
func Join(r, g, b archsimd.Float32x8, p *[24]float32) {
	out(r, g, b, 0).Store((*[8]float32)(p[0:8]))
	out(r, g, b, 1).Store((*[8]float32)(p[8:16]))
	out(r, g, b, 2).Store((*[8]float32)(p[16:24]))
}

// Spread returns the eight values v (one a pixel) spread over the
// pixels' 24 floats, the three vectors of the interleaved pixels: value
// i at floats 3i, 3i+1 and 3i+2 (a gain for every channel of a pixel).
func Spread(v archsimd.Float32x8) (v0, v1, v2 archsimd.Float32x8) {
	return v.Permute(archsimd.LoadInt32x8(&join[0].pixel).AsUint32x8()),
		v.Permute(archsimd.LoadInt32x8(&join[1].pixel).AsUint32x8()),
		v.Permute(archsimd.LoadInt32x8(&join[2].pixel).AsUint32x8())
}

// out is vector v of the interleaved pixels.
func out(r, g, b archsimd.Float32x8, v int) archsimd.Float32x8 {
	j := &join[v]
	px := archsimd.LoadInt32x8(&j.pixel).AsUint32x8()
	return r.Permute(px).Merge(g.Permute(px).Merge(b.Permute(px), lanes(&j.green)), lanes(&j.red))
}

// JoinRow interleaves the first n pixels of the channels r, g, b (n the
// largest multiple of eight not above len(r)) into p (3n floats): pixel
// i's red, green and blue at p[3i:3i+3]. Join's moves, eight pixels at a
// time, with its permutations and masks made once. It returns n.
func JoinRow(r, g, b, p []float32) int {
	n := len(r) &^ 7
	g, b, p = g[:n], b[:n], p[:3*n]
	px0 := archsimd.LoadInt32x8(&join[0].pixel).AsUint32x8()
	px1 := archsimd.LoadInt32x8(&join[1].pixel).AsUint32x8()
	px2 := archsimd.LoadInt32x8(&join[2].pixel).AsUint32x8()
	r0, g0 := lanes(&join[0].red), lanes(&join[0].green)
	r1, g1 := lanes(&join[1].red), lanes(&join[1].green)
	r2, g2 := lanes(&join[2].red), lanes(&join[2].green)
	for x := 0; x < n; x += 8 {
		rv := archsimd.LoadFloat32x8((*[8]float32)(r[x : x+8]))
		gv := archsimd.LoadFloat32x8((*[8]float32)(g[x : x+8]))
		bv := archsimd.LoadFloat32x8((*[8]float32)(b[x : x+8]))
		q := (*[24]float32)(p[3*x : 3*x+24])
		rv.Permute(px0).Merge(gv.Permute(px0).Merge(bv.Permute(px0), g0), r0).Store((*[8]float32)(q[0:8]))
		rv.Permute(px1).Merge(gv.Permute(px1).Merge(bv.Permute(px1), g1), r1).Store((*[8]float32)(q[8:16]))
		rv.Permute(px2).Merge(gv.Permute(px2).Merge(bv.Permute(px2), g2), r2).Store((*[8]float32)(q[16:24]))
	}
	return n
}
