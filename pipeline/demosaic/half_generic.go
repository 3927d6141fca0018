//go:build !(goexperiment.simd && amd64)

package demosaic

func vecHalf(r0, r1, dst []float32, red, g0, g1, blue int) int { return 0 }
