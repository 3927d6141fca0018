// Package atomicfile writes a small file so that readers see either its
// old content or the whole new one, and a crash leaves one of the two: the
// data goes to a temporary file in the same directory, which is fsynced,
// given the mode fileperm.File (0666 minus the umask), renamed onto the
// path, and then the directory is fsynced so the rename is durable.
//
// The run report, failed.jsonl (package pipeline) and the output records
// (package state) are written with it. The stage cache (package cache)
// keeps its own temp-and-rename: cache imports nothing of rawbatch (the
// import rule in docs/architecture.md), and its entries deliberately skip
// both fsyncs (they are a discardable copy, usually on tmpfs) and keep
// os.CreateTemp's 0600.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rawbatch/rawbatch/internal/fileperm"
)

// ErrDirSync marks an error of the last step, the fsync of the directory:
// path then already holds the new data, only its durability across a
// crash is in doubt.
var ErrDirSync = errors.New("syncing the directory")

// Options tune Write. The zero value is usable.
type Options struct {
	// Pattern is the temporary file's name pattern for os.CreateTemp
	// ("*" replaced by a random string); "" means ".tmp-*".
	Pattern string
	// Create makes the temporary file in dir; nil means os.CreateTemp.
	Create func(dir, pattern string) (*os.File, error)
	// BeforeRename, when set, runs after the temporary file (named tmp) is
	// written, fsynced and closed, before the rename; an error from it
	// fails Write (a test hook).
	BeforeRename func(tmp string) error
}

// Write replaces path's content with data atomically (see the package
// comment). On an error before the rename the temporary file is removed
// and path is unchanged; the error is os's (creating, writing, syncing,
// chmod, rename), or BeforeRename's. An error syncing the directory after
// the rename wraps ErrDirSync.
func Write(path string, data []byte, o Options) (err error) {
	dir := filepath.Dir(path)
	pattern, create := o.Pattern, o.Create
	if pattern == "" {
		pattern = ".tmp-*"
	}
	if create == nil {
		create = os.CreateTemp
	}
	f, err := create(dir, pattern)
	if err != nil {
		return err
	}
	tmp := f.Name()
	closed, renamed := false, false
	defer func() {
		if err != nil && !renamed {
			if !closed {
				f.Close()
			}
			os.Remove(tmp)
		}
	}()
	if err = f.Chmod(fileperm.File()); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	closed = true
	if err = f.Close(); err != nil {
		return err
	}
	if o.BeforeRename != nil {
		if err = o.BeforeRename(tmp); err != nil {
			return err
		}
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	renamed = true
	d, err := os.Open(dir)
	if err == nil {
		err = d.Sync()
		d.Close()
	}
	if err != nil {
		return fmt.Errorf("%w %s: %w", ErrDirSync, dir, err)
	}
	return nil
}
