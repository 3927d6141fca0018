package batch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/rawbatch/rawbatch/cache"
	"github.com/rawbatch/rawbatch/internal/fileperm"
	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/lock"
	"github.com/rawbatch/rawbatch/state"
)

// The layout of an output directory: the outputs in a mirror of the input
// tree, and rawbatch's own files under OUTDIR/.rawbatch: the up-to-date
// records (state/), the per-output locks (locks/) and the list of the last
// run's failures (failed.jsonl).

// MetaDir returns OUTDIR/.rawbatch, where rawbatch keeps its records,
// locks and failed.jsonl.
func MetaDir(outDir string) string { return filepath.Join(outDir, ".rawbatch") }

// OutDir is an output directory opened for a run: its records and locks.
type OutDir struct {
	// Path is OUTDIR as given.
	Path string
	// State holds the up-to-date records; nil on a dry run of a directory
	// that has none.
	State *state.Store
	// Locks gives out the per-output locks (flock on the files of
	// OUTDIR/.rawbatch/locks); nil on a dry run.
	Locks lock.Locker
	// RemovedTemps and RemovedBytes count the temporary outputs left by
	// killed runs that opening removed (CleanStaleTemps), and their size
	// in bytes.
	RemovedTemps int
	RemovedBytes int64
}

// OpenOutDir opens outDir's records and locks for a run: it creates
// OUTDIR/.rawbatch/state and locks, removes the temporary files killed runs
// left (the records' own, and the outputs' that no live run holds:
// CleanStaleTemps), and proves the records and locks directories writable
// (CheckOutDir). OUTDIR itself must exist (CheckOutDir). With dryRun it
// creates and removes nothing: it opens the records only when there are
// some, and no locks. Errors name the output directory.
func OpenOutDir(outDir string, dryRun bool) (*OutDir, error) {
	if err := danglingOutDir(outDir); err != nil {
		return nil, err
	}
	od := &OutDir{Path: outDir}
	meta := MetaDir(outDir)
	if dryRun {
		// A dry run writes nothing: it reads the records if there are any,
		// and refuses what the run would refuse (a .rawbatch that is a
		// link or another user's, state.Open's checks) rather than read
		// through it.
		if _, err := os.Lstat(meta); err == nil {
			if err := fileperm.CheckDir(meta); err != nil {
				return nil, fmt.Errorf("output directory %s: %w", outDir, err)
			}
		}
		if _, err := os.Lstat(filepath.Join(meta, "state")); err == nil {
			if od.State, err = state.Open(outDir); err != nil {
				return nil, fmt.Errorf("output directory %s: %w", outDir, err)
			}
		}
		return od, nil
	}
	var err error
	if od.State, err = state.Open(outDir); err != nil {
		return nil, fmt.Errorf("output directory %s: %w", outDir, err)
	}
	od.State.CleanTemps()
	// Temporary outputs of killed runs, whatever they were for (not
	// those an overlapping run is writing: they are locked).
	od.RemovedTemps, od.RemovedBytes = CleanStaleTemps(outDir)
	locks, err := lock.Open(filepath.Join(meta, "locks"))
	if err != nil {
		return nil, fmt.Errorf("output directory %s: %w", outDir, err)
	}
	od.Locks = locks.Locker()
	// Records, locks and the report must be writable before anything runs.
	for _, dir := range []string{od.State.Dir(), locks.Path()} {
		if err := CheckOutDir(dir); err != nil {
			return nil, err
		}
	}
	return od, nil
}

// RecordedOutputs returns the records' outputs of outDir for naming
// (state.Store.Outputs), read once when first asked for; none when outDir
// has no records (nothing is created).
func RecordedOutputs(outDir string) func() map[string]string {
	return sync.OnceValue(func() map[string]string {
		if _, err := os.Stat(filepath.Join(MetaDir(outDir), "state")); err != nil {
			return nil
		}
		store, err := state.Open(outDir)
		if err != nil {
			return nil
		}
		return store.Outputs()
	})
}

// TrimCache opens the stage cache in dir with its cap of maxBytes and
// evicts entries down to the cap now, so that a lowered cap applies at the
// start of a run, not at its next write. The error says why the cache
// cannot be used (not a directory, not writable, another user's).
func TrimCache(dir string, maxBytes int64) error {
	c, err := cache.Open(dir, maxBytes)
	if err != nil {
		return err
	}
	c.Trim()
	return nil
}

// CollisionWritten reports whether one of inputs was converted (an
// output written) in results.
func CollisionWritten(inputs []string, results []FileResult) bool {
	for _, fr := range results {
		if fr.Status == StatusConverted && slices.Contains(inputs, fr.Input) {
			return true
		}
	}
	return false
}

// CheckOutDir creates dir if needed and proves it writable by creating and
// removing a temporary file in it. Errors name dir.
func CheckOutDir(dir string) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		if derr := CheckOutDirDry(dir); derr != nil {
			return derr // the dry run's wording: the same failure, the same message
		}
		return fmt.Errorf("output directory %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".rawbatch-probe-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && pseudoRefusal(pe.Err) {
			return fmt.Errorf("output directory %s is not writable: it does not take new files (a pseudo file system such as /proc or /sys?): %w", dir, pe.Err)
		}
		return fmt.Errorf("output directory %s is not writable: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// CheckReport refuses a --report path that would destroy something: an
// input or an output of the run (plan's tasks, with the output suffixes),
// anything under OUTDIR/.rawbatch (records, locks), a directory, or an
// existing file that is not a rawbatch report; one named as an image
// rawbatch writes (.jpg .jpeg .tif .tiff .png .webp); and one whose
// directory is missing or not writable. Paths are compared with symbolic
// links resolved. It runs before anything is converted. Errors name the
// --report path and say what to do.
func CheckReport(path, outDir string, plan *Plan, suffixes []string) error {
	fi, err := os.Stat(filepath.Dir(path))
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("--report %s: its directory does not exist", path)
	}
	if fi, err := os.Stat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("--report %s: it is a directory or special file; give a file name such as report.json", path)
		}
		for _, t := range plan.Tasks {
			if in, err := os.Stat(t.Input); err == nil && os.SameFile(fi, in) {
				return fmt.Errorf("--report %s: that is an input of this run; give another file name such as report.json", path)
			}
		}
		head := make([]byte, 256)
		if f, err := os.Open(path); err == nil {
			n, _ := f.Read(head)
			f.Close()
			t := strings.TrimSpace(string(head[:n]))
			if n > 0 && !(strings.HasPrefix(t, "{") && (strings.Contains(t, `"summary"`) || strings.Contains(t, `"rawbatch_version"`))) {
				return fmt.Errorf("--report %s: the file exists and is not a rawbatch report; move it away or give another name", path)
			}
		}
	}
	// Every output and record lies under OUTDIR: compare the report's
	// path relative to OUTDIR, both resolved once.
	if rel, err := filepath.Rel(resolvePath(outDir), resolvePath(path)); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		if rel == ".rawbatch" || strings.HasPrefix(rel, ".rawbatch"+string(filepath.Separator)) {
			return fmt.Errorf("--report %s: that is inside %s, rawbatch's records and locks; give a file name elsewhere", path, MetaDir(outDir))
		}
		for _, t := range plan.Tasks {
			for j, sfx := range suffixes {
				if out, _ := filepath.Rel(outDir, t.OutputPath(j, sfx)); out == rel {
					return fmt.Errorf("--report %s: that is the output %s of %s; give another file name such as report.json", path, t.OutputPath(j, sfx), t.Input)
				}
			}
		}
	}
	// A JSON report named like a picture would land among (or be taken for)
	// the photos: refuse the extensions of the images rawbatch writes.
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".jpg", ".jpeg", ".tif", ".tiff", ".png", ".webp", ".avif", ".jxl":
		return fmt.Errorf("--report %s: the report is JSON, not a %s image; give a file name such as report.json", path, strings.TrimPrefix(ext, "."))
	}
	if err := CheckOutDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("--report %s: %w", path, err)
	}
	return nil
}

// resolvePath returns path made absolute with the symbolic links of its
// deepest existing directory resolved (the rest of it may not exist yet).
func resolvePath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	dir, rest := filepath.Dir(abs), filepath.Base(abs)
	for {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs
		}
		dir, rest = parent, filepath.Join(filepath.Base(dir), rest)
	}
}

// mkdirBelow creates dir, a directory under outDir, and the directories
// between them, one at a time without following a symbolic link
// (fileperm.OpenBelow): a link planted in OUTDIR where the input tree has
// a folder would send the outputs and their temporary files outside it
// (into the card the inputs are on, say); the worker then writes the
// outputs relative to the directory it walks to the same way, so a link
// swapped in later is not followed either. OUTDIR itself, the user's
// choice, may be a link. Errors: a component that is a symbolic link or
// not a directory (unwrapping to rawerr.ErrRefused, naming it), and those
// of the system calls, naming the directory.
func mkdirBelow(outDir, dir string) error {
	d, err := fileperm.OpenBelow(outDir, dir, true)
	if err != nil {
		return refusedBelow(err)
	}
	return d.Close()
}

// checkBelow is mkdirBelow's refusal without making anything: the
// components of dir that exist are opened as mkdirBelow opens them, and
// a symbolic link or a file among them is refused; a missing one and
// other errors are left to mkdirBelow. A file's outputs' folders are all
// checked before any is made, so that a refused one leaves no empty
// folder behind for the others.
func checkBelow(outDir, dir string) error {
	d, err := fileperm.OpenBelow(outDir, dir, false)
	if err == nil {
		return d.Close()
	}
	var le *fileperm.LinkError
	if errors.As(err, &le) {
		return refusedBelow(err)
	}
	return nil
}

// refusedBelow is err of the kind rawerr.ErrRefused when it is a
// fileperm.LinkError.
func refusedBelow(err error) error {
	var le *fileperm.LinkError
	if errors.As(err, &le) {
		return rawerr.WithKind(err, rawerr.ErrRefused)
	}
	return err
}

// danglingOutDir is the error of an OUTDIR that is a symbolic link to
// nothing (a folder not made yet, a share not mounted): rawbatch makes a
// missing OUTDIR, but not the target of a link; nil otherwise.
func danglingOutDir(outDir string) error {
	fi, err := os.Lstat(outDir)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		return nil
	}
	if _, err := os.Stat(outDir); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	target, _ := os.Readlink(outDir)
	return fmt.Errorf("output directory %s is a symbolic link to %s, which does not exist: make it (or mount it), or choose another output directory", outDir, target)
}
