package thp

import (
	"syscall"
	"unsafe"
)

// advise gives the n bytes at p (whole huge pages) MADV_HUGEPAGE.
func advise(p unsafe.Pointer, n uintptr) {
	_ = syscall.Madvise(unsafe.Slice((*byte)(p), n), syscall.MADV_HUGEPAGE)
}
