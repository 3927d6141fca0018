package batch

import (
	"context"
	"time"

	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/pipeline/header"
)

// The runner hands each admitted file to an Executor: the runner owns
// planning, freshness, locks, the memory budget, retries, records and the
// report; the executor only converts the file into its outputs' temporary
// files and renames them into place, or reports why not. Both executors
// are local: Subprocess (a worker process of the rawbatch binary per file,
// the default of a Runner with Exe) and InProcess; the multi-host mode
// runs a Runner on each worker host instead (Runner.Shared).

// Executor converts one file, as Job describes it.
type Executor interface {
	// Execute converts j and returns its Outcome; it never panics for a
	// bad file. It returns when the conversion has ended: finished, failed,
	// or stopped (ctx ended and j.Grace passed, or j.Abort was closed).
	// After an Outcome with Stopped set, temporary files of j's outputs
	// may be left: the runner removes them (pipeline.RemoveTemps).
	Execute(ctx context.Context, j Job) Outcome
	// Overhead is the memory in bytes this executor adds on this host to
	// each conversion beyond its estimate (a worker process's own RSS:
	// WorkerRSS; 0 in process), counted in the runner's budget.
	Overhead() int64
}

// Job is one file to convert.
type Job struct {
	// Input is the input path as bytes (file names need not be UTF-8).
	Input []byte
	// Output is the task's first output path (Task.Output), as bytes;
	// the Outcome's Result names it.
	Output []byte
	// Outputs are the outputs to write (those not up to date), each from
	// its own temporary file renamed into place only when all succeeded.
	Outputs []JobOutput
	// OutDir is OUTDIR as bytes (empty: none): the outputs' folders under
	// it are walked to without following a symbolic link, and the outputs
	// written relative to the folders so opened
	// (pipeline.OutputSpec.Root).
	OutDir []byte
	// Settings are the develop settings (what the outputs look like).
	Settings pipeline.Settings
	// Threads caps LibRaw's OpenMP threads for this conversion (0:
	// OpenMP's default), decided by the runner as it admits the file (or
	// Runner.Threads); a worker process also runs its Go stages on as many
	// CPUs (GOMAXPROCS). InProcess leaves GOMAXPROCS alone: it is the
	// process's, shared by the conversions running in it.
	Threads int
	// MoreThreads, when not nil, delivers raised thread counts while the
	// conversion runs (each above the ones before; the runner gives it
	// cores other files have freed, budget.Scheduler.Grow): a worker is
	// told each ("threads N" on its stdin) and raises its GOMAXPROCS and
	// the count its pipeline reads at each band
	// (pipeline.ConvertOptions.LiveThreads); InProcess raises only the
	// latter. LibRaw's OpenMP threads stay at Threads.
	MoreThreads <-chan int
	// Header is the file's header when already read in this process (nil:
	// read by the executor); executors in other processes ignore it.
	Header *header.Header
	// Cache is the stage cache to use (nil: none).
	Cache *CacheRequest
	// Estimate is the conversion's memory estimate in bytes (0: none),
	// which a worker process sets as its Go memory limit; Whole is its
	// whole-image estimate (pipeline.Memory.Whole): above Estimate, the
	// conversion stops with rawerr.ErrNeedsWhole if it cannot stream
	// (pipeline.ConvertOptions.Admitted).
	Estimate, Whole int64
	// Timeout bounds the conversion (0: none); Grace is how long it may
	// finish after ctx ends, and closing Abort (nil: never) stops it at
	// once.
	Timeout, Grace time.Duration
	Abort          <-chan struct{}
}

// JobOutput is one output of a Job: its variant, and its final path as
// bytes (the conversion writes it through a temporary file in the same
// directory, pipeline.TempPattern).
type JobOutput struct {
	Variant pipeline.Variant
	Path    []byte
}

// CacheRequest is the stage cache a conversion uses: its directory (as
// bytes), its cap in bytes (0: none), and whether entries are kept after
// the file's variants are written.
type CacheRequest struct {
	Dir  []byte
	Max  int64
	Keep bool
}

// Outcome is how a Job ended.
type Outcome struct {
	// Result is the conversion's result (also partly filled on failure).
	Result pipeline.Result
	// Err is nil on success, else the failure wrapping its rawerr kind
	// (errors.Is(err, rawerr.ErrCorrupt), ErrCrashed, ErrTimeout,
	// ErrTransient, a context error when stopped, ...) and naming the
	// input.
	Err error
	// PeakBytes is the conversion's peak resident memory in bytes, when
	// the executor measures it (a worker's ru_maxrss; 0: unknown).
	PeakBytes int64
	// Messages are what the conversion printed (a worker's stderr:
	// LibRaw's and libjpeg's messages).
	Messages string
	// Crashed, TimedOut and Interrupted say how a conversion that did
	// not finish by itself ended: it died of a signal (or the OOM killer),
	// it ran past Timeout, or it was stopped because ctx ended. Stopped is
	// any of them, or a failure to run the conversion at all: its outputs'
	// temporary files may be left.
	Crashed, TimedOut, Interrupted, Stopped bool
	// NoReply says that the conversion ended by itself without telling
	// how (a worker that exited without a well-formed reply; Stopped is
	// set too): its file fails, and the outputs it committed are removed,
	// since whatever kept it from replying may have gone wrong before it
	// committed them. A conversion stopped from outside (killed by a
	// signal: the timeout, an interrupt, the OOM killer, a kill -9) is
	// not NoReply: its committed outputs are complete (settleStopped).
	NoReply bool
}

// specs returns j's outputs as pipeline.OutputSpecs.
func (j Job) specs() []pipeline.OutputSpec {
	var specs []pipeline.OutputSpec
	for _, o := range j.Outputs {
		specs = append(specs, pipeline.OutputSpec{Variant: o.Variant, Path: string(o.Path), Root: string(j.OutDir)})
	}
	return specs
}

// convertJob converts j's file into its outputs in this process: the one
// path from a Job to pipeline.ConvertOutputs, for the worker process
// (workerMain) and InProcess. It opens j's stage cache (one that cannot
// be used is a warning of the result, not a failure) and passes j's
// header (nil: read), threads, admitted and whole-image estimates as
// pipeline.ConvertOptions; live, when not nil, is the thread count raised
// while the file converts (ConvertOptions.LiveThreads). Errors are
// ConvertOutputs'.
func convertJob(ctx context.Context, j Job, live func() int) (pipeline.Result, error) {
	copts, cacheWarn := openCache(string(j.Cache.dir()), j.Cache.max(), j.Cache != nil && j.Cache.Keep)
	o := pipeline.ConvertOptions{Header: j.Header, Cache: copts, Threads: j.Threads, LiveThreads: live,
		Admitted: j.Estimate, Whole: j.Whole}
	res, err := pipeline.ConvertOutputs(ctx, string(j.Input), j.specs(), j.Settings, o)
	if cacheWarn != "" {
		res.Warnings = append(res.Warnings, cacheWarn)
	}
	return res, err
}

// executor returns the Executor of r: Executor when set, else a
// Subprocess of Exe, or InProcess when Exe is empty.
func (r *Runner) executor() Executor {
	switch {
	case r.Executor != nil:
		return r.Executor
	case r.Exe != "":
		return Subprocess{Exe: r.Exe}
	default:
		return InProcess{}
	}
}
