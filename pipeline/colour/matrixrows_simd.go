//go:build goexperiment.simd && amd64

package colour

import (
	"simd/archsimd"

	"github.com/rawbatch/rawbatch/pipeline/internal/rgb8"
)

// vecMulRows is MulRows on the first multiple of 8 pixels of px; it
// returns how many pixels it did.
func vecMulRows(m *[3][3]float32, px []float32) int {
	if !vec {
		return 0
	}
	n := len(px) / 3 &^ 7
	m00, m01, m02 := archsimd.BroadcastFloat32x8(m[0][0]), archsimd.BroadcastFloat32x8(m[0][1]), archsimd.BroadcastFloat32x8(m[0][2])
	m10, m11, m12 := archsimd.BroadcastFloat32x8(m[1][0]), archsimd.BroadcastFloat32x8(m[1][1]), archsimd.BroadcastFloat32x8(m[1][2])
	m20, m21, m22 := archsimd.BroadcastFloat32x8(m[2][0]), archsimd.BroadcastFloat32x8(m[2][1]), archsimd.BroadcastFloat32x8(m[2][2])
	for x := 0; x < n; x += 8 {
		p := (*[24]float32)(px[3*x : 3*x+24])
		r, g, b := rgb8.Split(p)
		rgb8.Join(m00.Mul(r).Add(m01.Mul(g)).Add(m02.Mul(b)), m10.Mul(r).Add(m11.Mul(g)).Add(m12.Mul(b)), m20.Mul(r).Add(m21.Mul(g)).Add(m22.Mul(b)), p)
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// vecScaleRows is ScaleRows on the first multiple of 8 values of px; it
// returns how many it did.
func vecScaleRows(px []float32, g float32) int {
	if !vec {
		return 0
	}
	n := len(px) &^ 7
	G := archsimd.BroadcastFloat32x8(g)
	for i := 0; i < n; i += 8 {
		v := (*[8]float32)(px[i : i+8])
		archsimd.LoadFloat32x8(v).Mul(G).Store(v)
	}
	archsimd.ClearAVXUpperBits()
	return n
}
