package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/rawbatch/rawbatch/internal/bytetext"
	"golang.org/x/sys/unix"
)

// OutputNameError checks, before anything is written, that the output at
// path and its temporary files (TempPattern) can exist: each of their
// names fits in NAME_MAX bytes of the file system that holds path's
// directory (statfs's f_namelen; maxNameBytes when it cannot be asked),
// and each path in PATH_MAX bytes (with its terminating NUL). A file with
// one output that cannot exist fails at planning, with none of its
// outputs written, instead of at the rename of that output after others
// are in place. The error names the name or path and its limit.
func OutputNameError(path string) error {
	dir, base := filepath.Dir(path), filepath.Base(path)
	limit := nameMax(dir)
	if len(base) > limit {
		return fmt.Errorf("its output name %s is %d bytes long, longer than the %d bytes a file name may have in %s (shorten it: --name)",
			bytetext.Escape(base), len(base), limit, bytetext.Escape(dir))
	}
	temp := longestTempName(path)
	if len(temp) > limit {
		return fmt.Errorf("the temporary name of its output %s (%s...) is %d bytes long, longer than the %d bytes a file name may have in %s (shorten it: --name)",
			bytetext.Escape(base), bytetext.Escape(TempPrefix+tempStem(path)), len(temp), limit, bytetext.Escape(dir))
	}
	for _, p := range []string{path, filepath.Join(dir, temp)} {
		if len(p)+1 > unix.PathMax {
			return fmt.Errorf("its output path %s is %d bytes long, longer than the %d bytes a path may have (PATH_MAX; use a shorter output directory or --name)",
				bytetext.Escape(path), len(p), unix.PathMax-1)
		}
	}
	return nil
}

// nameMaxOf caches nameMax per directory.
var nameMaxOf sync.Map

// nameMax is the longest file name in bytes in dir, or in its nearest
// existing ancestor when dir is not made yet (statfs f_namelen), and
// maxNameBytes when it cannot be asked.
func nameMax(dir string) int {
	if n, ok := nameMaxOf.Load(dir); ok {
		return n.(int)
	}
	n := maxNameBytes
	for d := dir; ; {
		var st unix.Statfs_t
		if err := unix.Statfs(d, &st); err == nil {
			if st.Namelen > 0 {
				n = int(st.Namelen)
			}
			break
		} else if !os.IsNotExist(err) {
			break
		}
		up := filepath.Dir(d)
		if up == d {
			break
		}
		d = up
	}
	nameMaxOf.Store(dir, n)
	return n
}
