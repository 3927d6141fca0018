package par

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// TestRowsCoversOnce: every row is visited exactly once, whatever the
// number of rows and processors.
func TestRowsCoversOnce(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(prev)
	for _, procs := range []int{1, 2, 5} {
		runtime.GOMAXPROCS(procs)
		for _, n := range []int{0, 1, Block - 1, Block, Block + 1, 1000, 1003} {
			seen := make([]atomic.Int32, n)
			Rows(n, func(lo, hi int) {
				if lo < 0 || hi > n || lo >= hi {
					t.Errorf("n=%d: range [%d,%d)", n, lo, hi)
					return
				}
				for y := lo; y < hi; y++ {
					seen[y].Add(1)
				}
			})
			for y := range seen {
				if c := seen[y].Load(); c != 1 {
					t.Fatalf("procs=%d n=%d: row %d visited %d times", procs, n, y, c)
				}
			}
		}
	}
}
