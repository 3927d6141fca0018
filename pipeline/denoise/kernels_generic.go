//go:build !(goexperiment.simd && amd64)

package denoise

// Without Go's SIMD support in the build (GOEXPERIMENT=simd on amd64),
// the scalar loops do every element: the vector kernels of
// kernels_simd.go do none.

const vec = false

func vecB3(a0, a1, a2, a3, a4, out []float32, k0, k1, k2 float32) int { return 0 }

func vecB3x4(r [8][]float32, t [4][]float32) int { return 0 }

func vecB3Wide(tmp, out []float32, step, m int) int { return 0 }

func vecSum4(d0, c1, c2, c3, c4 []float32, t1, t2, t3 float32) int { return 0 }

func vecGarroteKeys(c0, c1 []float32, t2 float32, p, n []uint32) int { return 0 }

func vecGuard(pu, pm, pd, nu, nm, nd []uint32, out []float32, m float32) int { return 0 }

func vecSplit(s, ys, q1, q2 []float32) int { return 0 }

func vecMergePairs(p1a, p1b, p2a, p2b, ys, d []float32, n int, ty float32) int { return 0 }

func vecBlur7(r0, r1, r2, r3, r4, r5, r6, tmp []float32, k0, k1, k2, k3 float32) int { return 0 }

func vecSharpen3(px, ly, tmp []float32, x, end int, k0, k1, k2, k3, a float32) int { return x }

func vecLum(p, l []float32) int { return 0 }
