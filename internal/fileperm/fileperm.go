// Package fileperm gives the permission bits rawbatch's files are made
// with: 0666 minus the process's umask, as open(2) with O_CREAT and mode
// 0666 would give. Files made by os.CreateTemp start as 0600 whatever the
// umask, so they are chmod'ed to File before they are renamed into place.
package fileperm

import (
	"os"
	"syscall"
)

// umask is read once, while the package is initialised: package
// initialisation runs on one goroutine before main, so no other part of
// the program creates a file in the instant the mask is 0. syscall.Umask
// both sets and returns the mask (there is no read-only call), hence the
// two calls.
var umask = func() int {
	old := syscall.Umask(0)
	syscall.Umask(old)
	return old
}()

// Umask is the process's file-mode creation mask read at start (for
// example 0o022 or 0o077).
func Umask() int { return umask }

// File is the mode for a new regular file that holds the user's data (an
// output image, a record, a report): 0666 &^ umask, so 0644 under umask 022
// and 0600 under umask 077.
func File() os.FileMode { return 0o666 &^ os.FileMode(umask) }
