//go:build !(goexperiment.simd && amd64)

package demosaic

// Without Go's SIMD support in the build (GOEXPERIMENT=simd on amd64),
// RCD's scalar loops do every column: the vector kernels of rcd_simd.go
// do none.

func vecNorm(src []uint16, out []float32, b0, s0, b1, s1 float32) int { return 0 }

func vecLoad(w *[winLen]float32, p0, p1, x, end int) int { return x }

func vecVH(w *[winLen]float32, x, end int) int { return x }

func vecVHRatio(w *[winLen]float32, x, end int) int { return x }

func vecLowPass(w *[winLen]float32, x, end int) int { return x }

func vecDiffV(w *[winLen]float32, x, end int) int { return x }

func vecDiffH(w *[winLen]float32, x, end int) int { return x }

func vecGreen(w *[winLen]float32, x, end int) int { return x }

func vecPQ(w *[winLen]float32, x, end int) int { return x }

func vecPQRatio(w *[winLen]float32, x, end int) int { return x }

func vecOpposite(w *[winLen]float32, op *[7 * spanX]float32, x, end int) int { return x }

func vecDiagDiffs(w *[winLen]float32, op *[3 * spanX]float32, x, end int) int { return x }

func vecDiffRBV(w *[winLen]float32, x, end int) int { return x }

func vecDiffRBH(w *[winLen]float32, x, end int) int { return x }

func vecRedBlue(w *[winLen]float32, x, end int) int { return x }
