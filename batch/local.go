package batch

import (
	"context"
	"errors"
	"fmt"
)

// Subprocess is the local Executor of a rawbatch run: each file is
// converted by a child process `Exe worker` (WorkerMain) speaking the
// versioned wire format of worker.go, so a crash or hang of LibRaw fails
// that file only. The children are pooled and serve many files each
// (pool.go); the child converting a file is killed (and replaced for the
// next file) after the Job's Timeout, after its Grace once ctx ends, or at
// once when its Abort is closed.
type Subprocess struct {
	// Exe is the rawbatch executable (or a test binary acting as one).
	Exe string
}

// Overhead is a worker process's own resident memory, WorkerRSS.
func (Subprocess) Overhead() int64 { return WorkerRSS }

// Execute runs j in a worker process of the pool of e.Exe.
func (e Subprocess) Execute(ctx context.Context, j Job) Outcome {
	run := poolFor(e.Exe).run(ctx, j)
	var out Outcome
	if run.err == nil {
		out.Result, out.Err = run.reply.result() // paths as bytes, exactly
	}
	out.Result.Input, out.Result.Output = string(j.Input), string(j.Output)
	out.PeakBytes, out.Messages = run.peak, run.stderr
	if run.err != nil {
		out.Err = fmt.Errorf("%s: %w", j.Input, run.err)
		out.Stopped, out.NoReply = true, run.noReply
		out.Crashed = errors.Is(run.err, ErrCrashed)
		out.TimedOut = errors.Is(run.err, ErrTimeout)
		out.Interrupted = ctx.Err() != nil && (errors.Is(run.err, context.Canceled) || errors.Is(run.err, context.DeadlineExceeded) || errors.Is(run.err, context.Cause(ctx)))
	}
	return out
}

// InProcess is the Executor that converts in this process (no crash
// isolation, no timeout; ctx ending stops the conversion at its next
// stage): for tests and for callers that are themselves a worker.
type InProcess struct{}

// Overhead is 0: the conversion runs in this process.
func (InProcess) Overhead() int64 { return 0 }

// Execute converts j in this process.
func (InProcess) Execute(ctx context.Context, j Job) Outcome {
	var liveNow func() int
	if j.MoreThreads != nil && j.Threads > 0 {
		// Raised counts while it runs (Job.MoreThreads): the pipeline's,
		// not the process's GOMAXPROCS.
		live := &workerThreads{n: j.Threads, max: j.Threads}
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			for {
				select {
				case n, ok := <-j.MoreThreads:
					if !ok {
						return
					}
					live.raise(n, false)
				case <-stop:
					return
				}
			}
		}()
		liveNow = live.now
	}
	res, err := convertJob(ctx, j, liveNow)
	return Outcome{Result: res, Err: err}
}
