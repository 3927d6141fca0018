//go:build !(goexperiment.simd && amd64)

package resize

import "unsafe"

// Without Go's SIMD support in the build (GOEXPERIMENT=simd on amd64),
// the scalar loops do every element: the vector kernels of
// kernels_simd.go do none.

const vec = false

// hTile is kernels_simd.go's tile of output pixels (the weights' tileSpan).
const hTile = 64

func vecVertical(dst []float32, rows *[maxTaps]unsafe.Pointer, n int, ws []float32) int { return 0 }

func vecAxpy(dst, row []float32, wt float32, first bool) int { return 0 }

func vecHorizontal8(dst, src [][]float32, t *weights, blk, ob []uint32) bool { return false }
