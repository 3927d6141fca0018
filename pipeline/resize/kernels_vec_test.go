package resize

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rawbatch/rawbatch/internal/testtool"
)

// TestVecHorizontal8: the vector horizontal pass of eight rows
// (vecHorizontal8) gives exactly horizontalRow's values, row by row, for
// downscales (with and without an extent from a box reduction) and
// upscales of many widths, with values at the edges, negatives, zeros
// and large numbers; rows that do not fill eight go through
// horizontalRows' scalar path. Under CI the vector path must have run.
func TestVecHorizontal8(t *testing.T) {
	testtool.NeedVector(t, vec)
	rng := rand.New(rand.NewPCG(11, 12))
	for _, c := range []struct {
		w, dw  int
		extent float64
	}{{1, 1, 1}, {2, 1, 2}, {5, 3, 5}, {9, 70, 9}, {70, 9, 70}, {100, 63, 100}, {720, 512, 720}, {1500, 512, 1500}, {3000, 2048, 3000}, {301, 97, 300.5}, {6001, 129, 6001}, {130, 65, 129.75}} {
		tb := makeWeightsExtent(c.w, c.extent, c.dw)
		for _, rows := range []int{8, 16, 11} {
			src, want, got := make([][]float32, rows), make([][]float32, rows), make([][]float32, rows)
			for y := range rows {
				src[y] = make([]float32, 3*c.w)
				for i := range src[y] {
					switch rng.IntN(8) {
					case 0:
						src[y][i] = 0
					case 1:
						src[y][i] = -rng.Float32()
					case 2:
						src[y][i] = 65535 * rng.Float32()
					default:
						src[y][i] = rng.Float32()
					}
				}
				want[y], got[y] = make([]float32, 3*c.dw), make([]float32, 3*c.dw)
				horizontalRow(want[y], src[y], 3, &tb)
			}
			horizontalRows(got, src, 3, &tb)
			for y := range rows {
				for i := range got[y] {
					if math.Float32bits(got[y][i]) != math.Float32bits(want[y][i]) {
						t.Fatalf("%d→%d px (extent %v), %d rows: row %d value %d is %v, horizontalRow's %v", c.w, c.dw, c.extent, rows, y, i, got[y][i], want[y][i])
					}
				}
			}
			if vec {
				blk, ob := make([]uint32, 24*tb.tileSpan), make([]uint32, 24*hTile)
				if !vecHorizontal8(got[:8], src[:8], &tb, blk, ob) {
					t.Fatalf("vecHorizontal8 did not run with AVX2")
				}
			}
		}
	}
}

// TestVecVertical: an output row of the vertical pass (verticalRow)
// gives exactly the scalar loop's values (the first tap's product, then
// each later tap's added in order) for 1 to maxTaps taps and more (tap
// by tap), over every row length from 1 to 40 and a long row; and a
// single tap (axpy), first or added, the scalar loop's.
func TestVecVertical(t *testing.T) {
	testtool.NeedVector(t, vec)
	rng := rand.New(rand.NewPCG(13, 14))
	for _, n := range append(seq(1, 40), 6001) {
		for _, taps := range []int{1, 2, 7, 8, 9, 13, 25, maxTaps, maxTaps + 5} {
			tb := weights{n: []int{taps}, off: []int{0}, w: make([]float32, taps+8)}
			rows := make([][]float32, taps)
			want := make([]float32, n)
			for k := range taps {
				tb.w[k] = rng.Float32() - 0.2
				rows[k] = make([]float32, n)
				for i := range rows[k] {
					rows[k][i] = rng.Float32()*2 - 1
				}
				for i := range want {
					if k == 0 {
						want[i] = tb.w[k] * rows[k][i]
					} else {
						want[i] += tb.w[k] * rows[k][i]
					}
				}
			}
			got := make([]float32, n)
			verticalRow(got, &tb, 0, func(k int) []float32 { return rows[k] })
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("length %d, %d taps: value %d is %v, the scalar loop's %v", n, taps, i, got[i], want[i])
				}
			}
		}
		row, acc := make([]float32, n), make([]float32, n)
		for i := range row {
			row[i], acc[i] = rng.Float32()*2-1, rng.Float32()*100
		}
		wt := rng.Float32() - 0.2
		for _, first := range []bool{true, false} {
			want := append([]float32(nil), acc...)
			for i := range want {
				if first {
					want[i] = wt * row[i]
				} else {
					want[i] += wt * row[i]
				}
			}
			got := append([]float32(nil), acc...)
			axpy(got, row, wt, first)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("length %d first %v: value %d is %v, the scalar loop's %v", n, first, i, got[i], want[i])
				}
			}
			if d := vecAxpy(append([]float32(nil), acc...), row, wt, first); vec && d != n&^7 || !vec && d != 0 {
				t.Fatalf("length %d: vecAxpy did %d with AVX2 %v", n, d, vec)
			}
		}
	}
}

func seq(a, b int) []int {
	var s []int
	for i := a; i <= b; i++ {
		s = append(s, i)
	}
	return s
}
