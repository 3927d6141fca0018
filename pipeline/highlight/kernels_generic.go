//go:build !(goexperiment.simd && amd64)

package highlight

// Without Go's SIMD support in the build (GOEXPERIMENT=simd on amd64)
// the scalar loops do every element: the vector kernels of
// kernels_simd.go do none.

const vec = false

func vecFlag(p []float32, bits []uint64, b int, lo float32) int { return b }

func vecFeatures(p []float32, f []feature, thr float32) int { return 0 }

func vecAddFeatures(col []colSum, f []feature) int { return 0 }

func vecSubFeatures(col []colSum, f []feature) int { return 0 }
