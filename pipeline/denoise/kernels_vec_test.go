package denoise

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// TestVectorKernels: each vector kernel (kernels_simd.go) together with
// the scalar loop it leaves the rest to gives exactly what the scalar
// loop alone gives, on rows of every length from 1 to 70 (the vector
// part, a tail, both) and of 6001, on noise-like coefficients with
// values at and around the thresholds and exact zeros. Under CI the
// vector path must have run (the Makefile builds with GOEXPERIMENT=simd;
// CI's machines have AVX2).
func TestVectorKernels(t *testing.T) {
	if os.Getenv("CI") != "" && !vec {
		t.Fatal("the AVX2 kernels did not run: built without GOEXPERIMENT=simd, or no AVX2")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	data := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			switch rng.IntN(10) {
			case 0:
				s[i] = 0
			case 1:
				s[i] = float32(math.Copysign(0.01, rng.Float64()-0.5)) // at the threshold (t2 = 1e-4)
			default:
				s[i] = float32(rng.NormFloat64() * 0.02)
			}
		}
		return s
	}
	lengths := []int{6001}
	for n := 1; n <= 70; n++ {
		lengths = append(lengths, n)
	}
	ran := 0
	for _, n := range lengths {
		a := [5][]float32{data(n), data(n), data(n), data(n), data(n)}
		const k0, k1, k2 = 1.0 / 16, 4.0 / 16, 6.0 / 16

		got, want := make([]float32, n), make([]float32, n)
		v := vecB3(a[0], a[1], a[2], a[3], a[4], got, k0, k1, k2)
		for x := v; x < n; x++ {
			got[x] = (a[0][x]+a[4][x])*k0 + (a[1][x]+a[3][x])*k1 + a[2][x]*k2
		}
		for x := range want {
			want[x] = (a[0][x]+a[4][x])*k0 + (a[1][x]+a[3][x])*k1 + a[2][x]*k2
		}
		same(t, "vecB3", n, got, want)
		ran += v

		const t1, t2, t3 = 1e-4, 4e-5, 1e-5
		d0 := data(n)
		got = append(got[:0], d0...)
		v = vecSum4(got, a[0], a[1], a[2], a[3], t1, t2, t3)
		for x := v; x < n; x++ {
			got[x] = sum4(got[x], a[0][x], a[1][x], a[2][x], a[3][x], t1, t2, t3)
		}
		for x := range want {
			want[x] = sum4(d0[x], a[0][x], a[1][x], a[2][x], a[3][x], t1, t2, t3)
		}
		same(t, "vecSum4", n, got, want)
		ran += v

		p, q := make([]uint32, n), make([]uint32, n)
		v = vecGarroteKeys(a[0], a[1], t1, p, q)
		for x := v; x < n; x++ {
			p[x], q[x] = signKeys(garrote(a[0][x]-a[1][x], t1))
		}
		for x := range n {
			wp, wq := signKeys(garrote(a[0][x]-a[1][x], t1))
			if p[x] != wp || q[x] != wq {
				t.Fatalf("vecGarroteKeys, %d columns: column %d keys %x %x, scalar %x %x", n, x, p[x], q[x], wp, wq)
			}
		}
		ran += v

		var keys [6][]uint32
		for i := 0; i < 6; i += 2 {
			keys[i], keys[i+1] = make([]uint32, n), make([]uint32, n)
			r := data(n)
			for x, c := range r {
				keys[i][x], keys[i+1][x] = signKeys(c)
			}
		}
		pu, nu, pm, nm, pd, nd := keys[0], keys[1], keys[2], keys[3], keys[4], keys[5]
		got = make([]float32, n)
		guardKeys(pu, pm, pd, nu, nm, nd, got, 0.003)
		for x := range want {
			want[x] = guardKey(pu, pm, pd, nu, nm, nd, x, 0.003)
		}
		same(t, "guardKeys", n, got, want)
		if n >= 10 {
			ran += vecGuard(pu, pm, pd, nu, nm, nd, make([]float32, n), 0.003)
		}
	}
	t.Logf("AVX2 kernels: %v; %d elements by them", vec, ran)
	if vec && ran == 0 {
		t.Fatal("the vector kernels did nothing")
	}
}

// sum4 is sumDetails' scalar loop body for one pixel.
func sum4(d, b, c2, c3, c4, t1, t2, t3 float32) float32 {
	v := d + garrote(b-c2, t1)
	v += garrote(c2-c3, t2)
	v = v + garrote(c3-c4, t3)
	return v + c4
}

// same fails unless got and want are equal value for value (as floats:
// the sign of a zero aside).
func same(t *testing.T, what string, n int, got, want []float32) {
	t.Helper()
	for x := range want {
		if got[x] != want[x] {
			t.Fatalf("%s, %d columns: column %d is %v, the scalar loop's %v", what, n, x, got[x], want[x])
		}
	}
}
