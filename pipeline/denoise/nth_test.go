package denoise

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestNthIsSortedIndex: nth returns what sorting puts at index k, for
// random data with and without ties, every k of small slices and the
// median of large ones.
func TestNthIsSortedIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 2, 3, 5, 8, 33, 1000, 65537} {
		for _, levels := range []int{2, 7, 1 << 30} {
			d := make([]float32, n)
			for i := range d {
				d[i] = float32(rng.IntN(levels)) / 7
			}
			sorted := slices.Clone(d)
			slices.Sort(sorted)
			ks := []int{n / 2}
			if n <= 33 {
				ks = ks[:0]
				for k := range n {
					ks = append(ks, k)
				}
			}
			for _, k := range ks {
				if got := nth(slices.Clone(d), k); got != sorted[k] {
					t.Fatalf("n %d levels %d k %d: nth %g, sorted %g", n, levels, k, got, sorted[k])
				}
			}
		}
	}
}
