package lens

import (
	"math/rand/v2"
	"os"
	"testing"
)

// TestVecLerp8: the vector interpolation of an interval of eight pixels
// (vecLerp8, Nodes.row's) gives exactly the scalar loop's positions.
// Under CI the vector path must have run.
func TestVecLerp8(t *testing.T) {
	if os.Getenv("CI") != "" && !vec {
		t.Fatal("the AVX2 kernel did not run: built without GOEXPERIMENT=simd, or no AVX2")
	}
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
