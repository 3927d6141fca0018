//go:build goexperiment.simd && amd64

package rgb8

import "simd/archsimd"

// Float f = 3·i + c of the 24 (pixel i, channel c) lies in vector f/8 at
// lane f mod 8: lane l of vector v holds channel (8v+l) mod 3, and
// channel c's pixel at lane l of whichever vector holds c there is
// pixel[c][l]. So each channel's eight values are a permutation of one
// vector whose lane l is taken from the vector that holds the channel
// there: Split picks those lanes from the three vectors (and-ed with
// masks, or-ed together) and permutes them into pixel order (at[c]);
// Join permutes each channel into those lanes (pixel[c]) and picks each
// vector's lanes from the three. Masks and ors, where a blend with a
// vector mask takes three micro-operations on recent Intel cores, a mask
// made from bits AVX-512, and one permutation a channel.
var tab = func() (t struct {
	mask      [3][3][8]uint32 // [v][c]: all ones in the lanes of vector v that hold channel c
	pixel, at [3][8]uint32    // [c]: pixel at lane l; lane of pixel i
}) {
	for v := range 3 {
		for l := range 8 {
			f := 8*v + l
			c, i := f%3, f/3
			t.mask[v][c][l] = ^uint32(0)
			t.pixel[c][l] = uint32(i)
			t.at[c][i] = uint32(l)
		}
	}
	return
}()

// Split returns the red, green and blue of the eight pixels at p, pixel i
// at lane i.
func Split(p *[24]float32) (r, g, b archsimd.Float32x8) {
	v0 := archsimd.LoadFloat32x8((*[8]float32)(p[0:8]))
	v1 := archsimd.LoadFloat32x8((*[8]float32)(p[8:16]))
	v2 := archsimd.LoadFloat32x8((*[8]float32)(p[16:24]))
	return pick(v0, v1, v2, 0), pick(v0, v1, v2, 1), pick(v0, v1, v2, 2)
}

// Channel returns channel c (0 red, 1 green, 2 blue) of the eight pixels
// at p, pixel i at lane i.
func Channel(p *[24]float32, c int) archsimd.Float32x8 {
	return pick(archsimd.LoadFloat32x8((*[8]float32)(p[0:8])), archsimd.LoadFloat32x8((*[8]float32)(p[8:16])), archsimd.LoadFloat32x8((*[8]float32)(p[16:24])), c)
}

// pick is channel c of the pixels whose 24 floats are v0, v1, v2.
func pick(v0, v1, v2 archsimd.Float32x8, c int) archsimd.Float32x8 {
	m := &tab.mask
	u := v0.AsUint32x8().And(archsimd.LoadUint32x8(&m[0][c])).
		Or(v1.AsUint32x8().And(archsimd.LoadUint32x8(&m[1][c]))).
		Or(v2.AsUint32x8().And(archsimd.LoadUint32x8(&m[2][c])))
	return u.AsFloat32x8().Permute(archsimd.LoadUint32x8(&tab.at[c]))
}

// Join stores the eight pixels r, g, b (pixel i at lane i) interleaved at
// p.
func Join(r, g, b archsimd.Float32x8, p *[24]float32) {
	r, g, b = place(r, 0), place(g, 1), place(b, 2)
	put(r, g, b, 0).Store((*[8]float32)(p[0:8]))
	put(r, g, b, 1).Store((*[8]float32)(p[8:16]))
	put(r, g, b, 2).Store((*[8]float32)(p[16:24]))
}

// place permutes channel c's eight values (pixel i at lane i) into the
// lanes that the interleaved vectors take them from (put).
func place(x archsimd.Float32x8, c int) archsimd.Float32x8 {
	return x.Permute(archsimd.LoadUint32x8(&tab.pixel[c]))
}

// put is vector v of the interleaved pixels whose channels, each
// placed, are r, g, b.
func put(r, g, b archsimd.Float32x8, v int) archsimd.Float32x8 {
	m := &tab.mask[v]
	return r.AsUint32x8().And(archsimd.LoadUint32x8(&m[0])).
		Or(g.AsUint32x8().And(archsimd.LoadUint32x8(&m[1]))).
		Or(b.AsUint32x8().And(archsimd.LoadUint32x8(&m[2]))).AsFloat32x8()
}

// Spread returns the eight values v (one a pixel) spread over the
// pixels' 24 floats, the three vectors of the interleaved pixels: value
// i at floats 3i, 3i+1 and 3i+2 (a gain for every channel of a pixel).
func Spread(v archsimd.Float32x8) (v0, v1, v2 archsimd.Float32x8) {
	return v.Permute(archsimd.LoadUint32x8(&spread[0])), v.Permute(archsimd.LoadUint32x8(&spread[1])), v.Permute(archsimd.LoadUint32x8(&spread[2]))
}

// spread[v] is the pixel of each lane of vector v.
var spread = func() (s [3][8]uint32) {
	for f := range 24 {
		s[f/8][f%8] = uint32(f / 3)
	}
	return
}()

// JoinRow interleaves the first n pixels of the channels r, g, b (n the
// largest multiple of eight not above len(r)) into p (3n floats): pixel
// i's red, green and blue at p[3i:3i+3], Join eight pixels at a time. It
// returns n.
func JoinRow(r, g, b, p []float32) int {
	n := len(r) &^ 7
	g, b, p = g[:n], b[:n], p[:3*n]
	for x := 0; x < n; x += 8 {
		Join(archsimd.LoadFloat32x8((*[8]float32)(r[x:x+8])), archsimd.LoadFloat32x8((*[8]float32)(g[x:x+8])),
			archsimd.LoadFloat32x8((*[8]float32)(b[x:x+8])), (*[24]float32)(p[3*x:3*x+24]))
	}
	return n
}
