package lensfun

/*
#include "rb_lensfun.h"
*/
import "C"

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
)

// XMLFiles returns the paths of the files named *.xml in dir, in name
// order. Each must be a regular file (or a symlink to one): a directory,
// named pipe, socket, device or dangling symlink named *.xml is an error
// naming it, found from the file's mode without opening it (opening a
// named pipe would block). A dir without any *.xml file is an error too.
func XMLFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("lensfun database directory: %w", err)
	}
	var names []string
	for _, e := range ents {
		if ok, _ := filepath.Match("*.xml", e.Name()); !ok {
			continue
		}
		p := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(p)
		if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			if fi, err = os.Stat(p); err != nil {
				return nil, fmt.Errorf("lensfun database %s: dangling symlink: %w", p, err)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("lensfun database %s: %w", p, err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("lensfun database %s: not a regular file (%s)", p, fileKind(fi.Mode()))
		}
		names = append(names, p)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("lensfun database directory %s: no *.xml files", dir)
	}
	sort.Strings(names)
	return names, nil
}

// fileKind names the type of a file mode that is not a regular file.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.Type().String()
}

// CheckDir loads every *.xml file of dir (XMLFiles) into an empty
// database, without lensfun's system database, and destroys it: the check
// of a --lens-db directory before any file is converted. It locks the
// calling goroutine to its OS thread for the time of the load. Errors
// name the file and wrap ErrFormat (a file that is not well-formed XML,
// with Go's parser's message, wellFormed; or one lensfun cannot parse,
// with its parser's message) or the os error of an unreadable file.
func CheckDir(dir string) error {
	names, err := XMLFiles(dir)
	if err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	beQuiet()
	loadMu.Lock()
	defer loadMu.Unlock()
	lastMessage() // clears the thread's last message
	db := C.lf_db_new()
	if db == nil {
		return fmt.Errorf("lensfun: lf_db_new failed")
	}
	defer C.lf_db_destroy(db)
	for _, name := range names {
		if err := wellFormed(name); err != nil {
			return err
		}
		if err := loadFile(db, name); err != nil {
			return err
		}
	}
	return nil
}

// errnoCode is the lfError lensfun returns for errno n (−n), for tests.
func errnoCode(n int32) C.lfError { return C.lfError(uint32(-n)) }
