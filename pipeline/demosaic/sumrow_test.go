package demosaic

import (
	"math/rand/v2"
	"testing"
)

// TestSumRow: SumRow's sums and clipped counts equal a plain loop's over
// rows of random samples, lengths and bounds (the vector path's lanes and
// the scalar tail), added onto non-zero sums, with bounds differing by
// column parity.
func TestSumRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := rng.IntN(70)
		if trial == 0 {
			n = 6000
		}
		row := make([]uint16, n)
		for i := range row {
			row[i] = uint16(rng.IntN(65536))
			if rng.IntN(4) == 0 {
				row[i] = uint16(rng.IntN(20000))
			}
		}
		var lo, hi, cl [2]uint16
		for p := range 2 {
			lo[p] = uint16(rng.IntN(2048))
			hi[p] = lo[p] + uint16(rng.IntN(40000))
			cl[p] = lo[p] + uint16(rng.IntN(int(hi[p]-lo[p])+1))
		}
		sum, clipped := make([]uint32, n+3), make([]uint16, n+3)
		wantSum, wantClip := make([]uint32, n+3), make([]uint16, n+3)
		for i := range sum {
			sum[i] = uint32(rng.IntN(1 << 20))
			clipped[i] = uint16(rng.IntN(100))
			wantSum[i], wantClip[i] = sum[i], clipped[i]
		}
		for x, v := range row {
			v = min(max(v, lo[x%2]), hi[x%2])
			wantSum[x] += uint32(v)
			if v >= cl[x%2] {
				wantClip[x]++
			}
		}
		SumRow(row, lo, hi, cl, sum, clipped)
		for x := range sum {
			if sum[x] != wantSum[x] || clipped[x] != wantClip[x] {
				t.Fatalf("trial %d (length %d): column %d: sum %d, clipped %d; want %d, %d", trial, n, x, sum[x], clipped[x], wantSum[x], wantClip[x])
			}
		}
	}
}
