// Package fileperm gives the permission bits rawbatch's files are made
// with: 0666 minus the process's umask, as open(2) with O_CREAT and mode
// 0666 would give. Files made by os.CreateTemp start as 0600 whatever the
// umask, so they are chmod'ed to File before they are renamed into place.
package fileperm

import (
	"fmt"
	"os"
	"slices"
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

// CheckDir refuses a directory of rawbatch's own (OUTDIR/.rawbatch and
// what is under it) that someone else could have planted to redirect what
// rawbatch writes into it. dir is not followed if it is a symbolic link:
// it must be a directory itself, owned by the current user, by root (who
// could write anywhere anyway), or by one of the current user's groups (a
// directory a group shares under umask 002, whose members may use it;
// what they could plant in it, each file is checked for where it is
// opened). The error names dir and says why. The packages that must import
// nothing of rawbatch (lock, cache) keep their own copies of this rule.
func CheckDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link; refusing to follow it (it may have been planted to redirect rawbatch's writes): replace it with a directory", dir)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	uid := os.Getuid()
	if int(st.Uid) == uid || st.Uid == 0 || int(st.Gid) == os.Getgid() {
		return nil
	}
	if groups, err := os.Getgroups(); err == nil && slices.Contains(groups, int(st.Gid)) {
		return nil
	}
	return fmt.Errorf("%s is owned by uid %d and group %d, neither the current user (uid %d) nor one of its groups; refusing to use it (another user may have created it to redirect rawbatch's writes)", dir, st.Uid, st.Gid, uid)
}
