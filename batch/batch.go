package batch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
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

	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/pipeline/header"
	"github.com/rawbatch/rawbatch/pipeline/sidecar"

	"golang.org/x/sync/errgroup"

	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/cache"
	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/lock"
	"github.com/rawbatch/rawbatch/state"
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
	// Paths, set when a --name template uses {variant}, are the files of
	// each variant (Path and Rel), in variant order; Stem then is the
	// first's.
	Paths []Output
	// InputAbs is Input made absolute with symbolic links resolved
	// (state.AbsInput), filled with Outputs; see absInput.
	InputAbs string
	// Size and ModTime of the input when the plan was made (settle check).
	Size    int64
	ModTime time.Time
	// Settled, set by Runner.Settle, means the input was recent but kept
	// its Size and ModTime while the rest of MinAge went by: it is not
	// skipped as recent.
	Settled bool

	// XMP is what the input's XMP says (readXMP at planning: the packet
	// inside a DNG, its sidecar's fields over it; empty without either, or
	// with one that cannot be parsed; empty with --sidecar off), for the
	// filters, the file's own edit (settingsOf), the outputs' freshness
	// (taskSettings) and the report.
	XMP sidecar.Meta

	// Preset names the config preset applied to the file (ApplyPresets;
	// "" none); presetSettings, when set, are its settings, which the
	// file is converted, hashed and estimated with instead of the run's.
	Preset         string
	presetSettings *pipeline.Settings

	// Filled by Plan.Inspect: the header, the memory estimate, and a
	// failure found before decoding (not a raw file, corrupt header,
	// unsupported format).
	Info     pipeline.FileInfo
	Estimate pipeline.Memory
	Err      error
	// estThreads is the thread count Estimate was made for (Inspect; 0:
	// set by hand, the same at every count); threads, set at admission,
	// is the conversion's (Job.Threads).
	estThreads, threads int
	// whole: the task is admitted at its whole-image estimate
	// (Estimate.Whole) after a conversion admitted to stream could not
	// (rawerr.ErrNeedsWhole; admitWhole).
	whole bool
	// more tells the conversion raised thread counts (Job.MoreThreads;
	// grow.go), set when it is admitted.
	more <-chan int
	// Done, set by Runner.Triage, is the outcome of a task that needs no
	// conversion (up to date, still being written); Inspect and Run pass
	// it by.
	Done *FileResult

	// Outputs are the files written for the input, one per variant, the
	// first being Output; Pending indexes those that must be (re)written
	// (nil: all). Both are filled by the Runner.
	Outputs []Output
	Pending []int

	// newPhoto, set by Runner.newPhoto, is the warning of a task moved to
	// STEM-N because an output holds another photograph's export, or
	// (otherGone) of one taking the name of another photograph's export
	// the user deleted. relocated: Relocate has looked at the task;
	// deferred: Triage left its outcome to Relocate (it may be another
	// photograph's name, known once its header is read).
	newPhoto                       string
	otherGone, relocated, deferred bool
	// keptNote, set with Pending, is the warning of a task converted
	// without some of its outputs, edited since rawbatch wrote them and
	// kept (Runner.EditedKeep); "" when none is.
	keptNote string
}

// Output is one variant's file for a task.
type Output struct {
	Variant pipeline.Variant
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
	// Collisions maps each of Warnings that renames colliding inputs to
	// those inputs (a quiet run says it only when one is written).
	Collisions map[string][]string
	// Problems are inputs that could not be read at all (missing paths,
	// unreadable directories); they count as failed files.
	Problems []FileResult
	// Excluded counts the RAW files found (walked or listed) that
	// --include/--exclude left out, and ExcludedDirs the folders an
	// --exclude kept the walk out of (their files are not counted), so
	// that a run that takes nothing can say why.
	Excluded, ExcludedDirs int
	// SkippedOutDir is set when a walk passed over OUTDIR, found inside an
	// input folder (it is never walked), so that a run that takes nothing
	// can say so.
	SkippedOutDir bool
	// Others counts the files walked whose extension is not a RAW one
	// (JPEGs, videos, sidecars, AppleDouble files, formats rawbatch does
	// not know), and OtherExts up to five of their extensions, so that a
	// run that finds nothing can say what it saw.
	Others    int
	OtherExts []string
	// LinkedDirs counts the symbolic links to folders met inside a
	// walked folder: they are not followed (each input's count is also
	// said in Warnings).
	LinkedDirs int
	// Filtered are the files PlanOptions.Rating left out, each skipped
	// with its reason.
	Filtered []FileResult
	// SkippedListed counts the listed files (PlanOptions.Files) skipped as
	// AppleDouble files, each with its warning in Warnings.
	SkippedListed int
	// Headers reads the headers for Inspect; nil reads them in process.
	Headers *HeaderReader
	// Ctx, when set, stops Inspect once it is done (a signal): no more
	// headers are read, and the files not read are left as they are (the
	// run starts none of them).
	Ctx context.Context
}

// Inspect reads the header of every task not yet settled (Done or Err
// set), in parallel, jobs at a time, and fills Info and Estimate for
// settings s with LibRaw using threads OpenMP threads, or Err for a file
// that cannot be converted. It decodes nothing. Runner.Run estimates a
// file again at the thread count it gets when it is admitted.
func (p *Plan) Inspect(s pipeline.Settings, threads, jobs int) {
	var g errgroup.Group
	g.SetLimit(max(1, jobs))
	stopped := func() bool { return p.Ctx != nil && p.Ctx.Err() != nil }
	for i := range p.Tasks {
		if stopped() {
			break
		}
		if p.Tasks[i].Done != nil || p.Tasks[i].Err != nil { // settled already (an output over an input)
			continue
		}
		g.Go(func() error {
			if stopped() {
				return nil
			}
			t := &p.Tasks[i]
			fi, err := p.Headers.ReadInfo(t.Input)
			if err != nil {
				t.Err = err
				return nil
			}
			ts := t.settingsOf(s) // its preset's, with the file's own edit
			t.Info, t.Estimate, t.estThreads = fi, pipeline.EstimateMemory(fi, ts, max(1, threads)), max(1, threads)
			t.Err = pipeline.CheckOutputLimits(t.Input, fi, ts)
			return nil
		})
	}
	g.Wait()
}

// WholeEstimates makes every task's estimate its whole-image one
// (pipeline.Memory.Whole): with a kept stage cache no conversion streams,
// so that the dry run and the report show what admission holds.
func (p *Plan) WholeEstimates() {
	for i := range p.Tasks {
		if e := &p.Tasks[i].Estimate; e.Whole > e.Total {
			e.Total = e.Whole
		}
	}
}

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
	// StatusKept: not converted, and not a failure: every output to
	// write was edited by another program since rawbatch wrote it and is
	// left alone (Runner.EditedKeep). Reason is ReasonKept.
	StatusKept Status = "kept"
	// StatusKnownFailure: not converted, and not counted as a failure:
	// the file failed before with the same content and settings, and is
	// not tried again (Runner.KnownFailuresSkip). Reason starts with
	// ReasonKnownFailure; Err wraps the earlier failure's kind.
	StatusKnownFailure Status = "known-failure"
)

// The reasons of the files an interrupt left unconverted.
const (
	ReasonNotStarted = "interrupted before it started"
	ReasonCancelled  = "interrupted while converting"
)

// FileResult is the outcome of one Task.
type FileResult struct {
	Task
	Status Status
	// Err is the failure, naming the input path; nil when converted.
	Err    error
	Result pipeline.Result
	// Duration is the wall time of the conversion.
	Duration time.Duration
	// PeakBytes is the worker process's peak RSS (0 in process).
	PeakBytes int64
	// NeedBytes is what the file held in the memory budget (Runner.Need:
	// its estimate at the most threads it held, the executor's overhead,
	// a kept stage cache entry), or what it asked of it when refused over
	// budget, or, in a dry run's results, its need at one thread; 0 when
	// it was never weighed (settled before admission, header unreadable).
	NeedBytes int64
	// Messages are what the decoder printed (LibRaw, libjpeg).
	Messages string
	// Reason explains a skip ("up to date", "still being written", ...).
	Reason string
	// Kept are the output paths of a file that did not finish whose
	// worker had put them in place, complete (settleStopped): the report
	// lists them as written.
	Kept []string
	// Unsettled, for a file skipped as still being written, is the rule
	// that found it so, with its value ("modified within --min-age 2s",
	// "found truncated and modified within the last 1m0s", ...): what the
	// summary says of such files.
	Unsettled string
	// Decoded reports that LibRaw decoded the file in this run.
	Decoded bool
	// Threads is the thread count the conversion ran with (Job.Threads:
	// decided at admission, or Runner.Threads); 0 when it did not start.
	// ThreadsMax is the most threads it ran on: above Threads when it was
	// given more while it ran (Job.MoreThreads) and its executor reports
	// using them (pipeline.Result.ThreadsMax); else Threads.
	Threads, ThreadsMax int
}

// WorkerRSS is the resident memory of a worker process before it converts
// anything (the Go runtime, the pages of the rawbatch binary and of
// LibRaw and the other linked libraries), added to each file's estimate
// when converting in workers (Subprocess.Overhead), so that the budget
// counts every process it starts. docs/memory.md gives its measurement.
const WorkerRSS = 48 << 20

// WorkerBytes returns the memory in bytes that a conversion whose estimate
// is b takes when it runs in a worker process: b.Total plus the worker's
// own WorkerRSS, for callers without a Runner (inspect, a queued job's
// estimate). A Runner weighs a file by Need, which adds its executor's
// overhead the same way.
func WorkerBytes(b pipeline.Memory) int64 { return b.Total + WorkerRSS }

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
	Settings pipeline.Settings
	// Jobs is the most files converted at once (≥ 1).
	Jobs int
	// TailJob lets the last task of the queue start as one more than
	// Jobs when Jobs are in flight (on one thread when they hold every
	// core), instead of waiting to run alone at the end: a file converts
	// on two threads at about two thirds of the speed of two files on
	// one each, so a run of Cores+1 files ends sooner with all of them
	// sharing the cores from the start (docs/performance.md "The last
	// file of a run"). The rawbatch command sets it when --jobs is not
	// given.
	TailJob bool
	// Budget is the memory budget in bytes: a file starts only when its
	// need (Need: its estimate from Plan.Inspect, at one thread, with the
	// executor's overhead and a kept cache entry) fits beside those
	// running, and then holds its need at the thread count it gets
	// (admit.go); a file whose need exceeds the whole budget fails with
	// budget.ErrOverBudget. 0 means no budget.
	Budget int64
	// Threads, when > 0, is every conversion's thread count (Job.Threads:
	// LibRaw's OpenMP threads and a worker's GOMAXPROCS), whatever runs
	// beside it. 0 (the rawbatch command's) decides each conversion's
	// threads as the budget admits it, sharing Cores among the files
	// running (see Run).
	Threads int
	// Cores is the number of cores the conversions share when Threads is
	// 0 (0: runtime.NumCPU()).
	Cores int
	// Scheduler, when set after Run, reports the peak admitted bytes and
	// concurrency (budget.Scheduler.Stats).
	Scheduler *budget.Scheduler
	// Shared, when set, is a scheduler shared by several Runs at once (a
	// `rawbatch work` process running several jobs): Run admits into it
	// instead of making its own over Budget (which it then ignores), and
	// leaves its cores alone (its owner called SetCores), so the files of
	// every Run share its bytes and cores, each file's threads counting
	// the threads the others hold. Scheduler is then Shared.
	Shared *budget.Scheduler
	// Fence, when set, is called after a conversion's outputs are in
	// place and before its records are written (the multi-host mode's
	// lease check: queue.Delivery.Fence). An error writes no record,
	// keeps the outputs (the next conversion of the file replaces them and
	// records) and fails the file with an error naming the input and
	// wrapping ErrFenced and Fence's error.
	Fence func() error
	// Exe, when set, is the rawbatch executable: each file is converted
	// in a child process `Exe worker` (see WorkerMain), so a crash or hang
	// of LibRaw fails that file only. Empty converts in this process.
	Exe string
	// Executor, when set, converts the files instead (Exe is then
	// unused): a fake in tests.
	Executor Executor
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
	// Overwrite writes over files at output paths that rawbatch did not
	// write (no record and no rawbatch EXIF, or changed since rawbatch
	// wrote them); without it such a file fails with ErrNotOurs. Not even
	// Overwrite writes over an input or another input's output.
	Overwrite bool
	// NoRecreate leaves alone an output that has a record but is gone
	// (deleted by the user, culling): the file is skipped with reason
	// "output deleted; --no-recreate". Without it, it is made again.
	NoRecreate bool
	// EditedKeep leaves alone an output that rawbatch wrote and another
	// program changed since (--edited keep): instead of failing with
	// ErrNotOurs, the file is reported as kept (StatusKept) when no other
	// output of it is to be written. Overwrite wins over it.
	EditedKeep bool
	// KnownFailuresSkip reports a file that failed before for what it
	// holds (corrupt, not a raw file, ...), with the same content,
	// settings and versions, as a known failure (StatusKnownFailure)
	// instead of trying it again (--known-failures skip). Failure records
	// are kept in State whatever it says (Runner.remember).
	KnownFailuresSkip bool
	// OutDir is the output directory (record keys are relative to it).
	OutDir string
	// SettingsHash identifies every setting that changes an output
	// (SettingsHash); Version is rawbatch's version, for the records.
	SettingsHash, Version string
	// Locks, when set, holds one exclusive lock per output path (relative
	// to OUTDIR, case-folded: OutputLockKey); a file takes all of its
	// outputs' locks (in sorted order) from its check under the lock until
	// its records are saved. A file locked by another run goes to the back
	// of the queue and is retried with capped exponential backoff for up to
	// LockWait (0: reported as locked at once).
	Locks    lock.Locker
	LockWait time.Duration
	// LockWaitOther bounds the wait for a lock held by a run doing other
	// work on the file's outputs (other variants or settings, or another
	// input with the same output name): after it the file fails, naming
	// what the holder is doing. 0 means LockWait.
	LockWaitOther time.Duration
	// MinAge: a file modified less than MinAge ago, or whose size or
	// modification time changed since the plan was made, is skipped as
	// "still being written" and left for a later run.
	MinAge time.Duration
	// NoSettle: files are not waited for to settle (--min-age 0), so a
	// file found truncated fails as corrupt however recently it was
	// modified, instead of being taken for a copy still in progress
	// (stillCopying); one whose size or time changed during the run is
	// still skipped. A worker of the multi-host mode takes it from the
	// submitter (QueuedTask.NoSettle).
	NoSettle bool
	// SettleWait, when set, is told when Settle starts waiting: for how
	// long, and for how many files modified within MinAge.
	SettleWait func(files int, wait time.Duration)
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

// SettingsHash is the hash of the run's settings for the up-to-date
// records: pipeline.DevelopHash, the develop's own answer to which
// settings change an output (Jobs, the budget or threads do not). Each
// output's own hash adds its variant's settings (outputHash).
func SettingsHash(s pipeline.Settings) string { return pipeline.DevelopHash(s) }

// taskSettings is the settings hash t's outputs are recorded with: the
// run's SettingsHash (its preset's: settingsHashOf), joined with what t's
// XMP gives the outputs' metadata (sidecar.Meta.Key) when it gives
// anything and metadata is written, and with the file's own edit
// (pipeline.Edit.Key of settingsOf; DevelopHash has it too) when it has
// one, so that a sidecar added or changed after a conversion makes its
// outputs out of date, a change of what the --sidecar mode ignores does
// not, and a run without sidecars keeps the run's hash.
func (r *Runner) taskSettings(t Task) string {
	h := r.settingsHashOf(t)
	if k := t.XMP.Key(); k != "" && !r.Settings.StripMetadata && r.Settings.Sidecar != "off" {
		h = state.HashSettings(h, "xmp sidecar", k)
	}
	if k := r.settingsOf(t).Edit.Key(); k != "" {
		h = state.HashSettings(h, "xmp edit", k)
	}
	return h
}

// outputHash is the settings hash of one variant's output
// (pipeline.OutputHash of the run's SettingsHash).
func outputHash(base string, v pipeline.Variant) string { return pipeline.OutputHash(base, v) }

// expand fills each task's Outputs from the variants of r.Settings (the
// first variant's path is Task.Output, as PlanBatch mapped it) and fails a
// task any of whose outputs would overwrite an input file, or whose name
// or path (or its temporary file's) is too long for the file system
// (pipeline.OutputNameError): before anything of it is written.
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
		for j, v := range vs {
			o := Output{Variant: v, Path: stem + v.Suffix(), Rel: relStem + v.Suffix()}
			if len(t.Paths) == len(vs) { // a --name template with {variant}
				o.Path, o.Rel = t.Paths[j].Path, t.Paths[j].Rel
			}
			t.Outputs = append(t.Outputs, o)
			if t.Err == nil {
				if err := pipeline.OutputNameError(o.Path); err != nil {
					t.Err = fmt.Errorf("%s: %w", t.Input, err)
				}
			}
			if fi, err := os.Stat(o.Path); err == nil && t.Err == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok && inputs[[2]uint64{uint64(st.Dev), st.Ino}] {
					t.Err = fmt.Errorf("%s: its output %s would overwrite an input file; choose another output directory", t.Input, o.Path)
				}
			}
		}
	}
}

// cacheRequest is the stage cache part of a worker request.
// openCache opens the stage cache in dir (none when dir is "") for one
// conversion. The cache only saves decodes, so a cache that cannot be used
// (not a directory, not writable, owned by another user) does not fail the
// file: the conversion goes on without it and the returned warning says
// why.
func openCache(dir string, max int64, keep bool) (*pipeline.CacheOptions, string) {
	if dir == "" {
		return nil, ""
	}
	c, err := cache.Open(dir, max)
	if err != nil {
		return nil, fmt.Sprintf("stage cache not used: %v", err)
	}
	return &pipeline.CacheOptions{Cache: c, Keep: keep}, ""
}

func (r *Runner) cacheRequest() *CacheRequest {
	if r.CacheDir == "" {
		return nil
	}
	return &CacheRequest{Dir: []byte(r.CacheDir), Max: r.CacheMax, Keep: r.KeepCache}
}

// ErrTransient marks failures worth retrying: no space left on the output
// device, interrupted or would-block system calls, I/O timeouts. It is
// rawerr.ErrTransient.
var ErrTransient = rawerr.ErrTransient

// transient reports whether err is a failure worth retrying.
func transient(err error) bool {
	return errors.Is(err, ErrTransient) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EINTR) ||
		errors.Is(err, syscall.EAGAIN) || errors.Is(err, os.ErrDeadlineExceeded)
}

// Run converts every task of p and returns the results in plan order
// (Problems first). Tasks are admitted largest estimate first (plan order
// among equals: largestFirst): for each, an up-to-date check and a settle
// check, a job slot, the input's lock (a locked file goes to the back of
// the queue until LockWait), a second up-to-date check under the lock,
// then the memory budget (Runner.Need), which also decides the file's
// threads (admit: all of Cores for a file that starts alone, a share when
// others run or are about to). When ctx ends, no new file starts, files
// in flight get Grace to finish and are then aborted, and the rest are
// StatusSkipped.
func (r *Runner) Run(ctx context.Context, p *Plan) []FileResult {
	b := r.startRun(ctx, p)
	for len(b.queue) > 0 {
		b.setWaiting(len(b.queue)) // the task taken now counts until it starts
		it := b.queue[0]
		b.queue = b.queue[1:]
		t := p.Tasks[it.i]
		if b.settled(it, t) || !b.waitTurn(it, t) || !b.checkFresh(it, &t) || !b.takeSlot(it, t) {
			continue
		}
		lk, ok := b.takeLocks(&it, t)
		if !ok {
			continue
		}
		if lk != nil && !b.prepareUnderLock(it, &t, lk) {
			continue
		}
		g, ok := b.admitMemory(it, &t, lk)
		if !ok {
			continue
		}
		b.start(it.i, t, lk, g)
	}
	b.setWaiting(0)
	b.offer() // the cores freed while tasks were waiting
	b.wg.Wait()
	return append(append([]FileResult(nil), p.Problems...), b.results...)
}

// batchRun is the state of one Runner.Run: the queue of tasks not yet
// admitted, the job slots, the files in flight and the results so far.
type batchRun struct {
	r       *Runner
	ctx     context.Context
	p       *Plan
	queue   []queued
	slots   chan struct{} // one per file in flight, at most Jobs (+1: TailJob)
	freed   chan struct{} // a slot was given back (releaseSlot)
	wg      sync.WaitGroup
	mu      sync.Mutex // guards results
	results []FileResult
	grow    growState // conversions in flight, whose threads may grow
}

// queued is a task waiting in Run's queue: its index in the plan, and its
// lock attempts so far (the first, the end of its retries, and the time
// before which it is not tried again).
type queued struct {
	i        int
	attempts int
	first    time.Time
	notAfter time.Time // lock retries end
	next     time.Time // not before
}

// startRun prepares a Run of p: the tasks' outputs (expand), the memory
// scheduler over Budget, Jobs slots, a different photograph at a used
// output name moved to a free STEM-N name (Relocate, before any lock is
// taken), and the queue, largest estimate first (largestFirst).
func (r *Runner) startRun(ctx context.Context, p *Plan) *batchRun {
	if r.started.IsZero() {
		r.started = time.Now()
	}
	r.expand(p)
	if r.Shared != nil {
		r.Scheduler = r.Shared // its owner set its cores
	} else {
		budgetBytes := r.Budget
		if budgetBytes <= 0 {
			budgetBytes = math.MaxInt64
		}
		r.Scheduler = budget.NewScheduler(budgetBytes)
		if r.Threads <= 0 {
			r.Scheduler.SetCores(r.cores())
		}
	}
	b := &batchRun{r: r, ctx: ctx, p: p, results: make([]FileResult, len(p.Tasks)), slots: make(chan struct{}, max(1, r.Jobs)+1), freed: make(chan struct{}, 1)}
	// A different photograph at an output name used before: moved to a
	// free STEM-N name before its locks are taken.
	r.Relocate(p)
	b.queue = make([]queued, 0, len(p.Tasks))
	for i := range p.Tasks {
		b.queue = append(b.queue, queued{i: i})
	}
	largestFirst(b.queue, p.Tasks)
	return b
}

// largestFirst orders the queue by the tasks' memory estimate (which grows
// with their pixels and variants, so with their work), largest first, in
// plan order among equals: the longest-processing-time-first rule (Graham,
// 1969), so that a batch of a few large and many small files ends with
// small files filling the cores instead of one large file running alone
// on the threads it was admitted with. Results keep plan order.
func largestFirst(q []queued, tasks []Task) {
	slices.SortStableFunc(q, func(a, b queued) int {
		return cmp.Compare(tasks[b.i].Estimate.Total, tasks[a.i].Estimate.Total)
	})
}

// finish records fr as the result of task i and reports it (Runner.Done).
func (b *batchRun) finish(i int, fr FileResult) {
	if fr.Status == StatusFailed {
		if reason, rule := b.r.stillCopying(fr.Task, fr.Err); reason != "" {
			fr = FileResult{Task: fr.Task, Status: StatusSkipped, Reason: reason, Unsettled: rule}
		}
	}
	b.mu.Lock()
	b.results[i] = fr
	b.mu.Unlock()
	b.r.remember(fr)
	b.r.done(fr)
}

// fail finishes task i as failed with err.
func (b *batchRun) fail(i int, t Task, err error) {
	b.finish(i, FileResult{Task: t, Status: StatusFailed, Err: err})
}

// skip finishes task i as not started because the run was interrupted;
// it is reported like every other file: one result line each.
func (b *batchRun) skip(i int, t Task) {
	b.finish(i, FileResult{Task: t, Status: StatusSkipped, Reason: ReasonNotStarted,
		Err: fmt.Errorf("%s: %w", t.Input, context.Cause(b.ctx))})
}

// settled finishes a task that needs no conversion (Triage settled it,
// the run was interrupted, or planning failed it) and reports whether it
// did. A task Triage settled keeps its outcome ("up to date", ...) when
// the run was interrupted: it needed no conversion either way.
func (b *batchRun) settled(it queued, t Task) bool {
	switch {
	case t.Done != nil:
		b.finish(it.i, *t.Done)
	case b.ctx.Err() != nil:
		b.skip(it.i, t)
	case t.Err != nil:
		b.fail(it.i, t, t.Err)
	default:
		return false
	}
	return true
}

// waitTurn waits until a task retried for its lock may be tried again;
// false when the run was interrupted meanwhile (the task is skipped).
func (b *batchRun) waitTurn(it queued, t Task) bool {
	if wait := time.Until(it.next); wait > 0 {
		select {
		case <-time.After(wait):
		case <-b.ctx.Done():
			b.skip(it.i, t)
			return false
		}
	}
	return true
}

// checkFresh is the up-to-date check of a run without locks (with them,
// the check made under the lock, prepareUnderLock, is the one that
// counts): it sets t's pending outputs, and finishes the task and returns
// false when nothing is to be done or an output was replaced by another
// program.
func (b *batchRun) checkFresh(it queued, t *Task) bool {
	if it.attempts != 0 || b.r.Locks != nil {
		return true
	}
	fr, pending, done := b.r.preflight(*t, false)
	if done {
		b.finish(it.i, fr)
		return false
	}
	t.Pending, t.keptNote = pending, fr.Reason
	kept, err := b.r.verifyReplaced(t)
	if err != nil {
		b.fail(it.i, *t, err)
		return false
	}
	if kept != nil {
		b.finish(it.i, *kept)
		return false
	}
	return true
}

// takeSlot waits for a job slot (jobsFor the tasks left behind it that
// will convert: toConvert); false when the run was interrupted meanwhile
// (the task is skipped). A job slot, the lock, then memory: in queue
// order. Only the Run loop takes slots, so a count below the limit stays
// below it until it does.
func (b *batchRun) takeSlot(it queued, t Task) bool {
	for {
		if len(b.slots) < b.jobsFor(b.toConvert(b.queue, 1)) {
			b.slots <- struct{}{}
			return true
		}
		select {
		case <-b.freed:
		case <-b.ctx.Done():
			b.skip(it.i, t)
			return false
		}
	}
}

// toConvert counts the tasks of q that Triage did not settle (up to
// date, failed at planning: Task.Done, Task.Err), up to atMost; a task
// found up to date only at its turn is counted.
func (b *batchRun) toConvert(q []queued, atMost int) int {
	n := 0
	for _, it := range q {
		if n >= atMost {
			break
		}
		if t := b.p.Tasks[it.i]; t.Done == nil && t.Err == nil {
			n++
		}
	}
	return n
}

// jobsFor is how many files may be in flight once a task with left tasks
// queued behind it starts: Jobs, one more for the last task with
// TailJob.
func (b *batchRun) jobsFor(left int) int {
	n := max(1, b.r.Jobs)
	if b.r.TailJob && left == 0 {
		n++
	}
	return n
}

// releaseSlot gives a job slot back and wakes takeSlot.
func (b *batchRun) releaseSlot() {
	<-b.slots
	select {
	case b.freed <- struct{}{}:
	default:
	}
}

// takeLocks takes the locks of t's outputs (none without Locks: nil, true).
// A task locked by another run gives its slot back and goes to the back of
// the queue with capped exponential backoff, until LockWait (or
// LockWaitOther for a holder doing other work); after that it finishes as
// locked, or as failed naming what the holder does. It returns false when
// the task was requeued or finished.
func (b *batchRun) takeLocks(it *queued, t Task) (lock.Held, bool) {
	r := b.r
	if r.Locks == nil {
		return nil, true
	}
	note := r.lockNote(t)
	lk, err := r.Locks.TryLockAll(lockKeys(t), note, lockDoing(t))
	if err == nil {
		return lk, true
	}
	b.releaseSlot()
	now := time.Now()
	if it.attempts == 0 {
		it.first, it.notAfter = now, now.Add(r.LockWait)
	}
	// A holder writing exactly this run's outputs is left to
	// it (after LockWait); one doing other work (other
	// variants or settings, another input with the same
	// output name) is waited for up to LockWaitOther, since
	// this run's outputs are not being made: under the lock,
	// the up-to-date check then finds what is left to do.
	var le *lock.LockedError
	otherWork := errors.As(err, &le) && le.Holder.PID != 0 && le.Holder.Note != note
	// A holder whose record is not written yet (it has just
	// taken the lock) is asked again a few times.
	unknown := le != nil && le.Holder.PID == 0 && it.attempts < 4
	until := it.notAfter
	if otherWork {
		until = it.first.Add(r.lockWaitOther())
	}
	if errors.Is(err, lock.ErrLocked) && (now.Before(until) || unknown) {
		delay := lock.Backoff(it.attempts)
		if now.Before(until) {
			delay = min(delay, until.Sub(now))
		}
		it.next = now.Add(delay)
		it.attempts++
		b.queue = append(b.queue, *it) // to the back of the queue
		return nil, false
	}
	st := StatusFailed
	switch {
	case otherWork:
		err = lockedOtherErr(le, now.Sub(it.first))
	case errors.Is(err, lock.ErrLocked):
		st = StatusLocked
	}
	b.finish(it.i, FileResult{Task: t, Status: st, Err: fmt.Errorf("%s: %w", t.Input, err)})
	return nil, false
}

// prepareUnderLock runs, holding t's locks lk, the up-to-date check that
// counts (another run may have just converted the file), the check that no
// output was replaced by another program, the removal of temporary files
// a killed run left for t's outputs, and the claim of t's new outputs. On
// any of them ending the task, it releases lk and the slot, finishes the
// task and returns false.
func (b *batchRun) prepareUnderLock(it queued, t *Task, lk lock.Held) bool {
	r := b.r
	end := func(fr FileResult) bool {
		lk.Unlock()
		b.releaseSlot()
		b.finish(it.i, fr)
		return false
	}
	fr, pending, done := r.preflight(*t, true)
	if done {
		return end(fr)
	}
	t.Pending, t.keptNote = pending, fr.Reason
	kept, err := r.verifyReplaced(t)
	if err != nil {
		return end(FileResult{Task: *t, Status: StatusFailed, Err: err})
	}
	if kept != nil {
		return end(*kept)
	}
	for _, o := range t.Outputs {
		pipeline.RemoveTemps(o.Path) // left by a killed run
	}
	// Claim the new outputs before converting, still under the
	// locks, so that another input's run never takes them for
	// its own, even if this one is killed before its records are
	// saved.
	if err := r.claim(*t); err != nil {
		return end(FileResult{Task: *t, Status: StatusFailed, Err: err})
	}
	return true
}

// admitMemory waits until t's memory fits in the budget beside the files
// in flight and decides its threads (admit); it sets t's threads and its
// Estimate at them, and returns the grant. On failure (over budget, or
// interrupted) it releases lk and the slot, finishes the task and returns
// false.
func (b *batchRun) admitMemory(it queued, t *Task, lk lock.Held) (budget.Grant, bool) {
	g, err := b.admit(t)
	if err == nil {
		return g, true
	}
	if lk != nil {
		lk.Unlock()
	}
	b.releaseSlot()
	if b.ctx.Err() != nil {
		b.skip(it.i, *t)
	} else {
		b.finish(it.i, FileResult{Task: *t, Status: StatusFailed, Err: fmt.Errorf("%s: %w", t.Input, err), NeedBytes: refusedBytes(err)})
	}
	return budget.Grant{}, false
}

// refusedBytes is the need an over-budget error names (0 for another
// error).
func refusedBytes(err error) int64 {
	var ob *budget.OverBudgetError
	if errors.As(err, &ob) {
		return ob.Need
	}
	return 0
}

// start converts task i on its own goroutine (convertRetrying), then
// drops the claims its records did not replace, releases its memory and
// threads (g), lock and slot, and finishes it.
func (b *batchRun) start(i int, t Task, lk lock.Held, g budget.Grant) {
	r := b.r
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		// The grant is released after the slot (defers run last first),
		// so that a file the freed memory admits counts only the files
		// still in flight (atOnce counts slots) and gets their threads.
		held := true
		c := b.track(&t, g)
		defer func() {
			if held {
				b.release(c)
			}
		}()
		defer b.releaseSlot()
		// Its threads go back before its slot does: a file that the slot
		// lets start then shares only the cores still held (otherwise it
		// got one thread beyond the cores: TestThreadsGrowAtTheEnd).
		defer func() {
			if held {
				b.releaseThreads(c)
			}
		}()
		if lk != nil {
			defer lk.Unlock()
		}
		if r.Started != nil {
			r.Started(t)
		}
		fr := r.convertRetrying(b.ctx, t)
		if errors.Is(fr.Err, rawerr.ErrNeedsWhole) && !t.whole {
			// Admitted to stream, it must be made whole: admitted
			// again at its whole-image estimate, and converted again.
			b.release(c)
			held = false
			var err error
			if g, err = b.admitWhole(&t); err != nil {
				fr = FileResult{Task: t, Status: StatusFailed, Err: fmt.Errorf("%s: %w", t.Input, err)}
				if b.ctx.Err() != nil {
					fr.Status, fr.Reason = StatusSkipped, ReasonNotStarted
				}
			} else {
				held = true
				c = b.track(&t, g)
				fr = r.convertRetrying(b.ctx, t)
			}
		}
		if n := b.threadsNow(c); n > fr.Threads && fr.Threads > 0 && !t.whole && !r.keepsWhole() {
			// It grew: its estimate at the most threads it held.
			fr.Task.Estimate = r.estimateAt(t, n)
		}
		if held {
			fr.NeedBytes = b.heldBytes(c) // grants only grow: the most it held
		} else {
			fr.NeedBytes = refusedBytes(fr.Err)
		}
		if lk != nil {
			r.unclaim(t) // claims the conversion did not replace by records
		}
		if t.newPhoto != "" && fr.Status == StatusConverted {
			fr.Result.Warnings = append(fr.Result.Warnings, t.newPhoto)
		}
		if t.keptNote != "" && fr.Status == StatusConverted {
			fr.Result.Warnings = append(fr.Result.Warnings, t.keptNote)
		}
		b.finish(i, fr)
		if r.executor().Overhead() == 0 {
			// Converted in this process: return this file's buffers
			// before the next file allocates (they are pointer-free, so
			// a collection is cheap). A worker process's buffers are its
			// own; a collection here would only cost this process a
			// stop of the world and a sweep per file.
			runtime.GC()
		}
	}()
}

// Triage marks the tasks that need no conversion (Task.Done): outputs that
// are up to date, inputs still being written. It reads no pixel data and no
// header, only stats and up-to-date records (hashing an input only when its
// size or time changed), so an unchanged re-run costs little; call it
// before Plan.Inspect. It stops once p.Ctx is done (a signal).
func (r *Runner) Triage(p *Plan) {
	if r.started.IsZero() {
		r.started = time.Now()
	}
	r.expand(p)
	for i := range p.Tasks {
		if p.Ctx != nil && p.Ctx.Err() != nil {
			break // a signal: the run starts none of them
		}
		if p.Tasks[i].Err != nil {
			continue
		}
		fr, pending, done := r.preflight(p.Tasks[i], false)
		if done && (fr.Status == StatusFailed || fr.Status == StatusKept || fr.Reason == reasonNoRecreate) && r.mayBeOtherPhoto(p.Tasks[i]) {
			// Perhaps another photograph's output name: decided once its
			// header is read (Relocate).
			p.Tasks[i].deferred = true
		} else if done {
			p.Tasks[i].Done = &fr
		} else if kf := r.knownFailure(p.Tasks[i]); kf != nil {
			p.Tasks[i].Done = kf
		} else {
			p.Tasks[i].Pending, p.Tasks[i].keptNote = pending, fr.Reason
		}
	}
}

// otherInputErr is the failure of t when its output o was written from
// another input that still exists.
// The output is named as on disk: o's path when it exists, else the
// record's own (records are keyed case-folded: x.jpg for X.jpg).
func otherInputErr(t Task, o Output, other *state.OtherInputError) error {
	path := o.Path
	if _, err := os.Lstat(path); err != nil && other.Output != "" {
		path = recordedPath(o, &state.Record{Output: other.Output})
	}
	if other.Claim {
		return fmt.Errorf("%s: its output %s was being written from %s by a run that did not finish, and that file still exists; two inputs map to one output: convert this folder into another output directory, or name the outputs apart (--name '{camera}_{stem}', or '{date}_{stem}'), or, if %s is not that file's picture, move it away", t.Input, path, other.Input, path)
	}
	return fmt.Errorf("%s: its output %s was written from %s, which still exists; two inputs map to one output: convert this folder into another output directory, or name the outputs apart (--name '{camera}_{stem}', or '{date}_{stem}')", t.Input, path, other.Input)
}

// lockNote describes the work a run does on t, for its lock's holder
// record: a hash of every output's path and settings hash. Two runs with
// the same note would write the same files.
func (r *Runner) lockNote(t Task) string {
	parts := []string{r.Version, t.absInput()}
	for _, o := range t.Outputs {
		parts = append(parts, o.Rel, outputHash(r.taskSettings(t), o.Variant))
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
	if reason, rule, err := r.inputWaits(t); err != nil || reason != "" {
		fr.Reason, fr.Unsettled = reason, rule
		if err != nil {
			fr.Status, fr.Err = StatusFailed, err
		}
		return fr, nil, true
	}
	if err := r.otherPhotoErr(t); err != nil {
		fr.Status, fr.Err = StatusFailed, err
		return fr, nil, true
	}
	deleted, kept := 0, 0
	var keptOuts []string
	for i, o := range t.Outputs {
		need, err := r.outputNeed(t, o, underLock)
		switch {
		case err != nil:
			fr.Status, fr.Err = StatusFailed, err
			return fr, nil, true
		case need == needChanging:
			fr.Reason, fr.Unsettled = "still being written (it changed while being read)", "changed while its record was read"
			return fr, nil, true
		case need == needWrite:
			pending = append(pending, i)
		case need == needLeftDeleted:
			deleted++
		case need == needKept:
			kept++
			keptOuts = append(keptOuts, o.Path)
		}
	}
	if len(pending) > 0 && len(keptOuts) > 0 {
		fr.Reason = keptNote(keptOuts) // a note for the conversion of the others
	}
	if len(pending) == 0 {
		fr.Reason = "up to date"
		if kept > 0 {
			fr.Status, fr.Reason = StatusKept, ReasonKept
		} else if deleted > 0 {
			fr.Reason = reasonNoRecreate
		} else if r.Force {
			fr.Reason = "up to date (converted by another run since this one started)"
		}
		return fr, nil, true
	}
	return fr, pending, false
}

// stillCopying returns why a file that failed with err as truncated (it
// ends before its data) is rather still being written, and is left for a
// later run, not failed: it changed in size or time since the plan, or it
// was modified less than copyingAge ago (a copy that stalled for longer
// than --min-age); and the rule that fired (FileResult.Unsettled). ""
// when it is not: an old truncated file fails as corrupt, and under
// NoSettle so does a recent one that did not change during the run (a CI
// job that copies its files and converts at once must see a broken one
// fail; a change seen during the run is a copy in progress whatever
// --min-age says).
func (r *Runner) stillCopying(t Task, err error) (reason, rule string) {
	if err == nil || !isTruncated(err) {
		return "", ""
	}
	st, serr := os.Stat(t.Input)
	if serr != nil {
		return "", ""
	}
	if t.Size != 0 && (st.Size() != t.Size || !st.ModTime().Equal(t.ModTime)) {
		return "still being written, try again (it ends before its data, and its size or time changed during the run)",
			"found truncated, its size or time changed during the run"
	}
	if age := time.Since(st.ModTime()); !r.NoSettle && age >= -time.Second && age < copyingAge {
		return fmt.Sprintf("still being written, try again (it ends before its data, and was modified %.1f s ago)", max(age.Seconds(), 0)),
			fmt.Sprintf("found truncated and modified within the last %s", copyingAge)
	}
	return "", ""
}

// copyingAge is how recently a truncated file must have been modified to
// count as a copy still in progress.
const copyingAge = time.Minute

// isTruncated reports whether err is a file ending before its data: a
// header's header.ErrTruncated, or a worker's corrupt failure saying so
// (its error crosses a process boundary as text and kind).
func isTruncated(err error) bool {
	return errors.Is(err, header.ErrTruncated) ||
		errors.Is(err, rawerr.ErrCorrupt) && strings.Contains(err.Error(), "past the end of the")
}

// inputWaits returns why t's input is left for a later run ("": it is
// not): deleted or moved since the plan, modified within MinAge, or
// changed in size or time since the plan, with the rule that found it
// still being written (FileResult.Unsettled); or the error of an input
// that cannot be read.
func (r *Runner) inputWaits(t Task) (reason, rule string, err error) {
	st, err := os.Stat(t.Input)
	if errors.Is(err, fs.ErrNotExist) && t.Size != 0 {
		// It was there when the run started: deleted or moved since (a
		// card being cleared), nothing wrong with it.
		return "deleted or moved since the run started", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", t.Input, pipeline.PathReason(t.Input, err))
	}
	// A modification time in the future (camera clock or time zone off)
	// says nothing about the file being written: only a recent one does.
	if age := time.Since(st.ModTime()); r.MinAge > 0 && age >= -time.Second && age < r.MinAge && !t.Settled {
		return fmt.Sprintf("still being written (modified %.1f s ago; --min-age %s)", max(age.Seconds(), 0), r.MinAge),
			fmt.Sprintf("modified within --min-age %s", r.MinAge), nil
	}
	if t.Size != 0 && (st.Size() != t.Size || !st.ModTime().Equal(t.ModTime)) {
		return "still being written (its size or time changed during the run)", "its size or time changed during the run", nil
	}
	return "", "", nil
}

// otherPhotoErr fails t when an output holds the export of another
// photograph: never replaced, whatever the flags (a task Relocate could
// not move fails here), unless the user deleted that export (otherGone).
func (r *Runner) otherPhotoErr(t Task) error {
	if t.otherGone {
		return nil // its export was deleted (Relocate): this one takes the name
	}
	for _, o := range t.Outputs {
		if _, why := r.otherPhotograph(t, o); why != "" {
			return &wrapped{fmt.Sprintf("%s: its output %s holds the export of another photograph (%s); not replacing it: move it away", t.Input, o.Path, why), ErrOtherPhoto}
		}
	}
	return nil
}

// outputNeed is what one output of t needs (preflight).
type outputNeed int

const (
	needNothing     outputNeed = iota // up to date
	needWrite                         // to be (re)written
	needLeftDeleted                   // deleted by the user, left so (--no-recreate)
	needChanging                      // the input changed while its record was checked
	needKept                          // changed since rawbatch wrote it, left alone (EditedKeep)
)

// outputNeed decides what output o of t needs, from what is at its path,
// its record and the flags (Overwrite, NoRecreate, Force). Errors: the
// file fails (a directory at the path, another input's output, a file
// rawbatch did not write without Overwrite).
func (r *Runner) outputNeed(t Task, o Output, underLock bool) (outputNeed, error) {
	// Not even --overwrite replaces a directory or other non-file: fail
	// before decoding, and before any output of the file is written.
	if fi, err := os.Lstat(o.Path); err == nil && !fi.Mode().IsRegular() && fi.Mode()&fs.ModeSymlink == 0 {
		return needNothing, fmt.Errorf("%s: its output %s is a %s, not a file; move it away", t.Input, o.Path, pipeline.FileKind(fi.Mode()))
	}
	own := r.ownerOf(o)
	if own == outForeign || own == outChanged {
		// Not even --overwrite writes over another input's output.
		var other *state.OtherInputError
		if r.State != nil && errors.As(r.State.CheckOther(r.want(t, o)), &other) {
			return needNothing, otherInputErr(t, o, other)
		}
		if own == outChanged && r.EditedKeep && !r.Overwrite {
			return needKept, nil
		}
		if !r.Overwrite {
			return needNothing, notOursErr(t, o, own)
		}
		return needWrite, nil
	}
	if own == outDeleted && r.NoRecreate && !t.otherGone {
		return needLeftDeleted, nil
	}
	if r.State == nil {
		return needWrite, nil
	}
	if r.Force {
		return r.forcedNeed(t, o, underLock)
	}
	v, err := r.State.Check(r.want(t, o))
	var other *state.OtherInputError
	if errors.As(err, &other) {
		return needNothing, otherInputErr(t, o, other)
	}
	if err != nil {
		if errors.Is(err, state.ErrChanging) {
			return needChanging, nil
		}
		return needWrite, nil // convert; the record is rewritten after
	}
	if v.Updated != nil {
		r.State.Save(v.Updated)
	}
	if !v.Fresh {
		return needWrite, nil
	}
	return needNothing, nil
}

// forcedNeed is outputNeed under Force: written again, except over
// another input's output (an error), and except when, under the lock, an
// overlapping run has just converted it with the same settings from the
// same input (size and modification time, however it was named): --force
// converts each file once per run.
func (r *Runner) forcedNeed(t Task, o Output, underLock bool) (outputNeed, error) {
	var other *state.OtherInputError
	if errors.As(r.State.CheckOther(r.want(t, o)), &other) {
		return needNothing, otherInputErr(t, o, other)
	}
	if rec, err := r.State.Load(o.Rel); underLock && err == nil && rec.Written.After(r.started) &&
		rec.SettingsHash == outputHash(r.taskSettings(t), o.Variant) && rec.InputSize == t.Size && rec.InputMTime.Equal(t.ModTime) {
		return needNothing, nil
	}
	return needWrite, nil
}

// keptNote is the warning of a file converted without the outputs at
// paths, which were edited since rawbatch wrote them and are kept.
func keptNote(paths []string) string {
	return fmt.Sprintf("%s: kept (edited since rawbatch wrote it); the other outputs were written", strings.Join(paths, ", "))
}

// reasonNoRecreate is the skip reason of a file whose outputs the user
// deleted, under --no-recreate.
const reasonNoRecreate = "output deleted; --no-recreate"

func (r *Runner) want(t Task, o Output) state.Want {
	return state.Want{Input: t.Input, InputAbs: t.absInput(), OutputRel: o.Rel, OutputPath: o.Path,
		SettingsHash: outputHash(r.taskSettings(t), o.Variant), Rawbatch: r.Version, LibRaw: pipeline.LibRawInfo().Version}
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
	if fr.Status == StatusFailed && inputDeleted(t.Input) {
		fr.Status, fr.Err, fr.Reason = StatusSkipped, nil, reasonDeleted
	}
	if fr.Status != StatusConverted {
		return fr
	}
	if r.State == nil {
		return r.fence(fr)
	}
	checked := time.Now()
	hash, size, mtime, err := state.HashFile(t.Input)
	// The content decoded (hashed just before decoding) must still be the
	// input's: a replacement with the same size and time (cp -p, rsync -a)
	// would otherwise keep the old picture for good.
	decoded := fr.Result.InputHash
	if err != nil || (t.Size != 0 && (size != t.Size || !mtime.Equal(t.ModTime))) || (decoded != "" && decoded != hash) {
		// Converted from a file that was still changing: do not keep it,
		// nor a record of an earlier output, so the next run converts it.
		for _, o := range t.pending() {
			os.Remove(o.Path)
			r.State.Remove(o.Rel)
		}
		fr.Status, fr.Reason, fr.Unsettled = StatusSkipped, "still being written (it changed during the conversion)", "changed during the conversion"
		if errors.Is(err, fs.ErrNotExist) {
			fr.Reason, fr.Unsettled = reasonDeleted, ""
		}
		return fr
	}
	if fr = r.fence(fr); fr.Status != StatusConverted {
		return fr // no record: the outputs stay, unrecorded
	}
	var failed []error
	for _, o := range t.pending() {
		// The output's own hash, so that a later edit or replacement by
		// another program is told from rawbatch's file (OutputMatches).
		oh, osize, omtime, err := state.HashFile(o.Path)
		if err != nil {
			continue
		}
		rec := &state.Record{Input: t.Input, InputAbs: t.absInput(), InputSize: size, InputMTime: mtime, InputHash: hash, InputChecked: checked,
			SettingsHash: outputHash(r.taskSettings(t), o.Variant), Rawbatch: r.Version, LibRaw: pipeline.LibRawInfo().Version,
			Output: o.Rel, OutputSize: osize, OutputHash: oh, OutputMTime: omtime}
		rec.CaptureTime, rec.Camera = photoID(t.Info.Header)
		if err := r.saveRecord(rec); err != nil {
			// An earlier record would now disagree with the new output
			// and make it look changed by another program: drop it.
			r.State.Remove(o.Rel)
			failed = append(failed, err)
		}
	}
	if len(failed) > 0 {
		fr.Status = StatusFailed
		fr.Err = fmt.Errorf("%s: converted, but %w (the output is kept; the next run converts it again): %w", t.Input, ErrRecordNotSaved, errors.Join(failed...))
	}
	return fr
}

// fence calls Fence for a converted fr, whose outputs are in place and
// not yet recorded: on its error, fr fails (ErrFenced, naming the input).
func (r *Runner) fence(fr FileResult) FileResult {
	if r.Fence == nil {
		return fr
	}
	if err := r.Fence(); err != nil {
		fr.Status = StatusFailed
		fr.Err = fmt.Errorf("%s: converted, but %w: %w", fr.Input, ErrFenced, err)
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
	dirs := []string{filepath.Dir(t.Output)} // variants may go to other folders (--name)
	for _, o := range t.Outputs {
		if d := filepath.Dir(o.Path); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	for _, mk := range []func(outDir, dir string) error{checkBelow, mkdirBelow} {
		for _, d := range dirs {
			if err := mk(r.OutDir, d); err != nil {
				fr.Status, fr.Err = StatusFailed, fmt.Errorf("%s: creating output directory: %w", t.Input, err)
				return fr
			}
		}
	}
	s := r.settingsOf(t)     // its preset's, with the file's own edit
	if len(t.Outputs) == 0 { // a Runner used without Triage/Run's expand
		t.Outputs = []Output{{Variant: s.OutputVariants()[0], Path: t.Output, Rel: t.OutputRel}}
	}
	timeout := r.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout(float64(t.Info.Width) * float64(t.Info.Height) / 1e6)
	}
	threads := t.threads // decided at admission
	if threads == 0 {    // a Runner used without Run
		threads = r.Threads
	}
	j := Job{Input: []byte(t.Input), Output: []byte(t.Output), OutDir: []byte(r.OutDir), Settings: s, Threads: threads, Header: t.Info.Header,
		Estimate: t.Estimate.Total, Whole: t.Estimate.Whole, Timeout: timeout, Grace: r.Grace, Abort: r.Abort, MoreThreads: t.more}
	if r.readsCache(t) {
		j.Cache = r.cacheRequest()
	}
	for _, o := range t.pending() {
		j.Outputs = append(j.Outputs, JobOutput{Variant: o.Variant, Path: []byte(o.Path)})
	}
	ex := r.executor()
	before := statOutputs(t.pending()) // committed.go
	out := ex.Execute(ctx, j)
	res, err := out.Result, out.Err
	fr.PeakBytes, fr.Messages = out.PeakBytes, out.Messages
	if t.Estimate.Total > 0 && out.PeakBytes > 0 {
		if w := overshootWarning(out.PeakBytes, t.Estimate.Total+ex.Overhead()); w != "" {
			res.Warnings = append(res.Warnings, w)
		}
	}
	if out.Stopped {
		for _, o := range j.Outputs {
			pipeline.RemoveTemps(string(o.Path)) // the stopped conversion's partial outputs
		}
	}
	fr.Result, fr.Duration = res, time.Since(t0)
	fr.Decoded, fr.Threads = res.Decoded, j.Threads
	fr.ThreadsMax = max(j.Threads, res.ThreadsMax)
	switch {
	case err == nil:
		fr.Status = StatusConverted
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		fr.Status, fr.Err, fr.Reason = StatusSkipped, err, ReasonCancelled
	default:
		fr.Status, fr.Err = StatusFailed, err
	}
	switch {
	case out.NoReply:
		r.removeCommitted(&fr, t.pending(), before) // committed.go
	case out.Stopped && err != nil:
		settleStopped(&fr, t.pending(), before, r) // its outputs may be in place
	}
	return fr
}
