// Package thp backs large image buffers with transparent huge pages
// (THP: 2 MiB pages on x86-64 and arm64, Linux's MADV_HUGEPAGE advice).
//
// A 24 MP float image is 288 MB: in 4 KiB pages the kernel takes 70 000
// page faults to map it the first time it is written, and the TLB misses
// on every pass over it. Most systems enable THP only where a process
// asks for it (/sys/kernel/mm/transparent_hugepage/enabled = madvise, the
// default of Debian and Ubuntu), and Go's runtime does not ask. Buffers
// made here, before anything touches them, fault in 2 MiB at a time.
//
// The advice outlives a buffer: the heap reuses its addresses for other
// memory, which khugepaged would then collapse into huge pages, a few
// pages in use holding 2 MiB each (the growth that made Go's runtime stop
// advising its heap). So the work that makes buffers holds the advice
// (Hold) and lets it go when done (the returned func): once nothing holds
// it, every range advised is set back to base pages (MADV_NOHUGEPAGE,
// which leaves the huge pages already mapped). Where THP is always on,
// off, or missing, nothing is advised.
package thp

import (
	"os"
	"strings"
	"sync"
	"unsafe"
)

// Min is the smallest buffer, in bytes, that Advise advises: a smaller
// one holds at most one whole huge page.
const Min = 2 * hugePage

// hugePage is the huge page size, in bytes, of x86-64 and arm64 (with 4
// KiB base pages).
const hugePage = 2 << 20

// Advise asks for huge pages on the whole 2 MiB pages inside b (its first
// and last partial ones keep base pages: memory around b is not b's),
// when b is at least Min bytes and THP is on request only (madvise). It
// is advice: memory already mapped keeps its pages, and errors (THP not
// built into the kernel) are ignored. The range is set back once the last
// Hold is let go.
func Advise[T any](b []T) {
	n := uintptr(len(b)) * unsafe.Sizeof(*new(T))
	if n < Min || !onRequest() {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := (p + hugePage - 1) &^ (hugePage - 1)
	hi := (p + n) &^ (hugePage - 1)
	if hi <= lo {
		return
	}
	r := span{lo, hi - lo}
	advise(r.p, r.n, true)
	mu.Lock()
	advised = append(advised, r)
	mu.Unlock()
}

// span is an advised range: n bytes at address p (an integer, which
// keeps nothing alive: the heap keeps its address space, so the range
// stays mapped whatever uses it later).
type span struct {
	p, n uintptr
}

var (
	mu      sync.Mutex
	holds   int
	advised []span
)

// Hold keeps the advice of the ranges advised until the returned func is
// called (a conversion holds it while its buffers live); the last to let
// go sets every advised range back to base pages.
func Hold() (release func()) {
	mu.Lock()
	holds++
	mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			if holds--; holds == 0 {
				for _, r := range advised {
					advise(r.p, r.n, false)
				}
				advised = advised[:0]
			}
		})
	}
}

// onRequest reports whether THP is given on request only (the "madvise"
// mode of /sys/kernel/mm/transparent_hugepage/enabled), read once.
var onRequest = sync.OnceValue(func() bool {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	return err == nil && strings.Contains(string(b), "[madvise]")
})

// Floats returns a new zeroed slice of n float32 values advised for huge
// pages (Advise) before anything touches it.
func Floats(n int) []float32 {
	b := make([]float32, n)
	Advise(b)
	return b
}

// Uint16s is Floats for uint16 values.
func Uint16s(n int) []uint16 {
	b := make([]uint16, n)
	Advise(b)
	return b
}

// Bytes is Floats for bytes.
func Bytes(n int) []byte {
	b := make([]byte, n)
	Advise(b)
	return b
}
