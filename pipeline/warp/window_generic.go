//go:build !(goexperiment.simd && amd64)

package warp

import "unsafe"

// Without Go's SIMD support in the build (GOEXPERIMENT=simd on amd64)
// every position takes the scalar path.

func vecSample8(px, py []float32, ch, w int, xMax, yMax float32, rows [][]float32, lo int, out []float32) bool {
	return false
}

func vecDeinterleave3(r, g, b, src []float32) int { return 0 }

// vec is whether the vector path runs: never in this build.
const vec = false

func vecSampleRun(win *Window, ptrs []unsafe.Pointer, ch int, sx, sy, dst []float32, skip []int32) []int32 {
	for g := range len(dst) / 8 {
		skip = append(skip, int32(g))
	}
	return skip
}

func vecInterleave3(r, g, b, dst []float32) int { return 0 }
