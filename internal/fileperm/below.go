package fileperm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// LinkError is OpenBelow's refusal: Path, a directory between the root and
// the directory asked for, is a symbolic link or not a directory (What:
// "a symbolic link", "not a directory").
type LinkError struct{ Path, What string }

func (e *LinkError) Error() string {
	return fmt.Sprintf("%s is %s; refusing to write through it (outputs stay inside the output directory): remove it, or choose another output directory", e.Path, e.What)
}

// OpenBelow opens dir, a directory under root, walking from root one
// component at a time (openat with O_NOFOLLOW and O_DIRECTORY; with
// create, mkdirat first), so that no symbolic link below root is
// followed; root itself, the user's choice, may be one. The directory
// returned stays the one walked to even if a component is later replaced
// by a link: files made and renamed relative to it (openat, renameat)
// stay under root. A dir not under root (or root "") is opened as it is
// (made first with create). Errors: a *LinkError naming the component,
// and those of the system calls naming the directory; without create, a
// component that does not exist is such an error (fs.ErrNotExist).
func OpenBelow(root, dir string, create bool) (*os.File, error) {
	rel, err := filepath.Rel(root, dir)
	if root == "" || err != nil || !filepath.IsLocal(rel) {
		fd, err := openDir(dir, create)
		if err != nil {
			return nil, err
		}
		return os.NewFile(uintptr(fd), dir), nil
	}
	fd, err := openDir(root, create)
	if err != nil {
		return nil, err
	}
	at := root
	if rel != "." {
		for _, name := range strings.Split(rel, string(filepath.Separator)) {
			at = filepath.Join(at, name)
			if create {
				if err := unix.Mkdirat(fd, name, 0o777); err != nil && err != unix.EEXIST {
					unix.Close(fd)
					return nil, &os.PathError{Op: "mkdir", Path: at, Err: err}
				}
			}
			next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err == unix.ELOOP || err == unix.ENOTDIR {
				what := "not a directory"
				var st unix.Stat_t
				if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
					what = "a symbolic link"
				}
				unix.Close(fd)
				return nil, &LinkError{Path: at, What: what}
			}
			unix.Close(fd)
			if err != nil {
				return nil, &os.PathError{Op: "open", Path: at, Err: err}
			}
			fd = next
		}
	}
	return os.NewFile(uintptr(fd), at), nil
}

// openDir opens the directory at path as it is (links followed), made
// first with create.
func openDir(path string, create bool) (int, error) {
	if create {
		if err := os.MkdirAll(path, 0o777); err != nil {
			return -1, err
		}
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}
