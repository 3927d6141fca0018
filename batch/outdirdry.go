package batch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// CheckOutDirDry is the dry run's version of CheckOutDir: it proves that
// the real run could create OUTDIR (when missing) and write into it, its
// records and its locks, leaving nothing behind. "Writable" is tested by
// doing what the run does first, making a directory: an empty probe
// directory is made and removed in OUTDIR, or in its nearest existing
// parent when OUTDIR does not exist yet, and in OUTDIR/.rawbatch and its
// state and locks directories when they exist. Permission bits alone would
// not tell: root passes them, and access(2) says yes on read-only and
// pseudo file systems (sysfs, procfs) where mkdir fails. A path in the way
// that is not a directory is an error too. Errors name the directory and
// the reason, as the real run's do.
func CheckOutDirDry(outDir string) error {
	if err := danglingOutDir(outDir); err != nil {
		return err
	}
	dir := outDir
	for {
		fi, err := os.Stat(dir)
		if err == nil {
			if !fi.IsDir() {
				if dir == outDir {
					return fmt.Errorf("output directory %s: it is a file, not a directory", outDir)
				}
				return fmt.Errorf("output directory %s: cannot be created: %s is a file, not a directory", outDir, dir)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return fmt.Errorf("output directory %s: %w", outDir, err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	if dir != outDir {
		if err := probeDir(dir); err != nil {
			if pseudoRefusal(err) {
				return fmt.Errorf("output directory %s cannot be created: %s does not take new directories (a pseudo file system such as /proc or /sys?): %w", outDir, dir, err)
			}
			return fmt.Errorf("output directory %s cannot be created: %s: %w", outDir, dir, err)
		}
		return nil
	}
	for _, d := range []string{outDir, filepath.Join(outDir, ".rawbatch"), filepath.Join(outDir, ".rawbatch", "state"), filepath.Join(outDir, ".rawbatch", "locks")} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			continue
		}
		if err := probeDir(d); err != nil {
			if pseudoRefusal(err) {
				return fmt.Errorf("output directory %s is not writable: it does not take new directories (a pseudo file system such as /proc or /sys?): %w", d, err)
			}
			return fmt.Errorf("output directory %s is not writable: %w", d, err)
		}
	}
	return nil
}

// probeDir makes and removes an empty directory in dir.
func probeDir(dir string) error {
	p, err := os.MkdirTemp(dir, ".rawbatch-probe-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return pe.Err // the directory is named by the caller
		}
		return err
	}
	return os.Remove(p)
}

// pseudoRefusal reports whether err, from making a directory in one that
// exists, is how a pseudo file system refuses: procfs answers ENOENT,
// sysfs EPERM (even to root; a permission problem is EACCES).
func pseudoRefusal(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EPERM)
}
