//go:build !linux

package thp

// advise does nothing where there is no MADV_HUGEPAGE.
func advise(uintptr, uintptr, bool) {}
