package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/cache"
	"github.com/rawbatch/rawbatch/lock"
	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/pipeline/state"
)

// newConvertCmd is `rawbatch convert`: its options are ConvertConfig,
// resolved from their settings, and its run runConvert.
func newConvertCmd() *cobra.Command {
	var opts ConvertConfig
	cmd := &cobra.Command{
		Use:   "convert [flags] [INPUT...] -o OUTDIR",
		Short: "Convert RAW files to JPEG, TIFF, PNG or WebP variants in a memory budget, skipping what is up to date or locked by another run",
		Long: `Convert every camera RAW file found in INPUT (directories are walked
recursively; files are taken as given) and listed by --files-from into OUTDIR,
mirroring the input tree: a/b/IMG_1.CR3 under an input directory becomes
OUTDIR/a/b/IMG_1.jpg (--name TEMPLATE names them otherwise: capture date,
camera, variant, ...). Walks skip macOS ._ files and system folders
(.Trashes, .Spotlight-V100, @eaDir, $RECYCLE.BIN, ...); --include and
--exclude narrow them.

Each file gives one full-size sRGB JPEG (--format another format: jpeg,
tiff8, tiff16, webp, png8, png16), or several outputs from one decode with
--variant NAME=FORMAT[,size=..][,space=..][,quality=..] (repeatable) or
--preset web|print|archive (see docs/variants.md).

Files run in worker processes, as many at once as --jobs and --mem-budget
allow; a crash or a hang (--timeout) fails that file only. Outputs are written
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
RAWBATCH_<NAME> (dashes become underscores).

` + exitHelp,
		Example: `  rawbatch convert ~/card -o ~/export
  rawbatch convert --format png16 --tone none IMG_0001.CR3 -o out
  rawbatch convert --preset web --name '{date:2006/01}/{stem}' ~/card -o ~/web
  find /photos -name '*.NEF' -print0 | rawbatch convert --files-from - -0 --base /photos -o out
  RAWBATCH_QUALITY=95 rawbatch convert /nas/incoming -o /nas/jpeg --quiet`,
		Args: cobra.ArbitraryArgs, // INPUTs are checked with the settings (files-from)
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.GlobalOptions = globalOptions(cmd)
			opts.Inputs, opts.Settings = args, pipeline.DefaultSettings()
			st, err := resolve(cmd, opts.settings(), true)
			if err != nil {
				return err
			}
			opts.Resolved = resolvedSettings(st, cmd)
			opts.Warnings = st.warnings
			return runConvert(cmd.Context(), opts, args)
		},
	}
	opts.AddFlags(cmd.Flags())
	registerCompletions(cmd, opts.settings())
	return cmd
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
	if cfg.Report != "" && !rr.written && !rr.refused {
		// A run that stopped before its report (no RAW file with
		// --fail-if-empty, an input or OUTDIR that cannot be used) still
		// writes one, so that a previous run's report never stands for
		// this one.
		if rerr := checkReport(cfg.Report, cfg.OutDir, &pipeline.Plan{}, nil); rerr == nil {
			rr.warnings = rep.warnings
			if _, ok := err.(*batchOutcome); !ok && err != nil {
				rr.warnings = append(rr.warnings, err.Error())
			}
			if werr := pipeline.WriteJSON(cfg.Report, rr.build(nil, sig.interrupted(), cfg.DryRun, exitCode(err))); werr != nil {
				rep.warn(fmt.Sprintf("writing the report %s: %v", cfg.Report, werr))
			}
		}
	}
	return err
}

// convertBatch is the run of runConvert; it sets rr.written when it wrote
// the report, and rr.refused when the report's path must not be written.
func convertBatch(cfg ConvertConfig, rep *reporter, sig *interrupts, rr *runReport) error {
	ctx := sig.Ctx
	for _, in := range cfg.Inputs {
		if _, err := os.Stat(in); err != nil {
			return fmt.Errorf("input %s: %w", in, err)
		}
	}
	if !cfg.DryRun { // a dry run creates nothing, not even OUTDIR
		if err := checkOutDir(cfg.OutDir); err != nil {
			return err
		}
	} else if err := checkOutDirDry(cfg.OutDir); err != nil {
		return err // exit status 1, as the run would
	}
	var suffixes []string
	for _, v := range cfg.Settings.OutputVariants() {
		suffixes = append(suffixes, v.Suffix())
	}
	plan, err := planInputs(cfg.Stdin, cfg, suffixes)
	if err != nil {
		return err
	}
	if cfg.Report != "" {
		if err := checkReport(cfg.Report, cfg.OutDir, plan, suffixes); err != nil {
			rr.refused = true
			return err
		}
	}
	if err := checkEmpty(rep, cfg, plan); err != nil {
		return err
	}
	jobs := min(cfg.Jobs, max(1, len(plan.Tasks)))
	threads := pipeline.Threads(runtime.NumCPU(), jobs)
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the rawbatch executable for its workers: %w", err)
	}
	meta := filepath.Join(cfg.OutDir, ".rawbatch")
	var store *state.Store
	var locks *lock.Dir
	if cfg.DryRun {
		// A dry run writes nothing: it reads the records if there are any.
		if _, err := os.Stat(filepath.Join(meta, "state")); err == nil {
			store, _ = state.Open(cfg.OutDir)
		}
	} else {
		if store, err = state.Open(cfg.OutDir); err != nil {
			return fmt.Errorf("output directory %s: %w", cfg.OutDir, err)
		}
		store.CleanTemps()
		// Temporary outputs of killed runs, whatever they were for (not
		// those an overlapping run is writing: they are locked).
		if n, size := pipeline.CleanStaleTemps(cfg.OutDir); n > 0 {
			rep.aside(fmt.Sprintf("removed %s (%s) left by killed runs", plural(int64(n), "temporary file"), budget.FormatSize(size)))
		}
		if locks, err = lock.Open(filepath.Join(meta, "locks")); err != nil {
			return fmt.Errorf("output directory %s: %w", cfg.OutDir, err)
		}
		// Records, locks and the report must be writable before anything runs.
		for _, dir := range []string{store.Dir(), locks.Path()} {
			if err := checkOutDir(dir); err != nil {
				return err
			}
		}
	}
	if avail, err := budget.Available(); err == nil && cfg.MemBudget > avail {
		rep.warn(fmt.Sprintf("the memory budget %s is more than the %s available; the kernel may kill conversions",
			budget.FormatSize(cfg.MemBudget), budget.FormatSize(avail)))
	}
	if cfg.CacheDir != "" && !cfg.DryRun {
		// The cache only saves decodes: one that cannot be used is worth a
		// warning, not a failed batch.
		if c, err := cache.Open(cfg.CacheDir, cfg.CacheSize); err == nil {
			c.Trim() // a lowered --cache-size applies now, not at the next write
		} else {
			hint := "choose another --cache-dir"
			if cfg.KeepCache {
				hint = "--keep-cache has no effect; " + hint
			}
			rep.warn(fmt.Sprintf("stage cache not used: %v; converting without it (%s)", err, hint))
			cfg.CacheDir = ""
		}
	}
	r := cfg.runner(threads, exe, store, locks)
	if planHook != nil {
		planHook(ctx)
	}
	// Up-to-date and still-being-written files first (stats and records
	// only), then the headers of the rest; a signal stops planning (Run
	// then starts nothing and reports every file as interrupted).
	if ctx.Err() == nil {
		r.SettleWait = func(n int, wait time.Duration) {
			rep.aside(fmt.Sprintf("waiting %s for %s modified within --min-age %s", pipeline.DurationText(wait), plural(int64(n), "file"), cfg.MinAge))
		}
		r.Settle(ctx, plan) // recent files get the rest of --min-age
	}
	// LibRaw's header reads run in helper processes that can be killed.
	plan.Headers = &pipeline.HeaderReader{Exe: exe}
	// A --name template with header fields names the files once their
	// headers are read (and the report path is checked against them).
	inspected := false
	if ctx.Err() == nil {
		inspected = plan.ResolveNames(planOptions(cfg), cfg.OutDir, suffixes, cfg.Settings, cfg.MinAge, threads, runtime.NumCPU())
	}
	if inspected && cfg.Report != "" {
		if err := checkReport(cfg.Report, cfg.OutDir, plan, suffixes); err != nil {
			plan.Headers.Close()
			rr.refused = true
			return err
		}
	}
	if ctx.Err() == nil {
		r.Triage(plan)
	}
	if ctx.Err() == nil && !inspected {
		plan.Inspect(cfg.Settings, threads, runtime.NumCPU())
	}
	plan.Headers.Close()
	if ctx.Err() == nil {
		r.Relocate(plan) // another photograph's export at an output name: STEM-N
	}
	if cfg.DryRun {
		var err error = &batchOutcome{interrupted: true}
		if ctx.Err() == nil {
			r.CheckReplaced(plan) // an output edited keeping its size and time: would fail
			err = dryRun(cfg.Stdout, rep, plan, cfg, jobs, threads)
		}
		if cfg.Report != "" {
			rr.warnings, rr.written = rep.warnings, true
			if werr := pipeline.WriteJSON(cfg.Report, rr.build(planResults(plan, cfg), sig.interrupted(), true, exitCode(err))); werr != nil {
				rep.warn(fmt.Sprintf("writing the report %s: %v", cfg.Report, werr))
			}
		}
		return err
	}
	// The Go heap follows the budget (LibRaw's C buffers are counted in
	// the estimates but are outside the Go runtime's limit).
	debug.SetMemoryLimit(cfg.MemBudget)
	rep.start(len(plan.Tasks) + len(plan.Problems))
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
	r.Started, r.Done = rep.started, rep.done
	results := r.Run(ctx, plan)
	for _, w := range later {
		if collisionWritten(plan.Collisions[w], results) {
			rep.warn(w)
		} else {
			rep.keep(w) // in the report all the same
		}
	}
	interrupted := sig.interrupted()
	rep.summary(results, interrupted, r.Scheduler)
	if hint := settleHint(results, cfg.MinAge); hint != "" {
		rep.note(hint)
	}
	if err := pipeline.WriteFailed(cfg.OutDir, results); err != nil {
		// A stale list would be worse than none.
		os.Remove(filepath.Join(meta, "failed.jsonl"))
		rep.warn("writing failed.jsonl (removed the previous one): " + err.Error())
	}
	out := outcome(results, interrupted)
	if cfg.Report != "" {
		rr.warnings, rr.written = rep.warnings, true
		if err := pipeline.WriteJSON(cfg.Report, rr.build(results, interrupted, false, exitCode(out))); err != nil {
			rep.warn("writing the report: " + err.Error())
		}
	}
	return out
}

// collisionWritten reports whether one of inputs was converted (an
// output written) in results.
func collisionWritten(inputs []string, results []pipeline.FileResult) bool {
	for _, fr := range results {
		if fr.Status == pipeline.StatusConverted && slices.Contains(inputs, fr.Input) {
			return true
		}
	}
	return false
}

// checkOutDir creates dir if needed and proves it writable by creating and
// removing a temporary file in it.
func checkOutDir(dir string) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		if derr := checkOutDirDry(dir); derr != nil {
			return derr // the dry run's wording: the same failure, the same message
		}
		return fmt.Errorf("output directory %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".rawbatch-probe-*")
	if err != nil {
		return fmt.Errorf("output directory %s is not writable: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// checkReport refuses a --report path that would destroy something: an
// input or an output of the run, anything under OUTDIR/.rawbatch (records,
// locks), a directory, or an existing file that is not a rawbatch report;
// one named as an image rawbatch writes (.jpg .jpeg .tif .tiff .png .webp);
// and one whose directory is missing or not writable. Paths are compared
// with symbolic links resolved. It runs before anything is converted.
func checkReport(path, outDir string, plan *pipeline.Plan, suffixes []string) error {
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
			return fmt.Errorf("--report %s: that is inside %s, rawbatch's records and locks; give a file name elsewhere", path, filepath.Join(outDir, ".rawbatch"))
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
	case ".jpg", ".jpeg", ".tif", ".tiff", ".png", ".webp":
		return fmt.Errorf("--report %s: the report is JSON, not a %s image; give a file name such as report.json", path, strings.TrimPrefix(ext, "."))
	}
	if err := checkOutDir(filepath.Dir(path)); err != nil {
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

// noRecreateReason is the skip reason of a file whose deleted outputs
// --no-recreate leaves deleted.
const noRecreateReason = "output deleted; --no-recreate"

// dryRun lists the plan on stdout: each output to write with its size,
// the file's memory estimate (on its first row) or the reason it would
// fail, outputs already up to date; with --log-format json one planEvent
// per file instead of the table. The plan's warnings and the planned
// concurrency go through rep (stderr), as a run's warnings and summary do.
// File names are escaped as in the per-file lines (clean).
func dryRun(w io.Writer, rep *reporter, plan *pipeline.Plan, cfg ConvertConfig, jobs, threads int) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if !rep.json {
		fmt.Fprintln(tw, "INPUT\tOUTPUT\tSIZE\tESTIMATE\tNOTE")
	}
	row := func(in, out, size, est, note string) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", clean(in), clean(out), size, est, clean(note))
	}
	var largest int64
	fail := 0
	for _, t := range plan.Tasks {
		outs := t.Outputs
		if len(outs) == 0 {
			outs = []pipeline.Output{{Variant: cfg.Settings.OutputVariants()[0], Path: t.Output}}
		}
		ev := planEvent{Level: "info", Event: "plan", Status: string(pipeline.StatusPlanned)}
		ev.Input, ev.InputB64 = pipeline.ReportPath(t.Input)
		if t.Done != nil {
			note := "skip: " + t.Done.Reason
			ev.Status, ev.Reason = string(t.Done.Status), t.Done.Reason
			if t.Done.Status == pipeline.StatusFailed { // a file rawbatch did not write at an output path, ...
				note, fail = "would fail: "+t.Done.Err.Error(), fail+1
				ev.Level, ev.Kind, ev.Reason = "error", pipeline.FailureKind(t.Done.Err), t.Done.Err.Error()
			}
			for _, o := range outs {
				n := note
				if t.Done.Reason == noRecreateReason {
					if _, err := os.Lstat(o.Path); err == nil {
						n = "skip: up to date" // only the deleted ones are left deleted
					}
				}
				row(t.Input, o.Path, "-", "-", n)
				ev.addOutput(o.Path, "", string(t.Done.Status))
			}
			rep.planRow(ev)
			continue
		}
		pending := map[int]bool{}
		for i := range outs {
			pending[i] = t.Pending == nil
		}
		for _, i := range t.Pending {
			pending[i] = true
		}
		note, est := "", "-"
		need := pipeline.WorkerBytes(t.Estimate)
		switch {
		case t.Err != nil:
			note, fail = "would fail: "+t.Err.Error(), fail+1
			ev.Level, ev.Status, ev.Kind, ev.Reason = "error", string(pipeline.StatusFailed), pipeline.FailureKind(t.Err), t.Err.Error()
		case need > cfg.MemBudget:
			note, fail = "over budget", fail+1
			ev.Level, ev.Status, ev.Kind = "error", string(pipeline.StatusFailed), "over-budget"
			ev.Reason = fmt.Sprintf("over budget: needs an estimated %s, the budget is %s",
				budget.FormatSize(need), budget.FormatSize(cfg.MemBudget))
		default:
			largest = max(largest, need)
		}
		if t.Err == nil {
			est = budget.FormatSize(need)
			ev.EstimatedBytes = need
		}
		first := true
		for i, o := range outs {
			if !pending[i] {
				row(t.Input, o.Path, "-", "-", "skip: up to date")
				ev.addOutput(o.Path, "", string(pipeline.StatusSkipped))
				continue
			}
			size := "-"
			if t.Err == nil {
				fw, fh := o.Variant.Fit(pipeline.DecodedSize(t.Info, cfg.Settings))
				size = fmt.Sprintf("%dx%d", fw, fh)
			}
			e := est
			if !first {
				e = `"`
			}
			row(t.Input, o.Path, size, e, note)
			if size == "-" {
				size = ""
			}
			ev.addOutput(o.Path, size, ev.Status)
			first = false
		}
		rep.planRow(ev)
	}
	if !rep.json {
		tw.Flush()
	}
	for _, p := range plan.Problems {
		ev := planEvent{Level: "error", Event: "plan", Status: string(pipeline.StatusFailed), Kind: pipeline.FailureKind(p.Err), Reason: p.Err.Error()}
		ev.Input, ev.InputB64 = pipeline.ReportPath(p.Input)
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
	rep.note(fmt.Sprintf("%s, %d would fail; memory budget %s, %s, LibRaw threads per job: %d",
		plural(int64(len(plan.Tasks)+len(plan.Problems)), "file"), fail+len(plan.Problems), budget.FormatSize(cfg.MemBudget), plural(int64(jobs), "job"), threads))
	if largest > 0 {
		rep.note(fmt.Sprintf("largest estimate %s (including the worker process): %d of those at once fit the budget, %d run at once at most",
			budget.FormatSize(largest), cfg.MemBudget/largest, min(int64(jobs), max(1, cfg.MemBudget/largest))))
	}
	if fail+len(plan.Problems) > 0 {
		return &batchOutcome{failed: fail + len(plan.Problems)} // exit status 3, as the run would (and inspect does)
	}
	return nil
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
	EstimatedBytes int64        `json:"estimated_bytes,omitempty"`
	Outputs        []planOutput `json:"outputs,omitempty"`
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
	o.Path, o.PathB64 = pipeline.ReportPath(path)
	ev.Outputs = append(ev.Outputs, o)
}
