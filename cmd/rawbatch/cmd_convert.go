package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rawbatch/rawbatch/batch"
	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/spf13/cobra"
)

// newConvertCmd is `rawbatch convert`: its options are ConvertConfig,
// resolved from their settings, and its run runConvert.
func newConvertCmd() *cobra.Command {
	var opts ConvertConfig
	cmd := &cobra.Command{
		Use:   "convert [flags] [INPUT...] -o OUTDIR",
		Short: "Convert RAW files to JPEG, TIFF, PNG, WebP, AVIF, JPEG XL or Ultra HDR variants in a memory budget, skipping what is up to date or locked by another run",
		Long: `Convert every camera RAW file found in INPUT (directories are walked
recursively; files are taken as given) and listed by --files-from into OUTDIR,
mirroring the input tree: a/b/IMG_1.CR3 under an input directory becomes
OUTDIR/a/b/IMG_1.jpg (--name TEMPLATE names them otherwise: capture date,
camera, variant, ...). Walks skip macOS ._ files and system folders
(.Trashes, .Spotlight-V100, @eaDir, $RECYCLE.BIN, ...); --include and
--exclude narrow them.

Each file gives one full-size sRGB JPEG (--format another format: jpeg,
tiff8, tiff16, webp, png8, png16, avif, jxl, uhdr: an Ultra HDR gain-map
JPEG), or several outputs from one decode with
--variant NAME=FORMAT[,size=..][,space=..][,quality=..] (repeatable) or
--preset web|print|archive (see docs/variants.md).

Files run in worker processes, as many at once as --jobs and --mem-budget
allow, each on its share of the CPUs (all of them for a file that runs
alone); a crash or a hang (--timeout) fails that file only. Outputs are written
through a temporary file and renamed into place. OUTDIR/.rawbatch keeps a
record of every output, so a re-run converts only what is new or changed
(--force converts again), and a lock per output, so overlapping runs never
convert a file twice (one another run holds is reported as locked and left
to it; --lock-wait waits for it); it lists this run's failures in
failed.jsonl. rawbatch never writes over a file it did not write, or one
changed since, unless --overwrite.

Files that cannot be converted (empty, not a RAW file, corrupt or truncated,
not supported by the linked LibRaw) are reported with the reason and the batch
goes on; no output file is left for them. --dry-run prints the plan and writes
nothing; --report FILE writes the run (or the plan) as JSON.

Every flag has a config-file key of the same name and an environment variable
RAWBATCH_<NAME> (dashes become underscores). The config file's presets: give
the files a camera, lens, ISO range or glob matches their own develop settings
(docs/usage.md, Presets).

` + exitHelp,
		Example: `  rawbatch convert ~/card -o ~/export
  rawbatch convert --format png16 --tone none IMG_0001.CR3 -o out
  rawbatch convert --preset web --name '{date:2006/01}/{stem}' ~/card -o ~/web
  find /photos -name '*.NEF' -print0 | rawbatch convert --files-from - -0 --base /photos -o out
  RAWBATCH_QUALITY=95 rawbatch convert /nas/incoming -o /nas/jpeg --quiet`,
		Args: cobra.ArbitraryArgs, // INPUTs are checked with the settings (files-from)
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.resolveFrom(cmd, args, opts.settings); err != nil {
				return err
			}
			return runConvert(cmd.Context(), opts, args)
		},
	}
	opts.AddFlags(cmd.Flags())
	registerCompletions(cmd, opts.settings())
	return cmd
}

// resolveFrom fills c from cmd for convert and submit: the global
// options, the INPUT args, and the settings of decls (c.settings, or
// submit's with its queue settings) resolved flag > RAWBATCH_* > config
// file from the defaults, with what the report says of them.
func (c *ConvertConfig) resolveFrom(cmd *cobra.Command, args []string, decls func() []setting) error {
	c.GlobalOptions = globalOptions(cmd)
	c.Inputs, c.Settings = args, pipeline.DefaultSettings()
	st, err := resolve(cmd, decls(), true)
	if err != nil {
		return err
	}
	c.Resolved = resolvedSettings(st, cmd, c.Settings)
	c.Warnings = st.warnings
	if c.Settings.Look == pipeline.LookNeutral && c.Settings.ExposureAnchor == pipeline.AnchorPreview && st.IsSet("exposure-anchor") {
		c.Warnings = append(c.Warnings, "--exposure-anchor preview has no effect with --look neutral, which anchors nothing to the preview")
	}
	if c.Settings.HalfSize && st.IsSet("demosaic") {
		c.Warnings = append(c.Warnings, fmt.Sprintf("--demosaic %s has no effect with --half-size, which makes each 2×2 block of the mosaic one pixel without demosaic", c.Settings.Demosaic))
	}
	presets, warns, err := readPresets(st, c.Settings)
	if err != nil {
		return err
	}
	c.Presets, c.Warnings = presets, append(c.Warnings, warns...)
	return nil
}

// runConvert converts the INPUT args (and the files --files-from lists)
// with opts, as resolved by its settings. ctx ends the run as a signal
// does (watchInterrupts).
func runConvert(ctx context.Context, opts ConvertConfig, args []string) error {
	cfg := opts
	cfg.Inputs = args
	rr := &runReport{start: time.Now(), cfg: cfg}
	// The reporter first, so that every warning is in the log format
	// and in the report; its progress bar starts with the conversions.
	rep := newReporter(cfg.Stdout, cfg.Stderr, cfg.Quiet, cfg.LogFormat, 0)
	for _, w := range cfg.Warnings {
		rep.warn(w)
	}
	// The signal handlers are installed at the start of main
	// (earlySignals): one that arrives while planning stops the run with
	// its summary, as later.
	sig := watchInterrupts(ctx, cfg.Grace, rep.note)
	defer sig.stop()
	err := convertBatch(cfg, rep, sig, rr)
	fallbackReport(cfg, rep, sig, rr, err)
	return err
}

// fallbackReport writes the --report of a run that stopped before its own
// (err): no RAW file with --fail-if-empty, an input or OUTDIR that cannot
// be used, so that a previous run's report never stands for this one.
func fallbackReport(cfg ConvertConfig, rep *reporter, sig *interrupts, rr *runReport, err error) {
	if cfg.Report != "" && !rr.written && !rr.refused {
		// A run that stopped before its report (no RAW file with
		// --fail-if-empty, an input or OUTDIR that cannot be used) still
		// writes one, so that a previous run's report never stands for
		// this one.
		if rerr := batch.CheckReport(cfg.Report, cfg.OutDir, &batch.Plan{}, nil); rerr == nil {
			rr.warnings = rep.warnings
			if _, ok := err.(*batchOutcome); !ok && err != nil {
				rr.warnings = append(rr.warnings, err.Error())
			}
			if werr := batch.WriteJSON(cfg.Report, rr.build(nil, sig.interrupted(), cfg.DryRun, exitCode(err))); werr != nil {
				rep.warn(fmt.Sprintf("writing the report %s: %v", cfg.Report, werr))
			}
		}
	}
}

// plannedBatch is a batch planned by planBatch: the plan after Relocate,
// the runner over it, the opened OUTDIR, the rawbatch executable, the
// outputs' suffixes and the jobs to run at once.
type plannedBatch struct {
	plan     *batch.Plan
	r        *batch.Runner
	od       *batch.OutDir
	exe      string
	suffixes []string
	jobs     int
}

// planBatch is the planning that convert and submit share: it checks the
// inputs and OUTDIR, walks and names the files (planInputs, ResolveNames),
// checks the report's path, opens OUTDIR (its records and locks; cleaning
// killed runs' temporary files), settles recent files (--min-age), triages
// what is up to date, reads the headers (estimates) and moves another
// photograph's export out of the way (Relocate). A signal (sig) stops it
// between steps: the plan is then partial and the caller's run starts
// nothing. It sets rr.refused when the report's path must not be written.
// Errors: an input or OUTDIR that cannot be used, a refused report path,
// nothing to convert with --fail-if-empty.
func planBatch(cfg ConvertConfig, rep *reporter, sig *interrupts, rr *runReport) (*plannedBatch, error) {
	if err := checkTargets(cfg); err != nil {
		return nil, err
	}
	var suffixes []string
	for _, v := range cfg.Settings.OutputVariants() {
		suffixes = append(suffixes, v.Suffix())
	}
	plan, err := planInputs(sig.Ctx, cfg.Stdin, cfg, suffixes)
	if err != nil {
		return nil, err
	}
	if cfg.Report != "" {
		if err := batch.CheckReport(cfg.Report, cfg.OutDir, plan, suffixes); err != nil {
			rr.refused = true
			return nil, err
		}
	}
	if cfg.DryRun {
		for _, fr := range plan.Filtered {
			rep.aside(fmt.Sprintf("skipped %s (%s)", fr.Input, fr.Reason))
		}
	}
	if sig.Ctx.Err() == nil { // a walk a signal stopped may have found nothing yet
		if err := checkEmpty(rep, cfg, plan); err != nil {
			return nil, err
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the rawbatch executable for its workers: %w", err)
	}
	od, err := openOutDir(&cfg, rep)
	if err != nil {
		return nil, err
	}
	jobs := cfg.Jobs
	if cfg.tailJob {
		jobs++ // the last file's (batch.Runner.TailJob)
	}
	pb := &plannedBatch{plan: plan, r: cfg.runner(0, exe, od), od: od, exe: exe, suffixes: suffixes,
		jobs: min(jobs, max(1, len(plan.Tasks)))}
	if err := pb.triage(cfg, rep, sig.Ctx, rr); err != nil {
		return nil, err
	}
	return pb, nil
}

// checkTargets checks that every INPUT exists and that OUTDIR can be used
// (a dry run creates nothing, not even OUTDIR, but fails as the run
// would).
func checkTargets(cfg ConvertConfig) error {
	for _, in := range cfg.Inputs {
		if _, err := os.Stat(in); err != nil {
			return fmt.Errorf("input %s: %w", in, err)
		}
	}
	if cfg.DryRun {
		return batch.CheckOutDirDry(cfg.OutDir) // exit status 1, as the run would
	}
	return batch.CheckOutDir(cfg.OutDir)
}

// openOutDir opens OUTDIR (its records and locks; cleaning killed runs'
// temporary files), warns of a budget above the memory available, and
// trims the stage cache to --cache-size; a cache that cannot be used is
// dropped from cfg with a warning.
func openOutDir(cfg *ConvertConfig, rep *reporter) (*batch.OutDir, error) {
	od, err := batch.OpenOutDir(cfg.OutDir, cfg.DryRun)
	if err != nil {
		return nil, err
	}
	if od.RemovedTemps > 0 {
		rep.aside(fmt.Sprintf("removed %s (%s) left by killed runs", plural(int64(od.RemovedTemps), "temporary file"), budget.FormatSize(od.RemovedBytes)))
	}
	if avail, err := budget.Available(); err == nil && cfg.MemBudget > avail {
		rep.warn(fmt.Sprintf("the memory budget %s is more than the %s available; the kernel may kill conversions",
			budget.FormatSize(cfg.MemBudget), budget.FormatSize(avail)))
	}
	if cfg.CacheDir != "" && !cfg.DryRun {
		// The cache only saves decodes: one that cannot be used is worth a
		// warning, not a failed batch.
		if err := batch.TrimCache(cfg.CacheDir, cfg.CacheSize); err != nil { // a lowered --cache-size applies now
			hint := "choose another --cache-dir"
			if cfg.KeepCache {
				hint = "--keep-cache has no effect; " + hint
			}
			rep.warn(fmt.Sprintf("stage cache not used: %v; converting without it (%s)", err, hint))
			cfg.CacheDir = ""
		}
	}
	return od, nil
}

// triage settles recent files (--min-age), names the files whose --name
// template needs their headers (checking the report's path again), gives
// each file its preset (Plan.ApplyPresets: reading the headers first when
// a preset matches on them), marks what is up to date, reads the headers
// of the rest (estimates, at one thread: the fewest a file gets; the runner estimates a file again at
// the count it is admitted with) and moves another photograph's export
// out of the way (Relocate). Up-to-date and still-being-written files go
// first (stats and records only); a signal (ctx) stops it between steps,
// and Run then starts nothing. Errors: a refused report path.
func (pb *plannedBatch) triage(cfg ConvertConfig, rep *reporter, ctx context.Context, rr *runReport) error {
	const estThreads = 1
	plan, r := pb.plan, pb.r
	if planHook != nil {
		planHook(ctx)
	}
	if ctx.Err() == nil {
		r.SettleWait = func(n int, wait time.Duration) {
			rep.aside(fmt.Sprintf("waiting %s for %s modified within --min-age %s", batch.DurationText(wait), plural(int64(n), "file"), cfg.MinAge))
		}
		r.Settle(ctx, plan) // recent files get the rest of --min-age
	}
	// LibRaw's header reads run in helper processes that can be killed.
	plan.Headers = &batch.HeaderReader{Exe: pb.exe}
	plan.Ctx = ctx // a signal stops the header reads
	inspected := false
	if ctx.Err() == nil {
		inspected = plan.ResolveNames(planOptions(cfg), cfg.OutDir, pb.suffixes, cfg.Settings, cfg.MinAge, estThreads, runtime.NumCPU())
	}
	if inspected && cfg.Report != "" {
		if err := batch.CheckReport(cfg.Report, cfg.OutDir, plan, pb.suffixes); err != nil {
			plan.Headers.Close()
			rr.refused = true
			return err
		}
	}
	if ctx.Err() == nil {
		// Each file's preset, before the up-to-date check: it decides
		// the file's settings hash.
		inspected = plan.ApplyPresets(cfg.Presets, cfg.Settings, cfg.MinAge, inspected, r.RecordedCamera, estThreads, runtime.NumCPU())
		if !cfg.watching { // a watch's round sees only the newly arrived files
			for _, w := range plan.UnmatchedPresets(cfg.Presets) {
				rep.warn(w)
			}
		}
	}
	if ctx.Err() == nil {
		r.Triage(plan)
	}
	if ctx.Err() == nil && !inspected {
		plan.Inspect(cfg.Settings, estThreads, runtime.NumCPU())
	}
	if cfg.KeepCache && cfg.CacheDir != "" {
		plan.WholeEstimates() // a kept cache's image is whole: nothing streams
	}
	plan.Headers.Close()
	if ctx.Err() == nil {
		r.Relocate(plan) // another photograph's export at an output name: STEM-N
	}
	return nil
}

// convertBatch is the run of runConvert; it sets rr.written when it wrote
// the report, and rr.refused when the report's path must not be written.
func convertBatch(cfg ConvertConfig, rep *reporter, sig *interrupts, rr *runReport) error {
	ctx := sig.Ctx
	pb, err := planBatch(cfg, rep, sig, rr)
	if err != nil {
		return err
	}
	plan, r, jobs, meta := pb.plan, pb.r, pb.jobs, batch.MetaDir(cfg.OutDir)
	if cfg.DryRun {
		var err error = &batchOutcome{interrupted: true}
		var files []batch.PlannedFile
		if ctx.Err() == nil {
			r.CheckReplaced(plan) // an output edited keeping its size and time: would fail
			files, err = dryRun(cfg.Stdout, rep, plan, r, cfg, jobs, runtime.NumCPU())
		} else {
			files, _ = r.DryPlan(plan)
		}
		if cfg.Report != "" {
			rr.warnings, rr.written = rep.warnings, true
			results := planResults(plan, files)
			report := rr.build(results, sig.interrupted(), true, exitCode(err))
			addStagePlans(&report, results, files)
			if werr := batch.WriteJSON(cfg.Report, report); werr != nil {
				rep.warn(fmt.Sprintf("writing the report %s: %v", cfg.Report, werr))
			}
		}
		return err
	}
	// The Go heap follows the budget (LibRaw's C buffers are counted in
	// the estimates but are outside the Go runtime's limit).
	debug.SetMemoryLimit(cfg.MemBudget)
	rep.start(len(plan.Tasks) + len(plan.Problems) + len(plan.Filtered))
	// The first signal stops starting files and gives those in flight
	// --grace to finish; a second one stops them at once.
	r.Abort = sig.Abort

	// Under -q a collision whose renamed outputs are all up to date is the
	// same warning every night: it is said only when one is written.
	var later []string
	for _, w := range plan.Warnings {
		if cfg.Quiet && plan.Collisions[w] != nil {
			later = append(later, w)
			continue
		}
		rep.warn(w)
	}
	for _, pr := range plan.Problems {
		rep.done(pr)
	}
	// The files the sidecar filters left out: skipped, each with why, in
	// the summary and the report.
	for _, fr := range plan.Filtered {
		rep.done(fr)
	}
	r.Started, r.Done = rep.started, rep.done
	results := append(r.Run(ctx, plan), plan.Filtered...)
	batch.CloseWorkers() // the idle workers exit now, reaped by this process
	for _, w := range later {
		if batch.CollisionWritten(plan.Collisions[w], results) {
			rep.warn(w)
		} else {
			rep.keep(w) // in the report all the same
		}
	}
	interrupted := sig.interrupted()
	rep.summary(results, interrupted, r.Scheduler)
	rr.unsettled, rr.results = unsettled(results), results
	if hint := settleHint(results, cfg.watching); hint != "" {
		rep.note(hint)
	}
	if err := batch.WriteFailed(cfg.OutDir, results); err != nil {
		// A stale list would be worse than none.
		os.Remove(filepath.Join(meta, "failed.jsonl"))
		rep.warn("writing failed.jsonl (removed the previous one): " + err.Error())
	}
	if cfg.Gallery {
		if err := batch.WriteGallery(pb.od, results); err != nil {
			rep.warn("writing the gallery: " + err.Error())
		}
	}
	out := outcome(results, interrupted)
	if cfg.Find.FailIfEmpty && !interrupted && out.converted == 0 && out.failed == 0 && rr.unsettled > 0 {
		// Nothing converted, and files found still being written: a card
		// copy that has not finished is not the success of a run with
		// nothing new to do.
		out.unsettledEmpty = true
		rep.note(fmt.Sprintf("nothing converted, %s still being written (--fail-if-empty)", plural(int64(rr.unsettled), "file")))
	}
	if cfg.Report != "" {
		rr.warnings, rr.written = rep.warnings, true
		if err := batch.WriteJSON(cfg.Report, rr.build(results, interrupted, false, exitCode(out))); err != nil {
			rep.warn("writing the report: " + err.Error())
		}
	}
	return out
}

// dryRun lists the plan on stdout: each output to write with its size,
// the file's memory estimate (on its first row) or the reason it would
// fail, outputs already up to date; with --log-format json one planEvent
// per file instead of the table. The plan's warnings and the planned
// concurrency go through rep (stderr), as a run's warnings and summary do.
// File names are escaped as in the per-file lines (clean). What each file
// would do is batch.Runner.DryPlan's (the run's admission rule); after the table come the distinct stage
// plans (printStagePlans). It returns DryPlan's files.
func dryRun(w io.Writer, rep *reporter, plan *batch.Plan, r *batch.Runner, cfg ConvertConfig, jobs, cpus int) ([]batch.PlannedFile, error) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if !rep.json {
		fmt.Fprintln(tw, "INPUT\tOUTPUT\tSIZE\tESTIMATE\tNOTE")
	}
	row := func(in, out, size, est, note string) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", clean(in), clean(out), size, est, clean(note))
	}
	files, largest := r.DryPlan(plan)
	fail := 0
	for _, f := range files {
		ev := planEvent{Level: "info", Event: "plan", Status: string(f.Status), Kind: f.Kind, Reason: f.Reason, EstimatedBytes: f.NeedBytes, Preset: f.Task.Preset}
		if f.Status == batch.StatusFailed {
			ev.Level, fail = "error", fail+1
		}
		ev.Input, ev.InputB64 = batch.ReportPath(f.Task.Input)
		est := "-"
		if f.NeedBytes > 0 {
			est = budget.FormatSize(f.NeedBytes)
		}
		first := true
		// The file's first row names its preset.
		presetNote := ""
		if f.Task.Preset != "" {
			presetNote = "preset " + f.Task.Preset
		}
		note := func(n string) string {
			if presetNote == "" {
				return n
			}
			if n != "" {
				n = "; " + n
			}
			n, presetNote = presetNote+n, ""
			return n
		}
		for _, o := range f.Outputs {
			if !o.Pending {
				row(f.Task.Input, o.Path, "-", "-", note(o.Note))
				ev.addOutput(o.Path, "", string(o.Status))
				continue
			}
			size := ""
			if o.SizeKnown {
				size = fmt.Sprintf("%dx%d", o.Width, o.Height)
			}
			e := est
			if !first {
				e = `"`
			}
			shown := size
			if shown == "" {
				shown = "-"
			}
			row(f.Task.Input, o.Path, shown, e, note(o.Note))
			ev.addOutput(o.Path, size, ev.Status)
			first = false
		}
		rep.planRow(ev)
	}
	if !rep.json {
		tw.Flush()
		printStagePlans(w, files)
	}
	for _, p := range plan.Problems {
		ev := planEvent{Level: "error", Event: "plan", Status: string(batch.StatusFailed), Kind: batch.FailureKind(p.Err), Reason: p.Err.Error()}
		ev.Input, ev.InputB64 = batch.ReportPath(p.Input)
		if rep.json {
			rep.planRow(ev)
		} else {
			fmt.Fprintln(w, clean(fmt.Sprintf("would fail: %v", p.Err)))
		}
	}
	for _, warn := range plan.Warnings {
		rep.warn(warn)
	}
	// A file that failed at planning (outside --base, a listed file that
	// is missing, ...) is one of the files, and would fail.
	// The files that would convert run at once, as many as the job
	// slots allow (one more for the last with the default --jobs:
	// batch.Runner.TailJob); up to date and failing ones take none.
	planned := 0
	for _, f := range files {
		if f.Status == batch.StatusPlanned {
			planned++
		}
	}
	jobs = min(jobs, max(1, planned))
	jobsNote := plural(int64(min(cfg.Jobs, jobs)), "job")
	if jobs > cfg.Jobs {
		jobsNote += " and one more for the last file" // batch.Runner.TailJob
	}
	rep.note(fmt.Sprintf("%s, %d would fail; memory budget %s, %s, %s shared: each file's threads decided as it starts, growing when other files end and cores free up",
		plural(int64(len(plan.Tasks)+len(plan.Problems)), "file"), fail+len(plan.Problems), budget.FormatSize(cfg.MemBudget), jobsNote, plural(int64(cpus), "CPU")))
	if largest > 0 {
		atOnce := min(int64(jobs), max(1, cfg.MemBudget/largest))
		rep.note(fmt.Sprintf("largest estimate %s (including the worker process, at one thread): %d of those at once fit the budget, %d run at once at most, on %s each",
			budget.FormatSize(largest), cfg.MemBudget/largest, atOnce, plural(int64(budget.ShareThreads(cpus, 0, int(atOnce))), "thread")))
	}
	if fail+len(plan.Problems) > 0 {
		return files, &batchOutcome{failed: fail + len(plan.Problems)} // exit status 3, as the run would (and inspect does)
	}
	return files, nil
}

// planEvent is one file of a dry run's plan with --log-format json, on
// stdout (documented in docs/usage.md).
type planEvent struct {
	Time     string `json:"time"`
	Level    string `json:"level"` // info, or error for a file that would fail
	Event    string `json:"event"` // plan
	Input    string `json:"input"`
	InputB64 string `json:"input_b64,omitempty"`
	// Status is planned (would be converted), skipped (Reason says why:
	// up to date, still being written) or failed (would fail: Kind and
	// Reason say why).
	Status string `json:"status"`
	Kind   string `json:"kind,omitempty"`
	Reason string `json:"reason,omitempty"`
	// EstimatedBytes is the memory estimate, worker process included (0
	// when the header could not be read).
	EstimatedBytes int64 `json:"estimated_bytes,omitempty"`
	// Preset names the config preset whose settings the file would get.
	Preset  string       `json:"preset,omitempty"`
	Outputs []planOutput `json:"outputs,omitempty"`
}

// planOutput is one output of a planEvent.
type planOutput struct {
	Path    string `json:"path"`
	PathB64 string `json:"path_b64,omitempty"`
	// Size is the planned width x height ("6000x4000"), when known.
	Size string `json:"size,omitempty"`
	// Status: planned (would be written), skipped (up to date) or failed.
	Status string `json:"status"`
}

func (ev *planEvent) addOutput(path, size, status string) {
	o := planOutput{Size: size, Status: status}
	o.Path, o.PathB64 = batch.ReportPath(path)
	ev.Outputs = append(ev.Outputs, o)
}

// printStagePlans prints, after a dry run's table, each distinct stage
// plan of its files once (batch.StagePlans), numbered, with how many files
// would run it: "stage plan N (M files): " and the plan's text
// (pipeline.StagePlan.String: decoded size, variants in order, one line
// per step with its size and whose step it is). Variant names are the
// user's, escaped as file names are (clean).
func printStagePlans(w io.Writer, files []batch.PlannedFile) {
	groups, _ := batch.StagePlans(files)
	for i, g := range groups {
		fmt.Fprintf(w, "stage plan %d (%s): ", i+1, plural(int64(g.Files), "file"))
		for _, line := range strings.Split(strings.TrimSuffix(g.Plan.String(), "\n"), "\n") {
			fmt.Fprintln(w, clean(line))
		}
	}
}

// addStagePlans adds the distinct stage plans of a dry run's files to its
// report (batch.AddStagePlans); results are what the report's files were
// built from, in order.
func addStagePlans(rep *batch.Report, results []batch.FileResult, files []batch.PlannedFile) {
	groups, numbers := batch.StagePlans(files)
	inputs := make([]string, len(results))
	for i, r := range results {
		inputs[i] = r.Input
	}
	batch.AddStagePlans(rep, inputs, files, groups, numbers)
}
