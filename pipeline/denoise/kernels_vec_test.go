package denoise

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rawbatch/rawbatch/internal/testtool"
)

// TestVectorKernels: each vector kernel (kernels_simd.go) together with
// the scalar loop it leaves the rest to gives exactly what the scalar
// loop alone gives, on rows of every length from 1 to 70 (the vector
// part, a tail, both) and of 6001, on noise-like coefficients with
// values at and around the thresholds and exact zeros. Under CI the
// vector path must have run (the Makefile builds with GOEXPERIMENT=simd;
// CI's machines have AVX2).
func TestVectorKernels(t *testing.T) {
	testtool.NeedVector(t, vec)
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
	// splitRow and mergeRow (whose column pairs the vector kernels take)
	// against their per-pixel forms, on rows of linear values with
	// negatives, zeros and 16-bit codes, both phases.
	for _, n := range lengths {
		for px := range 2 {
			src := make([]float32, 3*n)
			for i := range src {
				switch rng.IntN(6) {
				case 0:
					src[i] = float32(rng.IntN(65536)) * codeScale
				case 1:
					src[i] = -float32(rng.Float64() * 0.01)
				case 2:
					src[i] = 0
				default:
					src[i] = float32(rng.Float64() * 1.2)
				}
			}
			hw := (n + px + 1) / 2
			// The half rows hold a first row's sums already.
			yr, q1, q2 := make([]float32, n), data(hw), data(hw)
			wy, w1, w2 := make([]float32, n), append([]float32(nil), q1...), append([]float32(nil), q2...)
			splitRow(src, yr, q1, q2, px, stabCodes())
			for x := range n {
				y, c1, c2 := stab3(src[3*x:3*x+3], nil)
				wy[x] = y
				k := (x + px) / 2
				w1[k], w2[k] = w1[k]+c1, w2[k]+c2
				if x == 0 && px == 1 || x == n-1 && (x+px)%2 == 0 {
					w1[k], w2[k] = w1[k]+c1, w2[k]+c2 // a half column of one column counts it twice
				}
			}
			same(t, "splitRow luminance", n, yr, wy)
			same(t, "splitRow colour 1", n, q1, w1)
			same(t, "splitRow colour 2", n, q2, w2)

			cols := mergeColumns(n, hw, px)
			q1b, q2b := data(hw), data(hw)
			got, want := make([]float32, 3*n), make([]float32, 3*n)
			mergeRow(yr, q1, q1b, q2, q2b, cols, 0.75, got)
			for x := range n {
				ia, ib, tx := cols.xa[x], cols.xb[x], cols.txs[x]
				c1 := bilerp(q1[ia], q1[ib], q1b[ia], q1b[ib], tx, 0.75)
				c2 := bilerp(q2[ia], q2[ib], q2b[ia], q2b[ib], tx, 0.75)
				mergePixel(yr[x], c1, c2, want[3*x:3*x+3])
			}
			same(t, "mergeRow", n, got, want)
			if n >= 32 {
				ran += vecSplit(src[:48], make([]float32, 16), make([]float32, 8), make([]float32, 8))
			}
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

// TestBlurRows4: blurRows4 gives on each of its four rows what blurRows
// gives on it alone (the vertical pass of vecB3x4 and its scalar tail
// against vecB3's and its tail), on rows of every width from 1 to 70
// and of 6001, at every hole spacing of the cascades.
func TestBlurRows4(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	widths := []int{6001}
	for w := 1; w <= 70; w++ {
		widths = append(widths, w)
	}
	for _, w := range widths {
		for _, step := range []int{1, 2, 4, 8} {
			var r [8][]float32
			for i := range r {
				r[i] = make([]float32, w)
				for x := range r[i] {
					r[i][x] = float32(rng.NormFloat64())
				}
			}
			var out [4][]float32
			for k := range out {
				out[k] = make([]float32, w)
			}
			blurRows4(r, w, step, make([]float32, 4*w), out)
			for k := range out {
				want := make([]float32, w)
				blurRows([5][]float32{r[k], r[k+1], r[k+2], r[k+3], r[k+4]}, 1, w, step, make([]float32, w), want)
				for x := range want {
					if math.Float32bits(out[k][x]) != math.Float32bits(want[x]) {
						t.Fatalf("blurRows4, %d columns, step %d: row %d column %d is %v, blurRows' %v", w, step, k, x, out[k][x], want[x])
					}
				}
			}
		}
	}
}

// TestBlurRowsScalar: blurRows (its vector kernels: vecB3, vecB3Wide at
// hole spacings 4 and 8) gives bit for bit the B3 smoothing computed one
// pixel at a time, on rows of every width from 1 to 70 and of 6001, at
// every hole spacing of the cascades and one more.
func TestBlurRowsScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const k0, k1, k2 = 1.0 / 16, 4.0 / 16, 6.0 / 16
	widths := []int{6001}
	for w := 1; w <= 70; w++ {
		widths = append(widths, w)
	}
	for _, w := range widths {
		for _, step := range []int{1, 2, 4, 8, 16} {
			var r [5][]float32
			for i := range r {
				r[i] = make([]float32, w)
				for x := range r[i] {
					r[i][x] = float32(rng.NormFloat64())
				}
			}
			got := make([]float32, w)
			blurRows(r, 1, w, step, make([]float32, w), got)
			tmp := make([]float32, w)
			for x := range tmp {
				tmp[x] = (r[0][x]+r[4][x])*k0 + (r[1][x]+r[3][x])*k1 + r[2][x]*k2
			}
			for x := range w {
				want := (tmp[mirror(x-2*step, w)]+tmp[mirror(x+2*step, w)])*k0 +
					(tmp[mirror(x-step, w)]+tmp[mirror(x+step, w)])*k1 + tmp[x]*k2
				if math.Float32bits(got[x]) != math.Float32bits(want) {
					t.Fatalf("width %d, step %d: column %d is %v, want %v", w, step, x, got[x], want)
				}
			}
		}
	}
}
