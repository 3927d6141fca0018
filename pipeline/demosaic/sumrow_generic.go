//go:build !(goexperiment.simd && amd64)

package demosaic

// Without Go's SIMD support in the build (GOEXPERIMENT=simd on amd64),
// SumRow's scalar loop does every column.

const vec = false

func vecSumRow(row []uint16, lo, hi, clipAt [2]uint16, sum []uint32, clipped []uint16) int {
	return 0
}
