//go:build !linux

package thp

import "unsafe"

// advise does nothing where there is no MADV_HUGEPAGE.
func advise(unsafe.Pointer, uintptr) {}
