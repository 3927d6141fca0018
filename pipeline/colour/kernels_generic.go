//go:build !(goexperiment.simd && amd64)

package colour

// Without Go's SIMD support in the build (GOEXPERIMENT=simd on amd64)
// the scalar loops do every value and pixel.

const vec = false

func vecQuantiseLinear16(dst []uint16, src []float32, inv float32) int { return 0 }

func vecDequantiseLinear16(dst []float32, src []uint16, scale float32) int { return 0 }

func vecMulRows(m *[3][3]float32, px []float32) int { return 0 }

func vecScaleRows(px []float32, g float32) int { return 0 }
