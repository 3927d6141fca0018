//go:build !(goexperiment.simd && amd64)

package look

// Without Go's SIMD support in the build (GOEXPERIMENT=simd on amd64)
// the scalar loops do every pixel.

const vec = false

func vecGamutRows(pix []float32, lum [3]float32) int { return 0 }

func vecToneRows(lut []float32, pix []float32) int { return 0 }
