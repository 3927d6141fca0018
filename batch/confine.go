package batch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/rawbatch/rawbatch/internal/rawerr"
)

// Confinement is the directories a worker of the multi-host mode may read
// inputs from and write outputs, records and locks into (`rawbatch work
// --allow DIR`): a job is run with the worker user's rights, and any
// client of the broker can queue one, so its paths are checked against
// these before anything is read or written (Admit).
type Confinement struct {
	// dirs are the allowed directories, absolute, their symbolic links
	// resolved.
	dirs []string
}

// NewConfinement returns the Confinement of dirs: each made absolute and
// its symbolic links resolved (filepath.EvalSymlinks); each must exist
// and be a directory. Errors: no directory at all, or one that is
// missing or not a directory (naming it).
func NewConfinement(dirs []string) (Confinement, error) {
	if len(dirs) == 0 {
		return Confinement{}, errors.New("no allowed directory")
	}
	var c Confinement
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return Confinement{}, fmt.Errorf("allowed directory %s: %w", d, err)
		}
		resolved, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return Confinement{}, fmt.Errorf("allowed directory %s: %w", d, err)
		}
		fi, err := os.Stat(resolved)
		if err != nil {
			return Confinement{}, fmt.Errorf("allowed directory %s: %w", d, err)
		}
		if !fi.IsDir() {
			return Confinement{}, fmt.Errorf("allowed directory %s: not a directory", d)
		}
		c.dirs = append(c.dirs, resolved)
	}
	return c, nil
}

// Dirs returns the allowed directories, absolute and resolved.
func (c Confinement) Dirs() []string { return append([]string(nil), c.dirs...) }

// Admit returns q with its paths mapped by m (PathMap.Apply) when what it
// reads and writes lies within c's directories, else an error wrapping
// rawerr.ErrRefused that names the offending path; nothing is created,
// and nothing but the input's own descriptor (opened to check it, then
// closed) is opened. The checks:
//
//   - every path of the job, as submitted and after m, is absolute and
//     clean (no "..", ".", or doubled separators); its paths relative to
//     OUTDIR are local (filepath.IsLocal);
//   - its outputs (Output, Stem, Paths, Outputs) lie under its OUTDIR;
//   - the input, OUTDIR, each output's directory and the lens database
//     the settings name (Settings.LensDB, not mapped), with their
//     symbolic links resolved (of the deepest part that exists: OUTDIR
//     may not exist yet), lie within an allowed directory;
//   - the input, opened without following a symbolic link at the path
//     resolved (O_NOFOLLOW), is a regular file whose descriptor's path
//     (/proc/self/fd) lies within an allowed directory: a link swapped in
//     after the resolution is refused, not followed.
func (c Confinement) Admit(q QueuedTask, m PathMap) (QueuedTask, error) {
	if len(c.dirs) == 0 {
		return q, refused("the worker has no allowed directory")
	}
	if err := q.checkPaths("as submitted"); err != nil {
		return q, err
	}
	q = m.Apply(q)
	if len(m) > 0 {
		if err := q.checkPaths("after --path-map"); err != nil {
			return q, err
		}
	}
	under := func(what, p string) error {
		if p != "" && !within(p, q.OutDir) {
			return refused(fmt.Sprintf("%s %s is not under the job's output directory %s", what, p, q.OutDir))
		}
		return nil
	}
	if err := under("output", q.Output); err != nil {
		return q, err
	}
	if err := under("output stem", q.Stem); err != nil {
		return q, err
	}
	for _, o := range append(append([]Output(nil), q.Paths...), q.Outputs...) {
		if err := under("output", o.Path); err != nil {
			return q, err
		}
	}
	if _, err := c.allowed("output directory", q.OutDir); err != nil {
		return q, err
	}
	dirs := map[string]bool{}
	for _, o := range append(append([]Output{{Path: q.Output}}, q.Paths...), q.Outputs...) {
		if d := filepath.Dir(o.Path); o.Path != "" && !dirs[d] {
			dirs[d] = true
			if _, err := c.allowed("output directory", d); err != nil {
				return q, err
			}
		}
	}
	// The lens database the settings name is read too (its XML files,
	// and its listing for the settings hash), at the path as given.
	if db := q.Settings.LensDB; db != "" {
		if !filepath.IsAbs(db) || filepath.Clean(db) != db {
			return q, refused(fmt.Sprintf("lens database %q is not an absolute clean path", db))
		}
		if _, err := c.allowed("lens database", db); err != nil {
			return q, err
		}
	}
	resolved, err := c.allowed("input", q.Input)
	if err != nil {
		return q, err
	}
	return q, c.openedInput(q.Input, resolved)
}

// checkPaths refuses a path of q that is not absolute and clean, or a
// path relative to OUTDIR that is not local; when says which paths
// (as submitted, after --path-map).
func (q QueuedTask) checkPaths(when string) error {
	abs := func(what, p string, required bool) error {
		switch {
		case p == "" && !required:
			return nil
		case p == "":
			return refused(fmt.Sprintf("the job names no %s", what))
		case !filepath.IsAbs(p) || filepath.Clean(p) != p || strings.ContainsRune(p, 0):
			return refused(fmt.Sprintf("%s %q (%s) is not an absolute clean path", what, p, when))
		}
		return nil
	}
	local := func(what, p string) error {
		if p != "" && !filepath.IsLocal(p) {
			return refused(fmt.Sprintf("%s %q is not a path inside the output directory", what, p))
		}
		return nil
	}
	errs := []error{abs("input", q.Input, true), abs("output directory", q.OutDir, true),
		abs("output", q.Output, false), abs("output stem", q.Stem, false), local("output", q.OutputRel)}
	for _, o := range append(append([]Output(nil), q.Paths...), q.Outputs...) {
		errs = append(errs, abs("output", o.Path, true), local("output", o.Rel))
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// allowed refuses p (what names it) unless p, its symbolic links
// resolved (resolveExisting), lies within one of c's directories; it
// returns p resolved.
func (c Confinement) allowed(what, p string) (string, error) {
	resolved, err := resolveExisting(p)
	if err != nil {
		return "", refused(fmt.Sprintf("%s %s: %v", what, p, err))
	}
	if !c.contains(resolved) {
		if resolved != p {
			return "", refused(fmt.Sprintf("%s %s (%s, its links resolved) is outside the allowed directories %s", what, p, resolved, strings.Join(c.dirs, ", ")))
		}
		return "", refused(fmt.Sprintf("%s %s is outside the allowed directories %s", what, p, strings.Join(c.dirs, ", ")))
	}
	return resolved, nil
}

// contains reports whether resolved (absolute, resolved) lies within one of
// c's directories.
func (c Confinement) contains(resolved string) bool {
	for _, d := range c.dirs {
		if within(resolved, d) {
			return true
		}
	}
	return false
}

// openedInput opens resolved, input with its links resolved as checked,
// with O_NOFOLLOW and refuses it unless it is a regular file whose
// descriptor's path lies within c: what is opened is what was checked (a
// symbolic link swapped in since is refused, not followed). A missing
// input passes (the runner reports it deleted since it was submitted).
func (c Confinement) openedInput(input, resolved string) error {
	// Not even opened when it is no regular file (a device's open may act).
	if fi, err := os.Lstat(resolved); err == nil && !fi.Mode().IsRegular() && fi.Mode()&os.ModeSymlink == 0 {
		return refused(fmt.Sprintf("input %s is not a regular file", input))
	}
	fd, err := unix.Open(resolved, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ELOOP):
		return refused(fmt.Sprintf("input %s: %s became a symbolic link after it was checked", input, resolved))
	case errors.Is(err, unix.ENOENT):
		return nil
	case err != nil:
		return refused(fmt.Sprintf("input %s: %v", input, err))
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return refused(fmt.Sprintf("input %s: %v", input, err))
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return refused(fmt.Sprintf("input %s is not a regular file", input))
	}
	opened, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return refused(fmt.Sprintf("input %s: the path of its opened descriptor: %v", input, err))
	}
	if !c.contains(opened) {
		return refused(fmt.Sprintf("input %s: the file opened (%s) is outside the allowed directories %s", input, opened, strings.Join(c.dirs, ", ")))
	}
	return nil
}

// resolveExisting returns p (absolute) with its symbolic links resolved:
// of p itself when it exists, else of its deepest existing directory, the
// rest appended. Errors other than a missing part (a loop, permission
// denied) are returned.
func resolveExisting(p string) (string, error) {
	dir, rest := p, ""
	for {
		resolved, err := filepath.EvalSymlinks(dir)
		if err == nil {
			return filepath.Join(resolved, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if _, lerr := os.Lstat(dir); lerr == nil {
			return "", fmt.Errorf("%s is a symbolic link to nothing", dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", err
		}
		dir, rest = parent, filepath.Join(filepath.Base(dir), rest)
	}
}

// within reports whether p is dir or lies under it (both absolute and
// clean).
func within(p, dir string) bool {
	if p == dir || dir == string(filepath.Separator) {
		return true
	}
	return strings.HasPrefix(p, dir+string(filepath.Separator))
}

// refused is an error wrapping rawerr.ErrRefused with reason.
func refused(reason string) error {
	return fmt.Errorf("%w: %s", rawerr.ErrRefused, reason)
}
