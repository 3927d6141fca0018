package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/rawbatch/rawbatch/budget"
)

// Task is one input file and the output it maps to.
type Task struct {
	// Input is the path of the RAW file as found (joined to the input
	// argument it came from).
	Input string
	// Rel is Input relative to its input root (the directory argument it
	// was found under, or its base name for a file argument).
	Rel string
	// Output is the path of the file to write: OUTDIR/dir(Rel)/STEM.EXT.
	Output string

	// Filled by Plan.Inspect: the header, the memory estimate, and a
	// failure found before decoding (not a raw file, corrupt header,
	// unsupported format).
	Info     FileInfo
	Estimate budget.Breakdown
	Err      error
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
// as given) and maps each candidate to its output under outDir with
// extension ext (".jpg"). Directory entries are candidates when their
// extension is one of RawExtensions (case-insensitive); files named
// explicitly are always candidates. The output tree mirrors the input tree:
// a/b/IMG_1.CR3 under an input directory becomes outDir/a/b/IMG_1.jpg. When
// several inputs map to one output (x.dng and x.DNG), each is written as
// STEM.ORIGEXT.EXT (x.dng.jpg, x.DNG.jpg) and a warning says so. A file
// reached twice (the same device and inode) is planned once. outDir itself
// is not walked.
func PlanBatch(inputs []string, outDir, ext string) (*Plan, error) {
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
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			p.Tasks = append(p.Tasks, Task{Input: path, Rel: rel})
			return
		}
		k := [2]uint64{uint64(st.Dev), st.Ino}
		i, dup := seen[k]
		if !dup {
			seen[k] = len(p.Tasks)
			p.Tasks = append(p.Tasks, Task{Input: path, Rel: rel})
			return
		}
		kept := p.Tasks[i].Input
		if isSymlink(kept) && !isSymlink(path) {
			p.Tasks[i] = Task{Input: path, Rel: rel}
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
	p.mapOutputs(outDir, ext)
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

// mapOutputs fills Task.Output, resolving collisions.
func (p *Plan) mapOutputs(outDir, ext string) {
	plain := func(t Task) string {
		stem := strings.TrimSuffix(t.Rel, filepath.Ext(t.Rel))
		return filepath.Join(outDir, stem+ext)
	}
	groups := map[string][]int{}
	for i, t := range p.Tasks {
		o := plain(t)
		groups[o] = append(groups[o], i)
	}
	used := map[string]bool{}
	for o, idx := range groups {
		if len(idx) == 1 {
			p.Tasks[idx[0]].Output = o
			used[o] = true
		}
	}
	var clashes []string
	for o := range groups {
		if len(groups[o]) > 1 {
			clashes = append(clashes, o)
		}
	}
	sort.Strings(clashes)
	for _, o := range clashes {
		var names []string
		for _, i := range groups[o] {
			t := p.Tasks[i]
			out := filepath.Join(outDir, t.Rel+ext) // STEM.ORIGEXT.EXT
			for n := 2; used[out]; n++ {
				out = filepath.Join(outDir, fmt.Sprintf("%s-%d%s", t.Rel, n, ext))
			}
			used[out] = true
			p.Tasks[i].Output = out
			names = append(names, fmt.Sprintf("%s → %s", t.Input, out))
		}
		p.Warnings = append(p.Warnings, fmt.Sprintf("%d inputs map to %s; writing them as %s",
			len(groups[o]), o, strings.Join(names, ", ")))
	}
}

// Inspect reads the header of every task (in parallel, jobs at a time) and
// fills Info and Estimate for settings s with LibRaw using threads OpenMP
// threads, or Err for a file that cannot be converted. It decodes nothing.
func (p *Plan) Inspect(s Settings, threads, jobs int) {
	var g errgroup.Group
	g.SetLimit(max(1, jobs))
	for i := range p.Tasks {
		g.Go(func() error {
			t := &p.Tasks[i]
			fi, err := ReadInfo(t.Input)
			if err != nil {
				t.Err = err
				return nil
			}
			t.Info, t.Estimate = fi, EstimateMemory(fi, s, threads)
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
	// StatusSkipped: not converted because the run was interrupted: either
	// never started, or cancelled while in flight (no output is left).
	StatusSkipped Status = "skipped"
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
}

// WorkerRSS is the resident memory of a worker process before it converts
// anything (Go runtime, LibRaw and the other libraries), added to each
// file's estimate when converting in workers: measured 11.5 MiB
// (a 200×200 conversion peaks at 14.6 MB, 3 MB of which is the file's).
const WorkerRSS = 12 << 20

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
	// their workers are killed.
	Grace time.Duration
	// Started and Done, when set, are called as files start and finish,
	// from the worker goroutines (they must be safe for concurrent use).
	Started func(Task)
	Done    func(FileResult)
}

// Run converts every task of p and returns the results in plan order
// (Problems first). Tasks are admitted in plan order: each waits until its
// estimate fits in the budget and a job slot is free. When ctx ends, no new
// file starts, files in flight are cancelled (LibRaw's progress callback)
// and the rest are StatusSkipped.
func (r *Runner) Run(ctx context.Context, p *Plan) []FileResult {
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
	skip := func(i int, t Task) {
		set(i, FileResult{Task: t, Status: StatusSkipped, Err: fmt.Errorf("%s: %w", t.Input, context.Cause(ctx))})
	}
	for i, t := range p.Tasks {
		if ctx.Err() != nil {
			skip(i, t)
			continue
		}
		if t.Err != nil {
			fr := FileResult{Task: t, Status: StatusFailed, Err: t.Err}
			set(i, fr)
			r.done(fr)
			continue
		}
		// A job slot first, then memory: both in plan order.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			skip(i, t)
			continue
		}
		need := t.Estimate.Total
		if r.Exe != "" {
			need += WorkerRSS
		}
		if err := r.Scheduler.Acquire(ctx, need); err != nil {
			<-slots
			if ctx.Err() != nil {
				skip(i, t)
				continue
			}
			fr := FileResult{Task: t, Status: StatusFailed, Err: fmt.Errorf("%s: %w", t.Input, err)}
			set(i, fr)
			r.done(fr)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			defer r.Scheduler.Release(need)
			if r.Started != nil {
				r.Started(t)
			}
			fr := r.convert(ctx, t)
			set(i, fr)
			r.done(fr)
			// Return this file's buffers before the next file allocates:
			// they are pointer-free, so a collection is cheap.
			runtime.GC()
		}()
	}
	wg.Wait()
	return append(append([]FileResult(nil), p.Problems...), results...)
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
	var res Result
	var err error
	if r.Exe == "" {
		res, err = convertFile(ctx, t.Input, t.Output, s, t.Info.Header)
	} else {
		timeout := r.Timeout
		if timeout == 0 {
			timeout = DefaultTimeout(float64(t.Info.Width) * float64(t.Info.Height) / 1e6)
		}
		run := runWorker(ctx, r.Exe, t, s, timeout, r.Grace)
		res, err = run.reply.Result, replyError(run.reply)
		fr.PeakBytes, fr.Messages = run.peak, run.stderr
		if run.err != nil {
			err = fmt.Errorf("%s: %w", t.Input, run.err)
			RemoveTemps(t.Output) // the killed worker's partial output
		}
	}
	fr.Result, fr.Duration = res, time.Since(t0)
	switch {
	case err == nil:
		fr.Status = StatusConverted
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		fr.Status, fr.Err = StatusSkipped, err
	default:
		fr.Status, fr.Err = StatusFailed, err
	}
	return fr
}
