// Package par runs the row loops of image stages on several goroutines.
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Block is how many rows a goroutine takes at a time.
const Block = 8

// Rows calls f(lo, hi) for disjoint row ranges [lo, hi) that together cover
// [0, n), on up to runtime.GOMAXPROCS(0) goroutines (the caller's among
// them) handing out Block rows at a time, and returns when all calls have
// returned. With one processor,
// or n ≤ Block, it makes the single call f(0, n) on the caller's goroutine.
// f must be safe to call concurrently for disjoint ranges; results must not
// depend on how the rows are split (each output row computed from its own
// inputs), so they are the same on any machine.
func Rows(n int, f func(lo, hi int)) { Range(n, Block, f) }

// Range is Rows with block indexes at a time instead of Block: Range(n, 1,
// f) runs every index as its own task.
func Range(n, block int, f func(lo, hi int)) { RangeOn(runtime.GOMAXPROCS(0), n, block, f) }

// RangeOn is Range on at most threads goroutines instead of GOMAXPROCS
// (a stage told its thread count; threads ≤ 0: GOMAXPROCS).
func RangeOn(threads, n, block int, f func(lo, hi int)) {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	block = max(block, 1)
	workers := min(threads, (n+block-1)/block)
	if workers <= 1 {
		if n > 0 {
			f(0, n)
		}
		return
	}
	// The caller works too, and waits for the blocks, not the
	// goroutines: a goroutine that starts after every block is taken
	// (a busy or slow-to-wake processor) is not waited for.
	var next atomic.Int64
	var wg sync.WaitGroup
	wg.Add((n + block - 1) / block)
	work := func() {
		for {
			lo := int(next.Add(int64(block))) - block
			if lo >= n {
				return
			}
			f(lo, min(lo+block, n))
			wg.Done()
		}
	}
	for range workers - 1 {
		go work()
	}
	work()
	wg.Wait()
}
