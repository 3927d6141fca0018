//go:build goexperiment.simd && amd64

package rgb8

import (
	"simd/archsimd"
	"testing"

	"github.com/rawbatch/rawbatch/internal/testtool"
)

// TestSplitJoin: Split and Channel put channel c of pixel i at lane i,
// Join puts them back where they were, and Spread puts value i at pixel
// i's three floats.
func TestSplitJoin(t *testing.T) {
	vec := archsimd.X86.AVX2()
	testtool.NeedVector(t, vec)
	if !vec {
		return
	}
	var p, q [24]float32
	for i := range p {
		p[i] = float32(i) + 0.5
	}
	r, g, b := Split(&p)
	var ch, one [3][8]float32
	r.Store(&ch[0])
	g.Store(&ch[1])
	b.Store(&ch[2])
	for c := range 3 {
		Channel(&p, c).Store(&one[c])
	}
	Join(r, g, b, &q)
	s0, s1, s2 := Spread(r)
	var sp [24]float32
	s0.Store((*[8]float32)(sp[0:8]))
	s1.Store((*[8]float32)(sp[8:16]))
	s2.Store((*[8]float32)(sp[16:24]))
	archsimd.ClearAVXUpperBits()
	for c := range 3 {
		for i := range 8 {
			if ch[c][i] != p[3*i+c] || one[c][i] != p[3*i+c] {
				t.Fatalf("channel %d, pixel %d: Split %v, Channel %v, want %v", c, i, ch[c][i], one[c][i], p[3*i+c])
			}
		}
	}
	if q != p {
		t.Fatalf("joined %v, want %v", q, p)
	}
	for f := range sp {
		if sp[f] != p[3*(f/3)] {
			t.Fatalf("spread float %d: %v, want pixel %d's red %v", f, sp[f], f/3, p[3*(f/3)])
		}
	}
}

// TestJoinRow: JoinRow interleaves the whole groups of eight of rows of
// 0 to 40 pixels as Join does, and writes nothing past them.
func TestJoinRow(t *testing.T) {
	vec := archsimd.X86.AVX2()
	testtool.NeedVector(t, vec)
	if !vec {
		return
	}
	for w := 0; w <= 40; w++ {
		r, g, b := make([]float32, w), make([]float32, w), make([]float32, w)
		for i := range w {
			r[i], g[i], b[i] = float32(3*i), float32(3*i+1), float32(3*i+2)
		}
		p := make([]float32, 3*w)
		for i := range p {
			p[i] = -1
		}
		n := JoinRow(r, g, b, p)
		archsimd.ClearAVXUpperBits()
		if n != w&^7 {
			t.Fatalf("width %d: %d pixels joined, want %d", w, n, w&^7)
		}
		for i, v := range p {
			want := float32(i)
			if i >= 3*n {
				want = -1
			}
			if v != want {
				t.Fatalf("width %d: float %d is %v, want %v", w, i, v, want)
			}
		}
	}
}
