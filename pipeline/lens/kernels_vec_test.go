package lens

import (
	"math/rand/v2"
	"testing"

	"github.com/rawbatch/rawbatch/internal/testtool"
)

// TestVecLerp8: the vector interpolation of an interval of eight pixels
// (vecLerp8, Nodes.row's) gives exactly the scalar loop's positions, and
// the vector devignetting of a row (vecGains) the scalar loop's values.
// Under CI the vector path must have run.
func TestVecLerp8(t *testing.T) {
	testtool.NeedVector(t, vec)
	rng := rand.New(rand.NewPCG(7, 8))
	for range 1000 {
		ts := make([]float32, 8)
		for i := range ts {
			ts[i] = rng.Float32()
		}
		ax, ay := rng.Float32()*6000, rng.Float32()*4000
		dx, dy := rng.Float32()*20-10, rng.Float32()*2-1
		px, py := make([]float32, 8), make([]float32, 8)
		did := vecLerp8(ts, px, py, ax, ay, dx, dy)
		if did != vec {
			t.Fatalf("vecLerp8 did %v with AVX2 %v", did, vec)
		}
		if !did {
			return
		}
		for n, tt := range ts {
			if wx, wy := ax+tt*dx, ay+tt*dy; px[n] != wx || py[n] != wy {
				t.Fatalf("pixel %d: (%v, %v), the scalar loop's (%v, %v)", n, px[n], py[n], wx, wy)
			}
		}
	}
}

func TestVecGains(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, w := range []int{1, 7, 8, 9, 63, 64, 6001} {
		a, b := make([]float32, w), make([]float32, w)
		for i := range a {
			a[i], b[i] = 1+rng.Float32(), 1+rng.Float32()
		}
		row := make([]float32, 3*w)
		for i := range row {
			row[i] = rng.Float32()
		}
		want := append([]float32(nil), row...)
		for x := range w {
			g := a[x] + 0.3*(b[x]-a[x])
			want[3*x] *= g
			want[3*x+1] *= g
			want[3*x+2] *= g
		}
		n := vecGains(row, a, b, 0.3)
		if vec && n != w&^7 || !vec && n != 0 {
			t.Fatalf("%d pixels: vecGains did %d with AVX2 %v", w, n, vec)
		}
		for x := n; x < w; x++ {
			g := a[x] + 0.3*(b[x]-a[x])
			row[3*x] *= g
			row[3*x+1] *= g
			row[3*x+2] *= g
		}
		for i := range row {
			if row[i] != want[i] {
				t.Fatalf("%d pixels: value %d is %v, the scalar loop's %v", w, i, row[i], want[i])
			}
		}
	}
}
