package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rawbatch/rawbatch/batch"
	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/queue"
)

// WorkOptions are the options of `rawbatch work`.
type WorkOptions struct {
	GlobalOptions
	Queue QueueOptions
	// MemBudget is the worker's memory budget in bytes, shared by the
	// jobs it runs at once; Jobs the most jobs at once.
	MemBudget int64
	Jobs      int
	// Metrics is the address of the Prometheus endpoint ("": none).
	Metrics string
	// Grace is how long running jobs may finish after SIGTERM.
	Grace time.Duration
	// CacheDir and CacheSize (bytes) are this host's stage cache.
	CacheDir  string
	CacheSize int64
	// PathMap maps the submitters' paths to this host's (--path-map).
	PathMap batch.PathMap
	// Allow are the directories a job may read its input from and write
	// its outputs into (--allow, at least one); Confine is them resolved.
	Allow   []string
	Confine batch.Confinement
	// Health is the address of the /healthz and /readyz endpoint ("": none).
	Health string
}

// AddFlags adds the flags of work's settings to f.
func (o *WorkOptions) AddFlags(f *pflag.FlagSet) { addFlags(f, o.settings()) }

// settings are the queue's settings and work's own.
func (o *WorkOptions) settings() []setting {
	return append(o.Queue.settings(), o.ownSettings()...)
}

// ownSettings declares work's own settings into o, once.
func (o *WorkOptions) ownSettings() []setting {
	var cacheFS int64
	return []setting{
		{Name: "mem-budget", Default: "", Help: "memory budget of this worker, shared by the jobs it runs at once: 4GiB, 3500MB or 50% (default 50% of the smaller of the cgroup limit and available memory); it takes a job only when the job's estimate fits",
			Apply: func(v value) (err error) {
				if o.MemBudget, err = memBudget(v.String()); err != nil {
					return fmt.Errorf("--mem-budget: %w", err)
				}
				return nil
			}},
		{Name: "jobs", Short: "j", Default: 0, Help: "most jobs converted at once (default: number of CPUs)",
			Apply: func(v value) (err error) {
				if o.Jobs, err = wholeNumber(v); err != nil {
					return err
				}
				switch {
				case o.Jobs < 0:
					return fmt.Errorf("--jobs %d: want a positive number, or 0 for the number of CPUs", o.Jobs)
				case o.Jobs == 0:
					o.Jobs = runtime.NumCPU()
				}
				return nil
			}},
		{Name: "allow", Default: []string(nil), Help: "DIR: a job may read its input from and write its outputs, records and locks into DIR only (after --path-map, symbolic links resolved); repeatable, at least one required; a job outside every DIR goes to the dead letters as refused",
			Apply: func(v value) error {
				o.Allow = nil
				if v.From() == unset {
					return nil
				}
				list, err := specList(v.Raw())
				if err != nil {
					return fmt.Errorf("--allow: %w", err)
				}
				o.Allow = list
				return nil
			}},
		{Name: "metrics", Default: "", Help: "serve Prometheus metrics on this address at /metrics (none by default); a port alone (:9180) listens on loopback only, give a host (0.0.0.0:9180) to listen elsewhere",
			Apply: func(v value) (err error) { o.Metrics, err = listenAddr("--metrics", v.String()); return err }},
		{Name: "health", Default: "", Help: "serve /healthz (alive) and /readyz (connected to the broker, not fenced) on this address (none by default); a port alone (:9181) listens on loopback only",
			Apply: func(v value) (err error) { o.Health, err = listenAddr("--health", v.String()); return err }},
		{Name: "grace", Default: 10 * time.Second, Help: "on SIGINT/SIGTERM, how long running jobs may finish before they are stopped and handed back to the queue (a second signal stops them at once)",
			Apply: durationInto(&o.Grace)},
		cacheDirSetting(func(v value) (err error) {
			if o.CacheDir, err = pathSetting(v); err != nil || o.CacheDir == "" {
				return err
			}
			if cacheFS, err = budget.FileSystemSize(o.CacheDir); err != nil {
				return fmt.Errorf("--cache-dir %s: %w", o.CacheDir, err)
			}
			return nil
		}),
		{Name: "cache-size", Default: "", Help: "cap of the stage cache: 2GiB, 25% (default 25% of the cache's file system)",
			Apply: func(v value) (err error) {
				if o.CacheDir == "" {
					return nil
				}
				o.CacheSize = cacheFS / 4
				if cs := v.String(); cs != "" {
					if o.CacheSize, err = budget.ParseSize(cs, cacheFS); err != nil {
						return fmt.Errorf("--cache-size: %w", err)
					}
				}
				return nil
			}},
		{Name: "path-map", Default: []string(nil), Help: "FROM=TO: read a job's paths under FROM (as the submitting host named them) under TO on this host (another mount point of the shared storage); repeatable, the first match applies",
			Apply: func(v value) error {
				o.PathMap = nil
				if v.From() == unset {
					return nil
				}
				list, err := specList(v.Raw())
				if err != nil {
					return fmt.Errorf("--path-map: %w", err)
				}
				for _, s := range list {
					m, err := batch.ParsePathMapping(s)
					if err != nil {
						return fmt.Errorf("--path-map: %w", err)
					}
					o.PathMap = append(o.PathMap, m)
				}
				return nil
			}},
	}
}

// newWorkCmd is `rawbatch work`: a long-running worker of the multi-host
// mode.
func newWorkCmd() *cobra.Command {
	var opts WorkOptions
	cmd := &cobra.Command{
		Use:   "work --allow DIR... [--mem-budget SIZE] [--jobs N] [--metrics ADDR] [--health ADDR] [--path-map FROM=TO]",
		Short: "Take jobs from the broker's queue and convert them, within a memory budget (multi-host mode)",
		Long: `Run a worker: take the jobs 'rawbatch submit' queued on the broker (--nats) and
convert each as convert would, in a worker process of its own, writing its
outputs (temporary file and rename) and their records into the job's OUTDIR.

A job is taken only while the memory budget has room for its estimate (the
jobs running at once share the budget and the CPUs as convert's files do);
jobs are queued by size class, so a worker never takes a file it cannot hold.
Each running job holds a lease on the broker, renewed every --beat: a worker
that cannot renew it (partitioned from the broker) stops the conversion and
commits nothing, and the job goes to another worker. Transient failures (no
space, interrupted I/O) are retried after --retry-backoff; permanent ones
(corrupt, unsupported, decoder crash, timeout) go to the dead letters
('rawbatch dead') with their reason.

SIGINT or SIGTERM: take no more jobs, let the running ones finish within
--grace, hand the rest back to the queue; a second signal stops them at once.
Paths in jobs are the submitting host's: mount the shared storage at the same
place on every host, or map it with --path-map. A job runs with this worker's
user's rights, whoever queued it: --allow (required, repeatable) names the
directories a job may read its input from and write its outputs, records and
locks into; a job whose input or OUTDIR is outside them (after --path-map,
symbolic links resolved) is not run: it goes to the dead letters as refused.
--metrics and --health listen on loopback unless given a host. See
docs/distributed.md.`,
		Example: `  rawbatch work --allow /nas/card --allow /nas/export --nats nats://broker:4222 --mem-budget 8GiB --metrics :9180
  rawbatch work --allow /Volumes/nas --path-map /mnt/nas=/Volumes/nas --health :9181`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.GlobalOptions = globalOptions(cmd)
			if _, err := resolve(cmd, opts.settings(), false); err != nil {
				return err
			}
			if len(opts.Allow) == 0 {
				return errors.New("work: give --allow DIR (repeatable): the directories jobs may read their inputs from and write their outputs into; a worker runs any client's jobs with its own user's rights")
			}
			var err error
			if opts.Confine, err = batch.NewConfinement(opts.Allow); err != nil {
				return fmt.Errorf("--allow: %w", err)
			}
			return runWork(cmd.Context(), opts, args)
		},
	}
	opts.AddFlags(cmd.Flags())
	return cmd
}

// lineLogger returns a logger of one line per event on w, each starting
// with a UTC timestamp.
func lineLogger(w io.Writer) func(string) {
	var mu sync.Mutex
	return func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "%s %s\n", time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), clean(msg))
	}
}

// listenAddr returns v, the address of an HTTP endpoint (flag names it),
// as net.Listen takes it: a port alone (":9180", "9180") on loopback
// only (127.0.0.1), a host and port as given; "" for none.
func listenAddr(flag, v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", nil
	}
	if !strings.Contains(v, ":") {
		v = ":" + v
	}
	host, port, err := net.SplitHostPort(v)
	if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("%s %q: want host:port, or :port for loopback only", flag, v)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// runWork runs a worker until a signal (or ctx) ends it.
func runWork(ctx context.Context, opts WorkOptions, _ []string) error {
	logf := lineLogger(opts.Stderr)
	sig := watchSignals(ctx, func(s os.Signal) string {
		return fmt.Sprintf("%s: taking no more jobs; the running ones get up to %s to finish (--grace), then go back to the queue; send it again to stop them now", s, opts.Grace)
	}, "stopping the running jobs now; they go back to the queue", logf)
	defer sig.stop()
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the rawbatch executable for its workers: %w", err)
	}
	if opts.CacheDir != "" {
		if err := batch.TrimCache(opts.CacheDir, opts.CacheSize); err != nil {
			logf(fmt.Sprintf("warning: stage cache not used: %v", err))
			opts.CacheDir = ""
		}
	}
	// /healthz answers from the start; /readyz once the worker runs.
	var wp atomic.Pointer[queue.Worker]
	if opts.Health != "" {
		go func() {
			ready := func() error {
				if w := wp.Load(); w != nil {
					return w.Ready()
				}
				return errors.New("not connected to the broker yet")
			}
			if err := queue.ServeHealth(sig.Ctx, opts.Health, ready); err != nil && sig.Ctx.Err() == nil {
				logf(fmt.Sprintf("health on %s: %v", opts.Health, err))
			}
		}()
	}
	// A worker started before its broker waits for it (Retry), until a
	// signal ends it.
	c, err := opts.Queue.connect(sig.Ctx, "work", 0, logf)
	if err != nil {
		if sig.Ctx.Err() != nil {
			logf("worker stopped before the broker answered")
			return nil
		}
		return err
	}
	defer c.Close()
	sched := budget.NewScheduler(opts.MemBudget)
	sched.SetCores(runtime.NumCPU())
	debug.SetMemoryLimit(opts.MemBudget) // the Go heap follows the budget, as convert's
	m := queue.NewMetrics(c, sched)
	if opts.Metrics != "" {
		go func() {
			if err := m.Serve(sig.Ctx, opts.Metrics); err != nil && sig.Ctx.Err() == nil {
				logf(fmt.Sprintf("metrics on %s: %v", opts.Metrics, err))
			}
		}()
	}
	wk := &worker{opts: opts, exe: exe, sched: sched, abort: sig.Abort, outDirs: map[string]*batch.OutDir{}, logf: logf}
	w := &queue.Worker{Client: c, Sched: sched, Jobs: opts.Jobs, Convert: wk.convert, Grace: opts.Grace, Metrics: m, Log: logf}
	wp.Store(w)
	logf(fmt.Sprintf("worker %s: broker %s, memory budget %s, %s at once, jobs confined to %s", hostPID(), opts.Queue.NATS, budget.FormatSize(opts.MemBudget), plural(int64(opts.Jobs), "job"), strings.Join(opts.Confine.Dirs(), ", ")))
	err = w.Run(sig.Ctx)
	logf("worker stopped")
	if err != nil && sig.Ctx.Err() == nil {
		return fmt.Errorf("worker: %w", err)
	}
	return nil
}

// worker converts the jobs of one `rawbatch work` process: each through a
// batch.Runner of its own over a one-task plan, admitted into the
// worker's shared scheduler.
type worker struct {
	opts  WorkOptions
	exe   string
	sched *budget.Scheduler
	// abort is closed by a second signal: every running job stops now.
	abort <-chan struct{}
	logf  func(string)
	mu    sync.Mutex
	// outDirs are the output directories opened so far, by path.
	outDirs map[string]*batch.OutDir
}

// outDir opens dir's records and locks once per process.
func (w *worker) outDir(dir string) (*batch.OutDir, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if od := w.outDirs[dir]; od != nil {
		return od, nil
	}
	if err := batch.CheckOutDir(dir); err != nil {
		return nil, err
	}
	od, err := batch.OpenOutDir(dir, false)
	if err != nil {
		return nil, err
	}
	if od.RemovedTemps > 0 {
		w.logf(fmt.Sprintf("%s: removed %s left by killed runs", dir, plural(int64(od.RemovedTemps), "temporary file")))
	}
	w.outDirs[dir] = od
	return od, nil
}

// lockWaitOther bounds a job's wait for a lock held by a run making other
// outputs of its file; then it is handed back (transient).
const workLockWaitOther = time.Minute

// convert runs one delivery: the job's QueuedTask (paths mapped) through
// the runner, as convert runs a file, with the lease as its Fence and its
// loss as its Abort; its outcome is jobOutcome's.
func (w *worker) convert(ctx context.Context, d queue.Delivery) queue.Outcome {
	var q batch.QueuedTask
	if err := json.Unmarshal(d.Job.Payload, &q); err != nil {
		return queue.Outcome{Result: queue.Permanent, Kind: "error", Reason: fmt.Sprintf("%s: the job's task cannot be read: %v", d.Job.Input, err)}
	}
	// What the job reads and writes must lie in the allowed directories
	// (after --path-map, links resolved) before anything is touched.
	q, err := w.opts.Confine.Admit(q, w.opts.PathMap)
	if err != nil { // (the worker logs it, as every dead letter)
		return queue.Outcome{Result: queue.Permanent, Kind: rawerr.Kind(err), Reason: fmt.Sprintf("%s: %v", d.Job.Input, err)}
	}
	if err := q.Check(Version()); err != nil {
		return queue.Outcome{Result: queue.Permanent, Kind: "error", Reason: err.Error()}
	}
	od, err := w.outDir(q.OutDir)
	if err != nil {
		return outDirOutcome(q.OutDir, err)
	}
	abort := make(chan struct{})
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-d.Lost:
		case <-w.abort:
		case <-stop:
			return
		}
		close(abort)
	}()
	r := &batch.Runner{Jobs: 1, Shared: w.sched, Exe: w.exe, Abort: abort, Fence: d.Fence,
		State: od.State, Locks: od.Locks, LockWaitOther: workLockWaitOther, Retries: 0,
		CacheDir: w.opts.CacheDir, CacheMax: w.opts.CacheSize}
	q.Configure(r)
	plan := &batch.Plan{Tasks: []batch.Task{q.Task()}, Headers: &batch.HeaderReader{Exe: w.exe}}
	r.Triage(plan)
	plan.Inspect(r.Settings, 1, 1)
	plan.Headers.Close()
	res := r.Run(ctx, plan)
	if len(res) == 0 {
		return queue.Outcome{Result: queue.Permanent, Kind: "error", Reason: q.Input + ": no result"}
	}
	if res[len(res)-1].Status == batch.StatusConverted {
		// Its outputs and records are written: the job's commit (one
		// line per commit, which the end-to-end tests count).
		w.logf(fmt.Sprintf("job %s (%s): attempt %d: committed", d.Job.ID, d.Job.Input, d.Attempt))
	}
	// Stopping: the shutdown's grace is over, or a second signal stopped
	// the conversions at once (abort): what they failed with is no
	// verdict on the file.
	o := jobOutcome(res[len(res)-1], lost(d.Lost), ctx.Err() != nil || lost(w.abort))
	// The submitter's paths, in its report and the dead letters.
	o.Report = w.opts.PathMap.ReverseReport(o.Report)
	o.Reason = w.opts.PathMap.ReverseText(o.Reason)
	return o
}

// outDirOutcome is the Outcome of a job whose output directory dir cannot
// be opened (err): transient while the shared storage is away (unmounted,
// stale handle, server down: batch.StorageAway), permanent when it
// refuses (permission denied, read-only), the reason naming dir.
func outDirOutcome(dir string, err error) queue.Outcome {
	reason := err.Error()
	if !strings.Contains(reason, dir) {
		reason = "output directory " + dir + ": " + reason
	}
	if batch.StorageAway(err) {
		return queue.Outcome{Result: queue.Transient, Kind: rawerr.KindTransient, Reason: reason}
	}
	return queue.Outcome{Result: queue.Permanent, Kind: rawerr.Kind(err), Reason: reason}
}

// lost reports whether ch is closed.
func lost(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// jobOutcome maps a job's FileResult to the queue's Outcome: converted or
// up to date → Done; the lease lost (fenced: Fence refused, or the lease
// was lost while it ran) → Fenced; stopped by the worker's shutdown
// (interrupted, or failed while stopping: killed by a second signal) →
// Stopped; locked by another run, or a transient failure (no space,
// interrupted I/O: batch.IsTransient) → Transient; any other failure
// (corrupt, unsupported, crashed, timeout, over-budget, not-ours, ...), or
// an input deleted or changed since it was submitted → Permanent, with
// the rawerr kind and the error's text. The Outcome's Report is the
// file's batch.JobReport, its Stages the seconds of each stage.
func jobOutcome(fr batch.FileResult, leaseLost, stopping bool) queue.Outcome {
	o := queue.Outcome{}
	if b, err := json.Marshal(batch.JobReportOf(fr)); err == nil {
		o.Report = b
	}
	if len(fr.Result.Timings) > 0 {
		o.Stages = map[string]float64{}
		for _, st := range fr.Result.Timings {
			o.Stages[st.Stage] += st.Duration.Seconds()
		}
	}
	reason := fr.Reason
	if fr.Err != nil {
		reason = fr.Err.Error()
	}
	switch {
	case errors.Is(fr.Err, batch.ErrFenced) || (leaseLost && fr.Status != batch.StatusConverted):
		o.Result, o.Kind, o.Reason = queue.Fenced, "fenced", reason
	case fr.Status == batch.StatusConverted:
		o.Result, o.Converted = queue.Done, true
	case fr.Status == batch.StatusSkipped && (fr.Reason == batch.ReasonCancelled || fr.Reason == batch.ReasonNotStarted):
		o.Result, o.Reason = queue.Stopped, reason
	case stopping && fr.Status == batch.StatusFailed:
		o.Result, o.Reason = queue.Stopped, reason
	case fr.Status == batch.StatusSkipped && strings.HasPrefix(fr.Reason, "up to date"), fr.Status == batch.StatusSkipped && strings.Contains(fr.Reason, "--no-recreate"),
		fr.Status == batch.StatusKept, fr.Status == batch.StatusKnownFailure:
		o.Result = queue.Done
	case fr.Status == batch.StatusSkipped:
		// Deleted, moved or changed since it was submitted: this job's
		// input is gone (a new submit makes a new job).
		o.Result, o.Kind, o.Reason = queue.Permanent, "changed", fr.Input+": "+fr.Reason
	case fr.Status == batch.StatusLocked:
		o.Result, o.Kind, o.Reason = queue.Transient, "locked", reason
	case batch.IsTransient(fr.Err):
		o.Result, o.Kind, o.Reason = queue.Transient, rawerr.KindTransient, reason
	default:
		o.Result, o.Kind, o.Reason = queue.Permanent, rawerr.Kind(fr.Err), reason
	}
	return o
}
