//go:build !(goexperiment.simd && amd64)

package lens

// Without Go's SIMD support in the build (GOEXPERIMENT=simd on amd64)
// the scalar loop does every pixel.

const vec = false

func vecLerp8(t, px, py []float32, ax, ay, dx, dy float32) bool { return false }

func vecGains(row, a, b []float32, t float32) int { return 0 }

func vecOneGain(one, row []float32) int { return 0 }

func vecGainsPlanar(r, g, bl, row, a, b []float32, t float32) int { return 0 }

func vecRow(lx, ly, dx, dy, px, py []float32, n int) int { return 0 }

func vecLerpRow(a, b []float32, t float32, l []float32) int { return 0 }

func vecDiffRow(l, d []float32) int { return 0 }
