package thp

import "syscall"

// advise gives the n bytes at address p (whole huge pages)
// MADV_HUGEPAGE, or MADV_NOHUGEPAGE when huge is false (madvise(2)
// called with the address as an integer: nothing here dereferences it).
func advise(p, n uintptr, huge bool) {
	a := uintptr(syscall.MADV_NOHUGEPAGE)
	if huge {
		a = syscall.MADV_HUGEPAGE
	}
	syscall.Syscall(syscall.SYS_MADVISE, p, n, a)
}
