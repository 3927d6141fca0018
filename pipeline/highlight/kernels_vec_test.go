package highlight

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rawbatch/rawbatch/internal/testtool"
)

// kernelWidths are the row widths the kernel tests take: every width
// from 1 to 70 (vector part, tail, both; one to four blocks and a short
// last one), around a word of blocks (64·blockW) and 6001.
func kernelWidths() []int {
	ws := []int{64*blockW - 1, 64 * blockW, 64*blockW + 1, 6001}
	for w := 1; w <= 70; w++ {
		ws = append(ws, w)
	}
	return ws
}

// kernelPixels is n pixels (3 floats each) of mostly dark noise with a
// share `special` of values at and around lo, thr and minChromaLevel,
// signed zeros, negatives, values above 1, NaN and ±Inf.
func kernelPixels(rng *rand.Rand, n int, thr float32, special float64) []float32 {
	lo := thr - blendBand
	up := func(v float32) float32 { return math.Nextafter32(v, 2) }
	down := func(v float32) float32 { return math.Nextafter32(v, -2) }
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	values := []float32{lo, up(lo), down(lo), thr, up(thr), down(thr), minChromaLevel, up(minChromaLevel), down(minChromaLevel),
		0, float32(math.Copysign(0, -1)), -0.01, -1, 1, 1.5, nan, inf, -inf}
	p := make([]float32, 3*n)
	for i := range p {
		if rng.Float64() < special {
			p[i] = values[rng.IntN(len(values))]
		} else {
			p[i] = 0.6 * rng.Float32() * rng.Float32()
		}
	}
	return p
}

// TestVectorKernels: each vector kernel (kernels_simd.go) together with
// the scalar loop it leaves the rest to gives exactly what the scalar
// loop alone gives: flag's hot blocks against hotBlock on each block,
// features against pixelFeature on each pixel, the column sums against
// int64 sums, on rows of every width of kernelWidths, with few and with
// many special values (NaN beside a value above lo in one block, among
// others). Under CI the vector path must have run.
func TestVectorKernels(t *testing.T) {
	testtool.NeedVector(t, vec)
	rng := rand.New(rand.NewPCG(5, 6))
	ran := 0
	for _, w := range kernelWidths() {
		for _, special := range []float64{0.001, 0.02, 0.3} {
			for _, thr := range []float32{DefaultThreshold, 0.5} {
				p := kernelPixels(rng, w, thr, special)
				ran += checkFlag(t, p, w, thr)
				ran += checkFeatures(t, p, w, thr)
			}
		}
		ran += checkSums(t, rng, w)
	}
	if vec && ran == 0 {
		t.Fatal("the vector kernels did no element")
	}
}

// checkFlag compares flag on row p (w pixels) with hotBlock on each of
// its blocks, and returns how many blocks vecFlag did.
func checkFlag(t *testing.T, p []float32, w int, thr float32) int {
	t.Helper()
	lo := thr - blendBand
	rc := NewReconstructor(w, 1, thr)
	rc.flag(1, func(int) []float32 { return p })
	want := make([]uint64, rc.words)
	for b := 0; b*blockW < w; b++ {
		if hotBlock(p[3*b*blockW:3*min(w, (b+1)*blockW)], lo) {
			want[b/64] |= 1 << (b % 64)
		}
	}
	if got := rc.hotRow(0); !slices.Equal(got, want) {
		t.Fatalf("flag, %d pixels, threshold %v: blocks %x, scalar %x", w, thr, got, want)
	}
	return vecFlag(p, make([]uint64, rc.words), 0, lo)
}

// checkFeatures compares features on row p (w pixels) with pixelFeature
// on each pixel, and returns how many pixels vecFeatures did.
func checkFeatures(t *testing.T, p []float32, w int, thr float32) int {
	t.Helper()
	rc := NewReconstructor(w, 1, thr)
	got := make([]feature, w)
	for x := range got {
		got[x] = feature{-1, -1, -1, -1}
	}
	rc.features(p, got)
	for x := range got {
		if want := pixelFeature(p[3*x:3*x+3], thr); got[x] != want {
			t.Fatalf("features, %d pixels, threshold %v: pixel %d %v: %v, scalar %v", w, thr, x, p[3*x:3*x+3], got[x], want)
		}
	}
	return vecFeatures(p, make([]feature, w), thr)
}

// checkSums compares addFeatures and subFeatures on w pixels of any
// int32 features and int64 sums with the sums taken one by one, and
// returns how many pixels their kernels did.
func checkSums(t *testing.T, rng *rand.Rand, w int) int {
	t.Helper()
	f := make([]feature, w)
	col := make([]colSum, w)
	for x := range f {
		for k := range 4 {
			f[x][k] = int32(rng.Uint32())
			col[x][k] = int64(rng.Uint64() >> 2)
		}
	}
	f[0] = feature{math.MinInt32, math.MaxInt32, -1, 0}
	sum := slices.Clone(col)
	addFeatures(sum, f)
	diff := slices.Clone(col)
	subFeatures(diff, f)
	for x := range col {
		for k := range 4 {
			if a, s := col[x][k]+int64(f[x][k]), col[x][k]-int64(f[x][k]); sum[x][k] != a || diff[x][k] != s {
				t.Fatalf("%d pixels: pixel %d value %d: sum %d, difference %d, want %d, %d", w, x, k, sum[x][k], diff[x][k], a, s)
			}
		}
	}
	return vecAddFeatures(slices.Clone(col), f) + vecSubFeatures(slices.Clone(col), f)
}
