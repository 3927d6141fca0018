package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rawbatch/rawbatch/batch"
	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/queue"
)

// SubmitOptions are the options of `rawbatch submit`: convert's, the
// queue's, and submit's own.
type SubmitOptions struct {
	ConvertConfig
	Queue QueueOptions
	// Batch names the submit's jobs (--batch; default defaultBatchName
	// of OUTDIR); QueueMax is queue.Options.QueueMax, the bound of the
	// broker's queue (jobs waiting) that stays for later submits: 0
	// leaves it as it is (--queue-max not given), < 0 removes it
	// (--queue-max 0), N sets it; Wait waits for the jobs and reports
	// them as convert does.
	Batch    string
	QueueMax int
	Wait     bool
}

// AddFlags adds the flags of submit's settings to f.
func (o *SubmitOptions) AddFlags(f *pflag.FlagSet) { addFlags(f, o.settings()) }

// settings are convert's settings, the queue's and submit's own.
func (o *SubmitOptions) settings() []setting {
	return append(append(o.ConvertConfig.settings(), o.Queue.settings()...), o.ownSettings()...)
}

// ownSettings declares submit's own settings into o, once.
func (o *SubmitOptions) ownSettings() []setting {
	return []setting{
		batchSetting(&o.Batch, "name of this submit's jobs, for status and dead (default: OUTDIR's name and a short hash of its path)"),
		{Name: "queue-max", Default: "", Help: "most jobs waiting in the broker's queue, kept there for every later submit until one changes it: N sets it, 0 removes the bound, not given leaves it; when the queue is full, submit waits for room (backpressure)",
			Apply: func(v value) error {
				text := strings.TrimSpace(v.String())
				if text == "" {
					o.QueueMax = 0 // leave the broker's bound
					return nil
				}
				n, err := wholeNumber(v)
				switch {
				case err != nil:
					return err
				case n < 0:
					return fmt.Errorf("--queue-max %d: want 0 (no bound) or more", n)
				case n == 0:
					o.QueueMax = -1 // remove the bound
				default:
					o.QueueMax = n
				}
				return nil
			}},
		{Name: "wait", Default: false, Help: "wait until every job of this submit is processed or failed, showing progress as convert does, then write the summary, --report and convert's exit status",
			Apply: func(v value) error {
				if err := boolInto(&o.Wait)(v); err != nil {
					return err
				}
				if o.Report != "" && !o.Wait {
					return fmt.Errorf("--report needs --wait (the report is written once the jobs are done)")
				}
				if o.DryRun {
					return fmt.Errorf("--dry-run: submit publishes jobs; 'rawbatch convert --dry-run' shows the plan")
				}
				return nil
			}},
	}
}

// newSubmitCmd is `rawbatch submit`: convert's planning, then one job per
// file that needs work, published to the broker.
func newSubmitCmd() *cobra.Command {
	var opts SubmitOptions
	cmd := &cobra.Command{
		Use:   "submit [flags] INPUT... -o OUTDIR [--batch NAME] [--queue-max N] [--wait]",
		Short: "Queue the files of INPUT for 'rawbatch work' processes on many hosts (multi-host mode)",
		Long: `Plan the files of INPUT exactly as convert does (walk, filters, names and
collisions, --min-age, header sizing, the up-to-date check against OUTDIR's
records), then publish one job per file that needs work to the broker (--nats),
where 'rawbatch work' processes on any host take them. Files already up to date
are not published; a file already queued is not queued twice, so submitting a
folder again adds only what is new. When the queue is full (--queue-max),
submit waits for room.

Every convert flag applies: the settings travel with each job, and every host
must run the same rawbatch version. INPUT and OUTDIR are made absolute: they
must be shared storage mounted at the same place on every host (or mapped
with 'rawbatch work --path-map').

--wait shows progress until every job is processed or failed, then the
summary, writes --report as convert does (files up to date at submit count as
skipped) and exits with convert's exit status. Ctrl-C stops the waiting only:
the jobs stay queued. See docs/distributed.md.

` + exitHelp,
		Example: `  rawbatch submit /nas/card -o /nas/export --nats nats://broker:4222 --wait
  rawbatch submit --preset web /nas/incoming -o /nas/web --batch incoming --queue-max 100`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.resolveFrom(cmd, args, opts.settings); err != nil {
				return err
			}
			return runSubmit(cmd.Context(), opts, args)
		},
	}
	opts.AddFlags(cmd.Flags())
	registerCompletions(cmd, opts.settings())
	return cmd
}

// runSubmit plans and publishes the INPUT args, and with --wait follows
// the jobs to the end.
func runSubmit(ctx context.Context, opts SubmitOptions, args []string) error {
	cfg := opts.ConvertConfig
	cfg.Inputs = nil
	for _, in := range args { // other hosts read these paths
		abs, err := filepath.Abs(in)
		if err != nil {
			return fmt.Errorf("input %s: %w", in, err)
		}
		cfg.Inputs = append(cfg.Inputs, abs)
	}
	abs, err := filepath.Abs(cfg.OutDir)
	if err != nil {
		return fmt.Errorf("output directory %s: %w", cfg.OutDir, err)
	}
	cfg.OutDir = abs
	opts.ConvertConfig = cfg
	rr := &runReport{start: time.Now(), cfg: cfg}
	rep := newReporter(cfg.Stdout, cfg.Stderr, cfg.Quiet, cfg.LogFormat, 0)
	for _, w := range cfg.Warnings {
		rep.warn(w)
	}
	sig := watchSignals(ctx, func(s os.Signal) string {
		return fmt.Sprintf("%s: stopping (jobs already queued stay queued; the workers convert them)", s)
	}, "stopping now", rep.note)
	defer sig.stop()
	err = submitBatch(opts, rep, sig, rr)
	fallbackReport(cfg, rep, sig, rr, err)
	return err
}

// submitBatch is the run of runSubmit: the plan, its jobs published, and
// with --wait the jobs followed to their end and reported.
func submitBatch(opts SubmitOptions, rep *reporter, sig *interrupts, rr *runReport) error {
	cfg := opts.ConvertConfig
	ctx := sig.Ctx
	// The broker first: a submit it refuses, or cannot reach, leaves
	// nothing behind (planning creates OUTDIR and its records).
	c, err := opts.Queue.connect(ctx, "submit", opts.QueueMax, rep.note)
	if err != nil {
		if ctx.Err() != nil {
			return &batchOutcome{interrupted: true}
		}
		return err
	}
	defer c.Close()
	if err := c.MayQueueJobs(); err != nil {
		return err
	}
	pb, err := planBatch(cfg, rep, sig, rr)
	if err != nil {
		return err
	}
	plan, r := pb.plan, pb.r
	name := opts.Batch
	if name == "" {
		name = defaultBatchName(cfg.OutDir)
	}
	if opts.Wait {
		rep.start(len(plan.Tasks) + len(plan.Problems))
	} else { // the files' count for the failures' lines, no progress bar
		rep.mu.Lock()
		rep.total = len(plan.Tasks) + len(plan.Problems)
		rep.mu.Unlock()
	}
	s := &submission{rep: rep, wait: opts.Wait, inputs: map[string]string{}}
	for _, w := range plan.Warnings {
		rep.warn(w)
	}
	for _, pr := range plan.Problems {
		s.settle(pr)
	}
	if err := s.publish(ctx, c, r, plan.Tasks, name); err != nil {
		return err
	}
	s.tell(name)
	if !opts.Wait {
		return &batchOutcome{failed: s.failed, interrupted: sig.interrupted()}
	}
	return s.waitAndReport(ctx, c, cfg, sig, rr)
}

// submission is what a submit keeps of its files: the report entries of
// those settled at planning (up to date, failed) or refused as dead, the
// jobs it queued (ids, and each one's input) and the inputs it did not
// queue (interrupted).
type submission struct {
	rep  *reporter
	wait bool

	settled          []batch.JobReport
	failed, upToDate int
	ids              []string
	inputs           map[string]string // job id → input
	queued, already  int
	notQueued        []string
}

// settle adds fr, a file settled at planning, to the report as convert's
// run reports it (a line for a failure, or for every file with --wait).
func (s *submission) settle(fr batch.FileResult) {
	s.settled = append(s.settled, batch.JobReportOf(fr))
	if fr.Status == batch.StatusFailed {
		s.failed++
	} else {
		s.upToDate++
	}
	if s.wait || fr.Status == batch.StatusFailed {
		s.rep.done(fr)
	}
}

// publish publishes the job of each task of batch name that needs work
// (settling the others), until ctx ends (the rest are not queued). A job
// in the dead letters is failed, not queued again. Errors: encoding a
// job, or the broker refusing one.
func (s *submission) publish(ctx context.Context, c *queue.Client, r *batch.Runner, tasks []batch.Task, name string) error {
	for _, t := range tasks {
		switch {
		case t.Done != nil:
			s.settle(*t.Done)
			continue
		case t.Err != nil && !fileKind(t.Err):
			s.settle(batch.FileResult{Task: t, Status: batch.StatusFailed, Err: t.Err})
			continue
		case ctx.Err() != nil:
			s.notQueued = append(s.notQueued, t.Input)
			continue
		}
		// A file whose header failed (corrupt, not raw, ...) is queued
		// all the same: its worker finds it so again, and it goes to the
		// dead letters with its reason, where every failed job is.
		job, err := submitJob(r, t, name)
		if err != nil {
			return err
		}
		ok, err := c.Publish(ctx, job)
		if errors.Is(err, queue.ErrDead) {
			// In the dead letters: failed, not queued again ('dead
			// retry' is the way), not waited for.
			jr := deadJobReport(ctx, c, job, err)
			s.settled = append(s.settled, jr)
			s.failed++
			s.rep.jobDone(jr, queue.Status{})
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				s.notQueued = append(s.notQueued, t.Input)
				continue
			}
			return fmt.Errorf("%s: queueing it: %w", t.Input, err)
		}
		if ok {
			s.queued++
		} else {
			s.already++
		}
		s.ids = append(s.ids, job.ID)
		s.inputs[job.ID] = t.Input
	}
	return nil
}

// tell notes the counts of batch name, and the files not queued.
func (s *submission) tell(name string) {
	summary := fmt.Sprintf("batch %s: queued %d, already queued %d, up to date %d", name, s.queued, s.already, s.upToDate)
	if s.failed > 0 {
		summary += fmt.Sprintf(", failed %d", s.failed)
	}
	s.rep.note(summary)
	if len(s.notQueued) > 0 {
		s.rep.note(fmt.Sprintf("interrupted while queuing: %d of %d files not queued; submit again to queue them",
			len(s.notQueued), len(s.notQueued)+len(s.ids)))
	}
}

// waitAndReport waits for the jobs queued (or, when queuing was
// interrupted, takes a short look at those that ended), then writes the
// summary and --report of every file, the jobs not ended and the files
// not queued as skipped; its outcome is convert's.
func (s *submission) waitAndReport(ctx context.Context, c *queue.Client, cfg ConvertConfig, sig *interrupts, rr *runReport) error {
	var jobs []batch.JobReport
	var ended map[string]bool
	stillQueued := "still queued (submit stopped waiting)"
	if len(s.notQueued) > 0 {
		// Stopped before waiting: what the broker knows of the queued
		// jobs already, in a short look.
		jobs, ended = endedJobs(c, s.ids)
		stillQueued = "queued (submit stopped before they ended)"
	} else {
		jobs, ended = waitJobs(ctx, c, s.ids, s.rep)
	}
	all := append(s.settled, jobs...)
	skipped := func(in, reason string) {
		jr := batch.JobReport{File: batch.FileReport{Status: batch.StatusSkipped, Reason: reason, Outputs: []batch.ReportOutput{}}}
		jr.File.Input, jr.File.InputB64 = batch.ReportPath(in)
		all = append(all, jr)
	}
	for _, id := range s.ids { // Ctrl-C: the jobs not ended yet
		if !ended[id] {
			skipped(s.inputs[id], stillQueued)
		}
	}
	for _, in := range s.notQueued {
		skipped(in, "not queued (interrupted)")
	}
	sum := batch.BuildReportOf(all).Summary
	out := &batchOutcome{interrupted: sig.interrupted(), converted: sum.Converted, failed: sum.Failed, locked: sum.Locked, skipped: sum.Skipped}
	s.rep.jobSummary(out, all)
	if cfg.Report != "" {
		rr.warnings, rr.written = s.rep.warnings, true
		report := rr.buildFrom(batch.BuildReportOf(all), sig.interrupted(), false, exitCode(out))
		if err := batch.WriteJSON(cfg.Report, report); err != nil {
			s.rep.warn("writing the report: " + err.Error())
		}
	}
	return out
}

// deadJobReport is the report entry of job, which Publish refused with
// err (wrapping queue.ErrDead) as it has a dead letter: failed, with the
// dead letter's kind (when the report knows it; else "error") and a
// reason naming the input, the dead letter's kind and reason, and that
// `rawbatch dead retry ID` queues it again (err's text when the dead
// letter cannot be read).
func deadJobReport(ctx context.Context, c *queue.Client, job queue.Job, err error) batch.JobReport {
	jr := batch.JobReport{File: batch.FileReport{Status: batch.StatusFailed, Kind: "error", Outputs: []batch.ReportOutput{}}}
	jr.File.Input, jr.File.InputB64 = batch.ReportPath(job.Input)
	reason := job.Input + ": " + strings.TrimPrefix(err.Error(), "queue: ")
	if d, derr := c.DeadLetterOf(ctx, job.ID); derr == nil {
		if slices.Contains(batch.FailureKinds(), d.Kind) {
			jr.File.Kind = d.Kind
		}
		// The line names the file once: a worker's reason starts with it.
		why := strings.TrimPrefix(strings.TrimPrefix(d.Reason, job.Input+": "), d.Kind+": ") // "refused: refused: ..." otherwise
		who := "`rawbatch dead retry %s` queues it again"
		if !c.MayRetryDead() {
			who = "an admin's `rawbatch dead retry %s` (admin.creds) queues it again"
		}
		reason = fmt.Sprintf("%s: in the dead letters (%s: %s); "+who, job.Input, d.Kind, why, job.ID)
	}
	jr.File.Reason = batch.ReportText(reason)
	return jr
}

// fileKind reports whether err is a failure of the file itself (empty,
// not raw, unsupported, corrupt), which a worker reading it finds again.
func fileKind(err error) bool {
	switch rawerr.Kind(err) {
	case "empty", "not-raw", "unsupported", "corrupt":
		return true
	}
	return false
}

// submitJob returns the job of task t, planned by r, in batch name. Its
// id hashes the input's absolute path, size and time with its settings
// hash (its preset's, when one applies), each output's own hash (its
// variant's format, size, quality, ...: pipeline.OutputHash), the output
// directory and the first output's path: the same file submitted into two
// output directories, or with other output settings, is two jobs.
func submitJob(r *batch.Runner, t batch.Task, name string) (queue.Job, error) {
	q := r.QueueTask(t)
	payload, err := json.Marshal(q)
	if err != nil {
		return queue.Job{}, fmt.Errorf("%s: encoding its job: %w", t.Input, err)
	}
	in := t.InputAbs
	if in == "" {
		in = t.Input
	}
	key := q.SettingsHash
	for _, v := range q.Settings.OutputVariants() {
		key += "\n" + pipeline.OutputHash(q.SettingsHash, v)
	}
	id := queue.JobID(in, t.Size, t.ModTime, key+"\n"+r.OutDir+"\n"+t.Output)
	return queue.Job{ID: id, Batch: name, Input: t.Input, OutDir: r.OutDir, Estimate: q.Estimate,
		Class: queue.ClassOf(q.Estimate), Submitted: time.Now().UTC(), Submitter: hostPID(), Payload: payload}, nil
}

// endedJobs returns the report entries of the jobs of ids that have
// ended (processed or failed) as the broker knows them now, within a few
// seconds, and the ids of those; nothing when the broker does not answer.
func endedJobs(c *queue.Client, ids []string) ([]batch.JobReport, map[string]bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	ended := map[string]bool{}
	var out []batch.JobReport
	sts, err := c.Statuses(ctx, "")
	if err != nil {
		return nil, ended
	}
	for _, st := range sts {
		if want[st.ID] && !ended[st.ID] && (st.State == queue.Processed || st.State == queue.Failed) {
			ended[st.ID] = true
			out = append(out, jobReport(st))
		}
	}
	return out, ended
}

// waitJobs follows the statuses of the jobs ids until each is processed
// or failed, or ctx ends, reporting each as it ends (jobDone); it returns
// their report entries in the order they ended and the ids of the jobs
// that ended (the entries name the submitter's paths). Statuses come from the
// broker's watch, and from a poll every 2 s in case a watch misses one
// (a reconnect).
func waitJobs(ctx context.Context, c *queue.Client, ids []string, rep *reporter) ([]batch.JobReport, map[string]bool) {
	ended := map[string]bool{}
	pending := map[string]bool{}
	for _, id := range ids {
		pending[id] = true
	}
	var out []batch.JobReport
	take := func(st queue.Status) {
		if !pending[st.ID] || (st.State != queue.Processed && st.State != queue.Failed) {
			return
		}
		delete(pending, st.ID)
		ended[st.ID] = true
		jr := jobReport(st)
		out = append(out, jr)
		rep.jobDone(jr, st)
	}
	poll := func() {
		sts, err := c.Statuses(ctx, "")
		if err != nil {
			return // the broker away: the next poll or the watch
		}
		for _, st := range sts {
			take(st)
		}
	}
	poll()
	if len(pending) == 0 {
		return out, ended
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan queue.Status, 64)
	go c.WatchStatuses(wctx, "", func(st queue.Status) bool {
		select {
		case ch <- st:
			return true
		case <-wctx.Done():
			return false
		}
	})
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for len(pending) > 0 {
		select {
		case st := <-ch:
			take(st)
		case <-tick.C:
			poll()
		case <-ctx.Done():
			return out, ended
		}
	}
	return out, ended
}

// jobReport is the report entry of a finished job: its worker's
// (Status.Result), made a failure with the status's reason when the job
// failed (in the dead letters), or an entry of its own when no worker
// converted it (a job dead-lettered without a conversion). A failure kind
// the report does not know (redelivered, transient, fenced, ...) is
// "error", the reason saying more.
func jobReport(st queue.Status) batch.JobReport {
	var jr batch.JobReport
	if len(st.Result) == 0 || json.Unmarshal(st.Result, &jr) != nil || jr.File.Input == "" {
		jr = batch.JobReport{File: batch.FileReport{Outputs: []batch.ReportOutput{}}}
	}
	if st.Input != "" { // the submitter's path, whatever the worker's mount
		jr.File.Input, jr.File.InputB64 = batch.ReportPath(st.Input)
	}
	if st.State == queue.Failed {
		f := &jr.File
		f.Status, f.Outputs = batch.StatusFailed, []batch.ReportOutput{}
		f.Kind = st.Kind
		if !slices.Contains(batch.FailureKinds(), f.Kind) {
			f.Kind = "error"
		}
		if st.Reason != "" {
			f.Reason = batch.ReportText(st.Reason)
		}
		if f.Reason == "" {
			f.Reason = "failed on the workers"
		}
		if !strings.Contains(f.Reason, f.Input) {
			// The queue's own reasons (redelivered, over every
			// worker's budget, ...) do not name the file.
			f.Reason = f.Input + ": " + f.Reason
		}
	}
	return jr
}

// jobDone reports a finished job as done reports a file: "[3/10]
// converted IN -> OUT on WORKER in 1.2s", a failure with its reason.
func (r *reporter) jobDone(jr batch.JobReport, st queue.Status) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count++
	f := jr.File
	d := time.Duration(f.DurationMS) * time.Millisecond
	ev := logEvent{Level: "info", Event: string(f.Status), N: r.count, Total: r.total, Input: f.Input, InputB64: f.InputB64,
		DurationMS: ms(d), Preset: f.Preset}
	var outs []string
	for _, o := range f.Outputs {
		if o.Written {
			outs = append(outs, o.Path)
		}
	}
	var text string
	switch f.Status {
	case batch.StatusConverted:
		ev.Outputs = outs
		text = fmt.Sprintf("[%d/%d] converted %s -> %s on %s in %.1fs", r.count, r.total, f.Input, strings.Join(outs, ", "), st.Worker, d.Seconds())
		if f.Preset != "" {
			text += " (preset " + f.Preset + ")"
		}
	case batch.StatusFailed:
		ev.Level, ev.Kind, ev.Message = "error", f.Kind, f.Reason
		text = fmt.Sprintf("[%d/%d] failed %s", r.count, r.total, f.Reason)
	case batch.StatusKept:
		ev.Reason = f.Reason
		text = fmt.Sprintf("[%d/%d] %s: %s", r.count, r.total, f.Reason, f.Input)
	case batch.StatusKnownFailure:
		ev.Reason, ev.Kind = f.Reason, f.Kind
		text = fmt.Sprintf("[%d/%d] %s", r.count, r.total, f.Reason)
	default:
		ev.Reason = f.Reason
		text = fmt.Sprintf("[%d/%d] skipped %s (%s)", r.count, r.total, f.Input, f.Reason)
	}
	serious := f.Status == batch.StatusFailed
	switch {
	case r.bar != nil && isTerminal(r.out):
		if serious {
			r.emit(false, ev, "failed: "+f.Reason)
		}
	case !r.quiet || serious:
		r.emit(true, ev, clean(text))
	}
	for _, w := range f.Warnings {
		r.emit(false, logEvent{Level: "warning", Event: "warning", Input: f.Input, InputB64: f.InputB64, Message: w}, fmt.Sprintf("warning: %s: %s", f.Input, w))
	}
	if r.bar != nil {
		r.bar.Add(1)
	}
}

// jobSummary is summary for a submit's jobs: the counts, then every
// failure with its reason.
func (r *reporter) jobSummary(b *batchOutcome, jobs []batch.JobReport) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bar != nil {
		r.bar.Finish()
		r.bar.Clear()
		r.bar = nil
	}
	el := time.Since(r.begin)
	tail := fmt.Sprintf(" in %.1fs", el.Seconds())
	if r.json {
		ev := summaryEvent(b, el, tail)
		ev.Interrupted = b.interrupted
		for _, j := range jobs {
			if j.File.Status == batch.StatusFailed {
				ev.FailedFiles = append(ev.FailedFiles, failedLine{Input: j.File.Input, InputB64: j.File.InputB64, Kind: j.File.Kind, Message: j.File.Reason})
			}
		}
		r.emit(false, ev, "")
		return
	}
	r.emitSummary(b, el, tail)
	if b.failed > 0 {
		r.emit(false, logEvent{}, "failed files:")
		for _, j := range jobs {
			if j.File.Status == batch.StatusFailed {
				r.emit(false, logEvent{}, "  "+clean(j.File.Reason))
			}
		}
	}
	if b.interrupted {
		r.emit(false, logEvent{}, "interrupted: stopped waiting; the jobs not done yet stay queued")
	}
}
