package pipeline

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/cache"
	"github.com/rawbatch/rawbatch/lock"
	"github.com/rawbatch/rawbatch/pipeline/encode"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
	"github.com/rawbatch/rawbatch/pipeline/state"
)

// Task is one input file and the output it maps to.
type Task struct {
	// Input is the path of the RAW file as found (joined to the input
	// argument it came from).
	Input string
	// Rel is Input relative to its input root (the directory argument it
	// was found under, or its base name for a file argument).
	Rel string
	// Output is the path of the first variant's file:
	// OUTDIR/dir(Rel)/STEM.EXT; OutputRel is it relative to OUTDIR. Stem is
	// OUTDIR/dir(Rel)/STEM, to which each variant adds its suffix.
	Output, OutputRel string
	Stem              string
	// InputAbs is Input made absolute with symbolic links resolved
	// (state.AbsInput), filled with Outputs; see absInput.
	InputAbs string
	// Size and ModTime of the input when the plan was made (settle check).
	Size    int64
	ModTime time.Time

	// Filled by Plan.Inspect: the header, the memory estimate, and a
	// failure found before decoding (not a raw file, corrupt header,
	// unsupported format).
	Info     FileInfo
	Estimate budget.Breakdown
	Err      error
	// Done, set by Runner.Triage, is the outcome of a task that needs no
	// conversion (up to date, still being written); Inspect and Run pass
	// it by.
	Done *FileResult

	// Outputs are the files written for the input, one per variant, the
	// first being Output; Pending indexes those that must be (re)written
	// (nil: all). Both are filled by the Runner.
	Outputs []Output
	Pending []int
}

// Output is one variant's file for a task.
type Output struct {
	Variant Variant
	// Path of the file, and Rel, relative to OUTDIR.
	Path, Rel string
}

// absInput returns t.InputAbs, resolving it for a Task made by hand.
func (t Task) absInput() string {
	if t.InputAbs != "" {
		return t.InputAbs
	}
	return state.AbsInput(t.Input)
}

// pending returns the outputs of t still to write.
func (t Task) pending() []Output {
	if t.Pending == nil {
		return t.Outputs
	}
	out := make([]Output, 0, len(t.Pending))
	for _, i := range t.Pending {
		out = append(out, t.Outputs[i])
	}
	return out
}

// Plan is the list of conversions of a batch, in input order.
type Plan struct {
	Tasks []Task
	// Warnings are notes on the plan, such as two inputs that would have
	// mapped to one output file.
	Warnings []string
	// Problems are inputs that could not be read at all (missing paths,
	// unreadable directories); they count as failed files.
	Problems []FileResult
}

// PlanBatch walks inputs (directories recursively, in lexical order; files
// as given) and maps each candidate to its outputs under outDir: one per
// suffix, the first being Task.Output (suffixes are Variant.Suffix values:
// ".jpg", ".thumb.webp"). Directory entries are candidates when their
// extension is one of RawExtensions (case-insensitive); files named
// explicitly are always candidates. The output tree mirrors the input tree:
// a/b/IMG_1.CR3 under an input directory becomes outDir/a/b/IMG_1.jpg. When
// any output of one input would be an output of another (x.dng and x.DNG
// both give x.jpg; IMG_1.dng's thumb and IMG_1.thumb.CRW's main both give
// IMG_1.thumb.webp), each input involved is written as STEM.ORIGEXT plus
// its suffixes (x.dng.jpg, x.DNG.jpg), and a warning says so. A file
// reached twice (the same device and inode) is planned once. outDir itself
// is not walked.
func PlanBatch(inputs []string, outDir string, suffixes ...string) (*Plan, error) {
	if len(suffixes) == 0 {
		return nil, errors.New("PlanBatch: no output suffix")
	}
	p := &Plan{}
	absOut, err := filepath.Abs(outDir)
	if err != nil {
		return nil, err
	}
	if r, err := filepath.EvalSymlinks(absOut); err == nil {
		absOut = r // walked paths are resolved too
	}
	problem := func(path string, err error) {
		p.Problems = append(p.Problems, FileResult{Task: Task{Input: path}, Status: StatusFailed,
			Err: fmt.Errorf("%s: %w", path, pathError(path, err))})
	}
	// seen maps a file's device and inode to its task, so a file reached
	// twice is planned once; a path that is not a symbolic link wins over
	// one that is.
	seen := map[[2]uint64]int{}
	add := func(path, rel string, fi fs.FileInfo) {
		task := Task{Input: path, Rel: rel, Size: fi.Size(), ModTime: fi.ModTime()}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			p.Tasks = append(p.Tasks, task)
			return
		}
		k := [2]uint64{uint64(st.Dev), st.Ino}
		i, dup := seen[k]
		if !dup {
			seen[k] = len(p.Tasks)
			p.Tasks = append(p.Tasks, task)
			return
		}
		kept := p.Tasks[i].Input
		if isSymlink(kept) && !isSymlink(path) {
			p.Tasks[i] = task
			kept, path = path, kept
		}
		if kept != path {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s and %s are the same file; converting it once, as %s", kept, path, kept))
		}
	}
	for _, in := range inputs {
		fi, err := os.Stat(in)
		if err != nil {
			problem(in, err)
			continue
		}
		if !fi.IsDir() {
			if !fi.Mode().IsRegular() {
				problem(in, ErrNotRegular)
				continue
			}
			add(in, filepath.Base(in), fi)
			continue
		}
		// A directory named on the command line is walked even when it is
		// a symbolic link; links to directories inside it are not followed.
		root, err := filepath.EvalSymlinks(in)
		if err != nil {
			problem(in, err)
			continue
		}
		err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			rel, rerr := filepath.Rel(root, path)
			if rerr != nil {
				rel = filepath.Base(path)
			}
			shown := filepath.Join(in, rel) // the path as the user named it
			if err != nil {
				problem(shown, err)
				if d != nil && d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				if a, err := filepath.Abs(path); err == nil && a == absOut && path != root {
					return fs.SkipDir
				}
				return nil
			}
			if !IsRawExtension(d.Name()) {
				return nil
			}
			fi, err := os.Stat(path) // follows a symlink to a file
			if errors.Is(err, syscall.ELOOP) {
				p.Warnings = append(p.Warnings, fmt.Sprintf("%s: a loop of symbolic links; skipped", shown))
				return nil
			}
			if err != nil {
				problem(shown, err)
				return nil
			}
			if !fi.Mode().IsRegular() {
				problem(shown, ErrNotRegular)
				return nil
			}
			add(shown, rel, fi)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	p.mapOutputs(outDir, suffixes)
	for i := range p.Tasks {
		t := &p.Tasks[i]
		if rel, err := filepath.Rel(outDir, t.Output); err == nil {
			t.OutputRel = rel
		}
		// Never write an output over an input (photo.jpg given as a RAW
		// and converted into its own folder).
		if fi, err := os.Stat(t.Output); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				if _, in := seen[[2]uint64{uint64(st.Dev), st.Ino}]; in {
					t.Err = fmt.Errorf("%s: its output %s would overwrite an input file; choose another output directory", t.Input, t.Output)
				}
			}
		}
	}
	return p, nil
}

func isSymlink(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&fs.ModeSymlink != 0
}

// pathError drops the operation and path that *fs.PathError repeats (the
// caller names the path) and names a dangling symbolic link as such.
func pathError(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) && isSymlink(path) {
		return errors.New("broken symbolic link")
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		return pe.Err
	}
	return err
}

// mapOutputs fills Task.Output and Task.Stem, resolving collisions between
// the outputs (one per suffix) of different inputs.
func (p *Plan) mapOutputs(outDir string, suffixes []string) {
	plainStem := func(t Task) string {
		return filepath.Join(outDir, strings.TrimSuffix(t.Rel, filepath.Ext(t.Rel)))
	}
	// owners maps each planned output path to the tasks that would write it.
	owners := map[string][]int{}
	for i, t := range p.Tasks {
		stem := plainStem(t)
		for _, sfx := range suffixes {
			if o := owners[stem+sfx]; len(o) == 0 || o[len(o)-1] != i {
				owners[stem+sfx] = append(o, i)
			}
		}
	}
	clash := make([]bool, len(p.Tasks))
	used := map[string]bool{}
	for path, o := range owners {
		if len(o) > 1 {
			for _, i := range o {
				clash[i] = true
			}
			continue
		}
		used[path] = true
	}
	for i, t := range p.Tasks {
		if !clash[i] {
			p.Tasks[i].Stem = plainStem(t)
		}
	}
	// Give clashing inputs STEM.ORIGEXT (then -2, -3, ...) stems, in input
	// order, so the names are the same on every run.
	for i, t := range p.Tasks {
		if !clash[i] {
			continue
		}
		stem := filepath.Join(outDir, t.Rel)
		free := func(stem string) bool {
			for _, sfx := range suffixes {
				if used[stem+sfx] {
					return false
				}
			}
			return true
		}
		for n := 2; !free(stem); n++ {
			stem = filepath.Join(outDir, fmt.Sprintf("%s-%d", t.Rel, n))
		}
		for _, sfx := range suffixes {
			used[stem+sfx] = true
		}
		p.Tasks[i].Stem = stem
	}
	// One warning per set of inputs that clash, naming the first output
	// they share and every input's new name.
	var paths []string
	for path, o := range owners {
		if len(o) > 1 {
			paths = append(paths, path)
		}
	}
	slices.Sort(paths)
	warned := map[string]bool{}
	for _, path := range paths {
		o := owners[path]
		set := fmt.Sprint(o)
		if warned[set] {
			continue
		}
		warned[set] = true
		var names []string
		for _, i := range o {
			names = append(names, fmt.Sprintf("%s → %s", p.Tasks[i].Input, p.Tasks[i].Stem+suffixes[0]))
		}
		p.Warnings = append(p.Warnings, fmt.Sprintf("%d inputs map to %s; writing them as %s",
			len(o), path, strings.Join(names, ", ")))
	}
	for i := range p.Tasks {
		p.Tasks[i].Output = p.Tasks[i].Stem + suffixes[0]
	}
}

// Inspect reads the header of every task not yet settled (Done or Err
// set), in parallel, jobs at a time, and fills Info and Estimate for
// settings s with LibRaw using threads OpenMP threads, or Err for a file
// that cannot be converted. It decodes nothing.
func (p *Plan) Inspect(s Settings, threads, jobs int) {
	var g errgroup.Group
	g.SetLimit(max(1, jobs))
	for i := range p.Tasks {
		if p.Tasks[i].Done != nil || p.Tasks[i].Err != nil { // settled already (an output over an input)
			continue
		}
		g.Go(func() error {
			t := &p.Tasks[i]
			fi, err := ReadInfo(t.Input)
			if err != nil {
				t.Err = err
				return nil
			}
			t.Info, t.Estimate = fi, EstimateMemory(fi, s, threads)
			t.Err = checkFormatLimits(t.Input, fi, s)
			return nil
		})
	}
	g.Wait()
}

// Threads returns how many OpenMP threads LibRaw may use per conversion so
// that jobs × threads does not exceed cpus.
func Threads(cpus, jobs int) int { return max(1, cpus/max(1, jobs)) }

// Status is the outcome of one file.
type Status string

const (
	StatusConverted Status = "converted"
	StatusFailed    Status = "failed"
	// StatusSkipped: not converted, and not a failure: the output is up
	// to date, the input is still being written, or the run was
	// interrupted (the file never started, or was cancelled in flight with
	// no output left). Reason says which.
	StatusSkipped Status = "skipped"
	// StatusLocked: another run holds the file's lock.
	StatusLocked Status = "locked"
)

// FileResult is the outcome of one Task.
type FileResult struct {
	Task
	Status Status
	// Err is the failure, naming the input path; nil when converted.
	Err    error
	Result Result
	// Duration is the wall time of the conversion.
	Duration time.Duration
	// PeakBytes is the worker process's peak RSS (0 in process).
	PeakBytes int64
	// Messages are what the decoder printed (LibRaw, libjpeg).
	Messages string
	// Reason explains a skip ("up to date", "still being written", ...).
	Reason string
	// Decoded reports that LibRaw decoded the file in this run.
	Decoded bool
}

// WorkerRSS is the resident memory of a worker process before it converts
// anything (Go runtime, LibRaw and the other libraries), added to each
// file's estimate when converting in workers: measured 11.5 MiB
// (a 200×200 conversion peaks at 14.6 MB, 3 MB of which is the file's).
const WorkerRSS = 12 << 20

// overshootSlack is how far beyond its estimate a worker's peak memory may
// go, in bytes, before the file gets a warning.
const overshootSlack = 32 << 20

// overshootWarning returns the warning for a worker whose peak memory (bytes)
// exceeded its estimate est (bytes) by more than a quarter and by more than
// overshootSlack, else "". The budget is only as good as the estimate, so
// the user hears of it; the few MiB a tiny file's worker varies by do not
// matter to the budget.
func overshootWarning(peak, est int64) string {
	if float64(peak) <= 1.25*float64(est) || peak-est <= overshootSlack {
		return ""
	}
	return fmt.Sprintf("used %s of memory, more than its estimate of %s", budget.FormatSize(peak), budget.FormatSize(est))
}

// DefaultTimeout is the timeout of a file of mp megapixels: 60 s plus 3 s
// per megapixel (a 45 MP file: 195 s), generous for a 2-core machine
// running several files at once.
func DefaultTimeout(mp float64) time.Duration {
	return 60*time.Second + time.Duration(mp*3*float64(time.Second))
}

// Runner converts the tasks of a Plan, at most Jobs at a time and only as
// many as fit in Budget.
type Runner struct {
	Settings Settings
	// Jobs is the most files converted at once (≥ 1).
	Jobs int
	// Budget is the memory budget in bytes: a file starts only when its
	// estimate (Task.Estimate, from Plan.Inspect) fits beside those
	// running; a file whose estimate exceeds the whole budget fails with
	// budget.ErrOverBudget. 0 means no budget.
	Budget int64
	// Threads caps LibRaw's OpenMP threads per conversion (0: OpenMP's
	// default).
	Threads int
	// Scheduler, when set after Run, reports the peak admitted bytes and
	// concurrency (budget.Scheduler.Stats).
	Scheduler *budget.Scheduler
	// Exe, when set, is the rawbatch executable: each file is converted
	// in a child process `Exe worker` (see WorkerMain), so a crash or hang
	// of LibRaw fails that file only. Empty converts in this process.
	Exe string
	// Timeout bounds one file's conversion in a worker; 0 scales it with
	// the file's size (DefaultTimeout).
	Timeout time.Duration
	// Grace is how long files in flight may finish after ctx ends before
	// their workers are killed. Closing Abort (optional) kills them at
	// once, grace or not (a second Ctrl-C).
	Grace time.Duration
	Abort <-chan struct{}
	// CacheDir, when set, is the stage cache directory (package cache):
	// the decoded image of each file is kept there while its variants are
	// written, so none is decoded twice, and across runs with KeepCache.
	// CacheMax caps the cache in bytes (0: no cap).
	CacheDir  string
	CacheMax  int64
	KeepCache bool
	// State, when set, holds the up-to-date records of OUTDIR: a file whose
	// output's record matches (input size+mtime, or content hash; settings;
	// versions) is skipped as "up to date", and a record is saved after each
	// conversion. Force converts regardless.
	State *state.Store
	Force bool
	// OutDir is the output directory (record keys are relative to it).
	OutDir string
	// SettingsHash identifies every setting that changes an output
	// (SettingsHash); Version is rawbatch's version, for the records.
	SettingsHash, Version string
	// Locks, when set, holds one advisory lock per input: a file locked by
	// another run goes to the back of the queue and is retried with capped
	// exponential backoff for up to LockWait (0: reported as locked at
	// once).
	Locks    *lock.Dir
	LockWait time.Duration
	// MinAge: a file modified less than MinAge ago, or whose size or
	// modification time changed since the plan was made, is skipped as
	// "still being written" and left for a later run.
	MinAge time.Duration
	// Retries is how many times a transient failure (ErrTransient: no
	// space on the output, EINTR, EAGAIN, I/O timeouts) is retried, with
	// backoff.
	Retries int
	// Started and Done, when set, are called as files start and finish,
	// from the worker goroutines (they must be safe for concurrent use).
	Started func(Task)
	Done    func(FileResult)

	started time.Time // when Triage or Run began
}

// hasRecord reports whether State holds a record for the output rel.
func (r *Runner) hasRecord(rel string) bool {
	if r.State == nil {
		return false
	}
	_, err := r.State.Load(rel)
	return err == nil
}

// writtenByRawbatch reports whether the file at path is absent or was
// written by rawbatch: its EXIF Software tag, within the first 64 KiB of
// every format rawbatch writes, is "rawbatch".
func writtenByRawbatch(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return true // absent (or unreadable: the write will say why)
	}
	defer f.Close()
	head := make([]byte, 64<<10)
	n, _ := io.ReadFull(f, head)
	if bytes.Contains(head[:n], []byte("rawbatch\x00")) {
		return true
	}
	// WebP keeps its EXIF chunk after the image data (WebP container
	// specification: VP8X, ICCP, image, EXIF, XMP): walk the RIFF chunks.
	if n >= 12 && string(head[0:4]) == "RIFF" && string(head[8:12]) == "WEBP" {
		return webpExifHas(f, []byte("rawbatch\x00"))
	}
	return false
}

// webpExifHas reports whether the EXIF chunk of the WebP file f contains
// needle, reading only chunk headers and that chunk (at most 1 MiB).
func webpExifHas(f *os.File, needle []byte) bool {
	off := int64(12)
	hdr := make([]byte, 8)
	for range 64 { // a rawbatch WebP has at most five chunks
		if _, err := f.ReadAt(hdr, off); err != nil {
			return false
		}
		size := int64(binary.LittleEndian.Uint32(hdr[4:]))
		if string(hdr[:4]) == "EXIF" {
			if size > 1<<20 {
				return false
			}
			b := make([]byte, size)
			if _, err := f.ReadAt(b, off+8); err != nil {
				return false
			}
			return bytes.Contains(b, needle)
		}
		off += 8 + size + size&1 // chunks are padded to even sizes
	}
	return false
}

// SettingsHash returns the hash of every setting of s that changes an
// output file (not Jobs, budget, or threads), for the up-to-date records.
func SettingsHash(s Settings) string {
	return state.HashSettings("settings-v2", string(s.Demosaic),
		s.WhiteBalance.String(), fmt.Sprint(s.Exposure), fmt.Sprint(s.BaselineExposure), string(s.Tone),
		fmt.Sprint(s.Highlight), fmt.Sprint(s.HalfSize))
}

// outputHash is the settings hash of one variant's output: the shared
// settings and the variant's own (format, size, quality, space, sharpen,
// and the TIFF compression when there is one).
func outputHash(base string, v Variant) string {
	parts := []string{base, v.Name, v.Format, fmt.Sprint(v.Size), fmt.Sprint(v.Quality), v.Space, fmt.Sprint(v.Sharpen)}
	return state.HashSettings(append(parts, v.hashParts()...)...)
}

// expand fills each task's Outputs from the variants of r.Settings (the
// first variant's path is Task.Output, as PlanBatch mapped it) and fails a
// task any of whose outputs would overwrite an input file.
func (r *Runner) expand(p *Plan) {
	vs := r.Settings.OutputVariants()
	inputs := map[[2]uint64]bool{}
	for _, t := range p.Tasks {
		if fi, err := os.Stat(t.Input); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				inputs[[2]uint64{uint64(st.Dev), st.Ino}] = true
			}
		}
	}
	for i := range p.Tasks {
		t := &p.Tasks[i]
		if t.Outputs != nil {
			continue
		}
		t.InputAbs = state.AbsInput(t.Input)
		stem := t.Stem
		if stem == "" { // a Task made by hand
			stem = strings.TrimSuffix(t.Output, vs[0].Suffix())
		}
		relStem := strings.TrimSuffix(t.OutputRel, vs[0].Suffix())
		for _, v := range vs {
			o := Output{Variant: v, Path: stem + v.Suffix(), Rel: relStem + v.Suffix()}
			t.Outputs = append(t.Outputs, o)
			if fi, err := os.Stat(o.Path); err == nil && t.Err == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok && inputs[[2]uint64{uint64(st.Dev), st.Ino}] {
					t.Err = fmt.Errorf("%s: its output %s would overwrite an input file; choose another output directory", t.Input, o.Path)
				}
			}
		}
	}
}

// cacheBytes is the size of t's entry in the stage cache: its decoded
// image, 12 bytes per processed pixel.
func (r *Runner) cacheBytes(t Task) int64 {
	w, h := int64(t.Info.Width), int64(t.Info.Height)
	if r.Settings.HalfSize && t.Info.CFA {
		w, h = (w+1)/2, (h+1)/2
	}
	return 12 * w * h
}

// cacheRequest is the stage cache part of a worker request.
// openCache opens the stage cache in dir (none when dir is "") for one
// conversion. The cache only saves decodes, so a cache that cannot be used
// (not a directory, not writable, owned by another user) does not fail the
// file: the conversion goes on without it and the returned warning says
// why.
func openCache(dir string, max int64, keep bool) (*CacheOptions, string) {
	if dir == "" {
		return nil, ""
	}
	c, err := cache.Open(dir, max)
	if err != nil {
		return nil, fmt.Sprintf("stage cache not used: %v", err)
	}
	return &CacheOptions{Cache: c, Keep: keep}, ""
}

func (r *Runner) cacheRequest() *workerCache {
	if r.CacheDir == "" {
		return nil
	}
	return &workerCache{Dir: []byte(r.CacheDir), Max: r.CacheMax, Keep: r.KeepCache}
}

// ErrTransient marks failures worth retrying: no space left on the output
// device, interrupted or would-block system calls, I/O timeouts.
var ErrTransient = errors.New("transient failure")

// transient reports whether err is a failure worth retrying.
func transient(err error) bool {
	return errors.Is(err, ErrTransient) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EINTR) ||
		errors.Is(err, syscall.EAGAIN) || errors.Is(err, os.ErrDeadlineExceeded)
}

// Run converts every task of p and returns the results in plan order
// (Problems first). Tasks are admitted in plan order: for each, an
// up-to-date check and a settle check, a job slot, the input's lock (a
// locked file goes to the back of the queue until LockWait), a second
// up-to-date check under the lock, then the memory budget. When ctx ends, no
// new file starts, files in flight get Grace to finish and are then
// aborted, and the rest are StatusSkipped.
func (r *Runner) Run(ctx context.Context, p *Plan) []FileResult {
	if r.started.IsZero() {
		r.started = time.Now()
	}
	r.expand(p)
	results := make([]FileResult, len(p.Tasks))
	budgetBytes := r.Budget
	if budgetBytes <= 0 {
		budgetBytes = math.MaxInt64
	}
	r.Scheduler = budget.NewScheduler(budgetBytes)
	slots := make(chan struct{}, max(1, r.Jobs))
	var wg sync.WaitGroup
	var mu sync.Mutex
	set := func(i int, fr FileResult) {
		mu.Lock()
		results[i] = fr
		mu.Unlock()
	}
	finish := func(i int, fr FileResult) {
		set(i, fr)
		r.done(fr)
	}
	skip := func(i int, t Task) {
		set(i, FileResult{Task: t, Status: StatusSkipped, Reason: "interrupted",
			Err: fmt.Errorf("%s: %w", t.Input, context.Cause(ctx))})
	}
	type item struct {
		i        int
		attempts int
		first    time.Time
		notAfter time.Time // lock retries end
		next     time.Time // not before
	}
	queue := make([]item, 0, len(p.Tasks))
	for i := range p.Tasks {
		queue = append(queue, item{i: i})
	}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		t := p.Tasks[it.i]
		if ctx.Err() != nil {
			skip(it.i, t)
			continue
		}
		if t.Done != nil {
			finish(it.i, *t.Done)
			continue
		}
		if t.Err != nil {
			finish(it.i, FileResult{Task: t, Status: StatusFailed, Err: t.Err})
			continue
		}
		if wait := time.Until(it.next); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				skip(it.i, t)
				continue
			}
		}
		// Without locks this is the only check; with them, the check made
		// under the lock below is the one that counts.
		if it.attempts == 0 && r.Locks == nil {
			fr, pending, done := r.preflight(t, false)
			if done {
				finish(it.i, fr)
				continue
			}
			t.Pending = pending
		}
		// A job slot, the lock, then memory: in plan order.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			skip(it.i, t)
			continue
		}
		var lk *lock.Lock
		if r.Locks != nil {
			var err error
			note := r.lockNote(t)
			lk, err = r.Locks.TryLockNote(lockKey(t), note)
			if err != nil {
				<-slots
				now := time.Now()
				if it.attempts == 0 {
					it.first, it.notAfter = now, now.Add(r.LockWait)
				}
				// A holder writing exactly this run's outputs is left to
				// it (after LockWait); one doing other work (other
				// variants or settings) is waited for, since this run's
				// outputs are not being made: under the lock, the
				// up-to-date check then finds what is left to do.
				var le *lock.LockedError
				otherWork := errors.As(err, &le) && le.Holder.Note != note
				if errors.Is(err, lock.ErrLocked) && (now.Before(it.notAfter) || otherWork) {
					it.next = now.Add(lock.Backoff(it.attempts))
					it.attempts++
					queue = append(queue, it) // to the back of the queue
					continue
				}
				st := StatusFailed
				if errors.Is(err, lock.ErrLocked) {
					st = StatusLocked
				}
				finish(it.i, FileResult{Task: t, Status: st, Err: fmt.Errorf("%s: %w", t.Input, err)})
				continue
			}
			// Under the lock: another run may have just converted it.
			fr, pending, done := r.preflight(t, true)
			if done {
				lk.Unlock()
				<-slots
				finish(it.i, fr)
				continue
			}
			t.Pending = pending
			for _, o := range t.Outputs {
				RemoveTemps(o.Path) // left by a killed run
			}
		}
		need := t.Estimate.Total
		if r.Exe != "" {
			need += WorkerRSS
		}
		if r.CacheDir != "" && r.KeepCache {
			// The decoded image kept in the stage cache: tmpfs is memory.
			need += r.cacheBytes(t)
		}
		if err := r.Scheduler.Acquire(ctx, need); err != nil {
			if lk != nil {
				lk.Unlock()
			}
			<-slots
			if ctx.Err() != nil {
				skip(it.i, t)
				continue
			}
			finish(it.i, FileResult{Task: t, Status: StatusFailed, Err: fmt.Errorf("%s: %w", t.Input, err)})
			continue
		}
		wg.Add(1)
		go func(i int, t Task) {
			defer wg.Done()
			defer func() { <-slots }()
			defer r.Scheduler.Release(need)
			if lk != nil {
				defer lk.Unlock()
			}
			if r.Started != nil {
				r.Started(t)
			}
			fr := r.convertRetrying(ctx, t)
			finish(i, fr)
			// Return this file's buffers before the next file allocates:
			// they are pointer-free, so a collection is cheap.
			runtime.GC()
		}(it.i, t)
	}
	wg.Wait()
	return append(append([]FileResult(nil), p.Problems...), results...)
}

// Triage marks the tasks that need no conversion (Task.Done): outputs that
// are up to date, inputs still being written. It reads no pixel data and no
// header, only stats and up-to-date records (hashing an input only when its
// size or time changed), so an unchanged re-run costs little; call it
// before Plan.Inspect.
func (r *Runner) Triage(p *Plan) {
	if r.started.IsZero() {
		r.started = time.Now()
	}
	r.expand(p)
	for i := range p.Tasks {
		if p.Tasks[i].Err != nil {
			continue
		}
		fr, pending, done := r.preflight(p.Tasks[i], false)
		if done {
			p.Tasks[i].Done = &fr
		} else {
			p.Tasks[i].Pending = pending
		}
	}
}

// lockKey is a task's lock key: its input's path relative to its input
// root, with the output stem it maps to (unique within a run, the same in
// every run over the same folders, whatever the variants).
func lockKey(t Task) string {
	stem := t.OutputRel
	if len(t.Outputs) > 0 {
		stem = strings.TrimSuffix(t.OutputRel, t.Outputs[0].Variant.Suffix())
	}
	return t.Rel + "\x00" + stem
}

// checkFormatLimits fails a file before decoding when a variant's image
// would be larger than its format can hold: WebP stores at most
// encode.MaxWebPSide pixels a side (a panorama's full-size WebP).
func checkFormatLimits(in string, fi FileInfo, s Settings) error {
	w, h := fi.Width, fi.Height
	if s.HalfSize {
		w, h = (w+1)/2, (h+1)/2
	}
	for _, v := range s.OutputVariants() {
		if err := outputSizeError(in, v, w, h, encode.MaxWebPSide); err != nil {
			return err
		}
	}
	return nil
}

// otherInputErr is the failure of t when its output o was written from
// another input that still exists.
func otherInputErr(t Task, o Output, other *state.OtherInputError) error {
	return fmt.Errorf("%s: its output %s was written from %s, which still exists; two inputs map to one output: convert this folder into another output directory", t.Input, o.Path, other.Input)
}

// lockNote describes the work a run does on t, for its lock's holder
// record: a hash of every output's path and settings hash. Two runs with
// the same note would write the same files.
func (r *Runner) lockNote(t Task) string {
	parts := []string{r.Version, t.absInput()}
	for _, o := range t.Outputs {
		parts = append(parts, o.Rel, outputHash(r.SettingsHash, o.Variant))
	}
	return state.HashSettings(parts...)
}

// preflight decides, without converting, which outputs of t need work: it
// returns done with the outcome when none does (all up to date) or the file
// must wait (still being written) or fail (an output path holds a file
// rawbatch did not write, unless Force); otherwise the indexes of the
// outputs to write. underLock is true for the check made while holding t's
// lock.
func (r *Runner) preflight(t Task, underLock bool) (fr FileResult, pending []int, done bool) {
	fr = FileResult{Task: t, Status: StatusSkipped}
	st, err := os.Stat(t.Input)
	if errors.Is(err, fs.ErrNotExist) && t.Size != 0 {
		// It was there when the run started: deleted or moved since (a
		// card being cleared), nothing wrong with it.
		fr.Reason = "deleted or moved since the run started"
		return fr, nil, true
	}
	if err != nil {
		fr.Status, fr.Err = StatusFailed, fmt.Errorf("%s: %w", t.Input, pathError(t.Input, err))
		return fr, nil, true
	}
	// A modification time in the future (camera clock or time zone off)
	// says nothing about the file being written: only a recent one does.
	if age := time.Since(st.ModTime()); r.MinAge > 0 && age >= -time.Second && age < r.MinAge {
		fr.Reason = fmt.Sprintf("still being written (modified %.1f s ago; --min-age %s)", max(age.Seconds(), 0), r.MinAge)
		return fr, nil, true
	}
	if t.Size != 0 && (st.Size() != t.Size || !st.ModTime().Equal(t.ModTime)) {
		fr.Reason = "still being written (its size or time changed during the run)"
		return fr, nil, true
	}
	for i, o := range t.Outputs {
		// Not even --force replaces a directory or other non-file: fail
		// before decoding, and before any output of the file is written.
		if fi, err := os.Lstat(o.Path); err == nil && !fi.Mode().IsRegular() && fi.Mode()&fs.ModeSymlink == 0 {
			fr.Status, fr.Err = StatusFailed, fmt.Errorf("%s: its output %s is a %s, not a file; move it away", t.Input, o.Path, fileKind(fi.Mode()))
			return fr, nil, true
		}
		if !r.Force && !r.hasRecord(o.Rel) && !writtenByRawbatch(o.Path) {
			fr.Status, fr.Err = StatusFailed, fmt.Errorf("%s: %s exists and was not written by rawbatch; move it away, or use --force to overwrite it", t.Input, o.Path)
			return fr, nil, true
		}
		if r.State == nil {
			pending = append(pending, i)
			continue
		}
		if r.Force {
			// Not even --force overwrites another input's output.
			var other *state.OtherInputError
			if errors.As(r.State.CheckOther(r.want(t, o)), &other) {
				fr.Status, fr.Err = StatusFailed, otherInputErr(t, o, other)
				return fr, nil, true
			}
			// --force converts each file once per run: not again when an
			// overlapping run has just converted it with the same settings.
			// The same input however it was named (relative, absolute):
			// same size and modification time.
			if rec, err := r.State.Load(o.Rel); underLock && err == nil && rec.Written.After(r.started) &&
				rec.SettingsHash == outputHash(r.SettingsHash, o.Variant) && rec.InputSize == t.Size && rec.InputMTime.Equal(t.ModTime) {
				continue
			}
			pending = append(pending, i)
			continue
		}
		v, err := r.State.Check(r.want(t, o))
		var other *state.OtherInputError
		if errors.As(err, &other) {
			fr.Status, fr.Err = StatusFailed, otherInputErr(t, o, other)
			return fr, nil, true
		}
		if err != nil {
			if errors.Is(err, state.ErrChanging) {
				fr.Reason = "still being written (it changed while being read)"
				return fr, nil, true
			}
			pending = append(pending, i) // convert; the record is rewritten after
			continue
		}
		if v.Updated != nil {
			r.State.Save(v.Updated)
		}
		if !v.Fresh {
			pending = append(pending, i)
		}
	}
	if len(pending) == 0 {
		fr.Reason = "up to date"
		if r.Force {
			fr.Reason = "up to date (converted by another run since this one started)"
		}
		return fr, nil, true
	}
	return fr, pending, false
}

func (r *Runner) want(t Task, o Output) state.Want {
	return state.Want{Input: t.Input, InputAbs: t.absInput(), OutputRel: o.Rel, OutputPath: o.Path,
		SettingsHash: outputHash(r.SettingsHash, o.Variant), Rawbatch: r.Version, LibRaw: libraw.Version()}
}

// convertRetrying converts t, retrying transient failures up to Retries
// times with backoff, and then records the output in State: the input is
// hashed after the conversion and must be unchanged since the plan, or the
// output is removed and the file left for a later run.
func (r *Runner) convertRetrying(ctx context.Context, t Task) FileResult {
	var fr FileResult
	for attempt := 0; ; attempt++ {
		fr = r.convert(ctx, t)
		if fr.Status != StatusFailed || !transient(fr.Err) || attempt >= r.Retries || ctx.Err() != nil {
			break
		}
		select {
		case <-time.After(lock.Backoff(attempt + 2)):
		case <-ctx.Done():
		}
	}
	if fr.Status != StatusConverted || r.State == nil {
		return fr
	}
	checked := time.Now()
	hash, size, mtime, err := state.HashFile(t.Input)
	if err != nil || (t.Size != 0 && (size != t.Size || !mtime.Equal(t.ModTime))) {
		// Converted from a file that was still changing: do not keep it.
		for _, o := range t.pending() {
			os.Remove(o.Path)
		}
		fr.Status, fr.Reason = StatusSkipped, "still being written (it changed during the conversion)"
		return fr
	}
	for _, o := range t.pending() {
		out, err := os.Stat(o.Path)
		if err != nil {
			continue
		}
		rec := &state.Record{Input: t.Input, InputAbs: t.absInput(), InputSize: size, InputMTime: mtime, InputHash: hash, InputChecked: checked,
			SettingsHash: outputHash(r.SettingsHash, o.Variant), Rawbatch: r.Version, LibRaw: libraw.Version(),
			Output: o.Rel, OutputSize: out.Size()}
		if err := r.State.Save(rec); err != nil {
			fr.Result.Warnings = append(fr.Result.Warnings, "could not save its up-to-date record: "+err.Error())
		}
	}
	return fr
}

func (r *Runner) done(fr FileResult) {
	if r.Done != nil {
		r.Done(fr)
	}
}

func (r *Runner) convert(ctx context.Context, t Task) FileResult {
	t0 := time.Now()
	fr := FileResult{Task: t}
	if err := os.MkdirAll(filepath.Dir(t.Output), 0o755); err != nil {
		fr.Status, fr.Err = StatusFailed, fmt.Errorf("%s: creating output directory: %w", t.Input, err)
		return fr
	}
	s := r.Settings
	s.threads = r.Threads
	if len(t.Outputs) == 0 { // a Runner used without Triage/Run's expand
		t.Outputs = []Output{{Variant: s.OutputVariants()[0], Path: t.Output, Rel: t.OutputRel}}
	}
	var specs []OutputSpec
	for _, o := range t.pending() {
		specs = append(specs, OutputSpec{Variant: o.Variant, Path: o.Path})
	}
	var res Result
	var err error
	if r.Exe == "" {
		copts, cacheWarn := openCache(r.CacheDir, r.CacheMax, r.KeepCache)
		res, err = convertFile(ctx, t.Input, specs, s, t.Info.Header, copts)
		if cacheWarn != "" {
			res.Warnings = append(res.Warnings, cacheWarn)
		}
	} else {
		timeout := r.Timeout
		if timeout == 0 {
			timeout = DefaultTimeout(float64(t.Info.Width) * float64(t.Info.Height) / 1e6)
		}
		run := runWorker(ctx, r.Exe, t, specs, s, r.cacheRequest(), timeout, r.Grace, r.Abort)
		res, err = run.reply.Result, replyError(run.reply)
		res.Input, res.Output = t.Input, t.Output // exact bytes, whatever JSON did to them
		fr.PeakBytes, fr.Messages = run.peak, run.stderr
		if t.Estimate.Total > 0 {
			if w := overshootWarning(run.peak, t.Estimate.Total+WorkerRSS); w != "" {
				res.Warnings = append(res.Warnings, w)
			}
		}
		if run.err != nil {
			err = fmt.Errorf("%s: %w", t.Input, run.err)
			for _, o := range specs {
				RemoveTemps(o.Path) // the killed worker's partial outputs
			}
		}
	}
	fr.Result, fr.Duration = res, time.Since(t0)
	fr.Decoded = res.Decoded
	switch {
	case err == nil:
		fr.Status = StatusConverted
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		fr.Status, fr.Err, fr.Reason = StatusSkipped, err, "interrupted"
	default:
		fr.Status, fr.Err = StatusFailed, err
	}
	return fr
}
