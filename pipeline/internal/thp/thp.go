// Package thp backs large image buffers with transparent huge pages
// (THP: 2 MiB pages on x86-64 and arm64, Linux's MADV_HUGEPAGE advice).
//
// A 24 MP float image is 288 MB: in 4 KiB pages the kernel takes 70 000
// page faults to map it the first time it is written, and the TLB misses
// on every pass over it. Most systems enable THP only where a process
// asks for it (/sys/kernel/mm/transparent_hugepage/enabled = madvise, the
// default of Debian and Ubuntu), and Go's runtime does not ask. Buffers
// made here, before anything touches them, fault in 2 MiB at a time. On a
// system where THP is off (never) or on an OS without it the advice does
// nothing.
package thp

import "unsafe"

// Min is the smallest buffer, in bytes, that Advise advises: a smaller
// one holds at most one whole huge page.
const Min = 2 * hugePage

// hugePage is the huge page size, in bytes, of x86-64 and arm64 (with 4
// KiB base pages).
const hugePage = 2 << 20

// Advise asks for huge pages on the whole 2 MiB pages inside b (its first
// and last partial ones keep base pages: memory around b is not b's),
// when b is at least Min bytes. It is advice: memory already mapped keeps
// its pages until the kernel collapses them, and errors (THP not built
// into the kernel) are ignored.
func Advise[T any](b []T) {
	n := uintptr(len(b)) * unsafe.Sizeof(*new(T))
	if n < Min {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := (p + hugePage - 1) &^ (hugePage - 1)
	hi := (p + n) &^ (hugePage - 1)
	if hi > lo {
		advise(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), lo-p), hi-lo)
	}
}

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
