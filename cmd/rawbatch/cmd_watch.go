package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rawbatch/rawbatch/batch"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// WatchOptions are watch's: convert's settings (each run is a convert
// run over the DIRs) and its own.
type WatchOptions struct {
	ConvertConfig
	// Poll is --poll: walk the DIRs at this interval instead of inotify
	// (network mounts); 0 uses inotify.
	Poll time.Duration
}

// AddFlags adds the flags of watch's settings to f.
func (o *WatchOptions) AddFlags(f *pflag.FlagSet) { addFlags(f, o.settings()) }

func (o *WatchOptions) settings() []setting {
	return append(o.ConvertConfig.settings(), o.ownSettings()...)
}

func (o *WatchOptions) ownSettings() []setting {
	return []setting{
		{Name: "poll", Default: time.Duration(0), Help: "look for new and changed files by walking the folders at this interval instead of through inotify (network mounts, where other hosts' writes raise no inotify event); 0: inotify",
			Apply: func(v value) (err error) {
				if o.Poll, err = duration(v); err == nil && o.Poll < 0 {
					err = fmt.Errorf("--poll %s: must not be negative", o.Poll)
				}
				return err
			}},
	}
}

// newWatchCmd is `rawbatch watch`: a hot folder.
func newWatchCmd() *cobra.Command {
	var opts WatchOptions
	cmd := &cobra.Command{
		Use:   "watch [flags] DIR... -o OUTDIR",
		Short: "Convert RAW files as they arrive in hot folders (tethered shooting, ingest), until stopped",
		Long: `Watch each DIR and everything under it, and convert what appears or
changes there into OUTDIR, as convert would with the same flags: the same
records, locks and reports, so watch, cron runs and manual runs overlap
safely. It converts what is there when it starts (what arrived while it
was down; the records make it cheap), then waits for changes: inotify
(new folders are watched too; idle, it uses next to no CPU), or with
--poll D a walk every D (network mounts). A DIR that goes (removed,
renamed, a card or share unmounted) does not end watch: it says so once,
looks for the DIR every 2s (every D with --poll), and when the DIR is
back watches it again and converts what is in it. A file is taken once nothing under the DIRs has
changed for --min-age and its size and modification time are stable, so a
card copied in is converted as one batch, and a file still being written
is left for the next change. SIGINT or SIGTERM stops it: no more files
start, and those in progress get --grace to finish; it then prints the
session's summary and exits 3 when a file failed during the session and
was not converted since, else 130 when the signal stopped a run, else 0.

` + exitHelp,
		Example: `  rawbatch watch ~/tether -o ~/tether/jpeg --gallery
  rawbatch watch --poll 10s --min-age 5s /mnt/nas/incoming -o /mnt/nas/jpeg`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.resolveFrom(cmd, args, opts.settings); err != nil {
				return err
			}
			return runWatch(cmd.Context(), opts, args)
		},
	}
	opts.AddFlags(cmd.Flags())
	registerCompletions(cmd, opts.settings())
	return cmd
}

// runWatch converts dirs into opts.OutDir once, then again after each
// burst of changes under them, until a signal (or ctx) ends it. A DIR
// that goes while it runs is waited for (warned of once) and watched
// and converted again when it is back. Errors: a DIR that is not a
// directory when it starts, --dry-run or --files-from (nothing to
// watch), the watcher cannot be set up, OUTDIR cannot be used.
func runWatch(ctx context.Context, opts WatchOptions, dirs []string) error {
	cfg := opts.ConvertConfig
	if cfg.DryRun {
		return errors.New("watch: --dry-run is not for watch; use convert --dry-run")
	}
	if cfg.Find.FilesFrom != "" {
		return errors.New("watch: --files-from is not for watch; it watches its DIRs")
	}
	for _, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("watch %s: %w", d, err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("watch %s: not a directory", d)
		}
	}
	cfg.Inputs = dirs
	var cur atomic.Pointer[reporter]
	cur.Store(newReporter(cfg.Stdout, cfg.Stderr, cfg.Quiet, cfg.LogFormat, 0))
	for _, w := range cfg.Warnings {
		cur.Load().warn(w)
	}
	cfg.Warnings = nil // said once
	sig := watchInterrupts(ctx, cfg.Grace, func(s string) { cur.Load().note(s) })
	defer sig.stop()

	// The watcher first: what changes during the first run is seen.
	outAbs, _ := filepath.Abs(cfg.OutDir)
	w, err := batch.NewWatcher(dirs, opts.Poll, watchSkip(outAbs))
	if err != nil {
		return fmt.Errorf("watching %s: %w", strings.Join(dirs, ", "), err)
	}
	defer w.Close()
	how := "inotify"
	if opts.Poll > 0 {
		how = "a walk every " + opts.Poll.String()
	}
	cur.Load().note(fmt.Sprintf("watching %s (%s); converting into %s", strings.Join(dirs, ", "), how, cfg.OutDir))
	quiet := max(cfg.MinAge, 50*time.Millisecond)
	cfg.watching = true
	session := newWatchSession()
	// Every lookEvery watch checks that the DIRs are still there: a DIR
	// removed and made again, or a card mounted again, is a new directory
	// that inotify's watches (on the old one) never see.
	lookEvery := watchLookEvery
	if opts.Poll > 0 {
		lookEvery = opts.Poll
	}
	looks := time.NewTicker(lookEvery)
	defer looks.Stop()
	gone := map[string]bool{} // the DIRs said to be gone
	// look says which DIRs are gone or back since the last look (once
	// each, on rep), has the watcher watch again those back, and returns
	// the DIRs there now and whether any came or went.
	look := func(rep *reporter) (present []string, changed bool) {
		missing, back := w.Refresh()
		for _, d := range dirs {
			err, isGone := missing[d]
			switch {
			case isGone && !gone[d]:
				gone[d], changed = true, true
				why := "is gone"
				if !errors.Is(err, fs.ErrNotExist) {
					why = fmt.Sprintf("cannot be watched (%v)", err)
				}
				rep.warn(fmt.Sprintf("input %s %s; waiting for it to come back (looking every %s)", d, why, lookEvery))
			case !isGone && gone[d]:
				delete(gone, d)
				changed = true
				rep.note(fmt.Sprintf("input %s is back; converting what is in it", d))
			}
			if !isGone {
				present = append(present, d)
			}
		}
		return present, changed || len(back) > 0
	}
	var again time.Duration // the wait before looking again at files still being written
	for {
		rep := newReporter(cfg.Stdout, cfg.Stderr, cfg.Quiet, cfg.LogFormat, 0)
		cur.Store(rep)
		rr := &runReport{start: time.Now(), cfg: cfg}
		present, _ := look(rep)
		cfg.Inputs = present
		if len(present) > 0 { // with every DIR gone there is nothing to run over
			err := convertBatch(cfg, rep, sig, rr)
			fallbackReport(cfg, rep, sig, rr, err)
			if _, perFile := err.(*batchOutcome); err != nil && !perFile {
				if _, changed := look(rep); !changed {
					return err // OUTDIR or the report cannot be used: no later run can do better
				}
				// A DIR went during the run: said, and waited for.
			}
			session.add(rr.results)
			if sig.Ctx.Err() != nil {
				return session.end(rep, err) // stopped during the run
			}
		}
		// Files still being written are looked at again after --min-age,
		// then waiting twice as long each time they still are (up to
		// maxRecheck), even when nothing else changes: a file cut short
		// for good is then reported, not left unsaid.
		var recheck <-chan time.Time
		stop := func() bool { return false }
		if rr.unsettled > 0 {
			again = min(max(2*again, quiet), maxRecheck)
			t := time.NewTimer(again)
			recheck, stop = t.C, t.Stop
		} else {
			again = 0
		}
		if idleHook != nil {
			idleHook(sig.Ctx)
		}
		settle := true // a change: wait for the burst to end
	wait:
		for {
			select {
			case <-sig.Ctx.Done():
				stop()
				return session.end(rep, nil) // stopped while idle
			case err := <-w.Errs:
				// A folder that could not be watched, a lost event: say so, and
				// look again once things are quiet.
				rep.warn("watch: " + err.Error())
				break wait
			case <-w.Changed():
				break wait
			case <-recheck:
				settle = false // only the files still being written: nothing to wait for
				break wait
			case <-looks.C:
				if lookHook != nil {
					lookHook()
				}
				if _, changed := look(rep); changed {
					break wait
				}
			}
		}
		stop()
		if settle && !w.Settle(sig.Ctx, quiet) {
			return session.end(rep, nil) // stopped before the next run
		}
	}
}

// watchLookEvery is how often watch checks that its DIRs are still there
// when it uses inotify (with --poll: at each walk).
var watchLookEvery = 2 * time.Second

// lookHook, set only by the tests, runs each time watch checks that its
// DIRs are still there while it waits for changes.
var lookHook func()

// idleHook, set only by the tests, runs each time watch has finished a
// run and is about to wait for changes, to deliver a signal while it is
// idle.
var idleHook func(ctx context.Context)

// watchSession is what the runs of one watch did, for the summary and
// the exit status when a signal ends it: the files converted, and the
// files that failed and were not converted by a later run (a file
// replaced by a good copy is converted by the next run), by input.
type watchSession struct {
	converted map[string]bool
	failed    map[string]batch.FileResult
}

func newWatchSession() *watchSession {
	return &watchSession{converted: map[string]bool{}, failed: map[string]batch.FileResult{}}
}

// add counts a run's results.
func (s *watchSession) add(results []batch.FileResult) {
	for _, fr := range results {
		switch fr.Status {
		case batch.StatusConverted:
			s.converted[fr.Input] = true
			delete(s.failed, fr.Input)
		case batch.StatusFailed:
			s.failed[fr.Input] = fr
		}
	}
}

// end prints the session's summary on rep and returns the outcome that
// decides watch's exit status once a signal ended it: last is the
// outcome of the run the signal stopped, nil when it came while watch
// was idle. Files that failed make it exit 3, as a convert run with
// failed files does; else a stopped run's outcome decides (130, as
// convert's, when the signal came during it), and a session stopped
// while idle exits 0. Failures come before the interrupt, unlike in
// convert: a signal is how every watch ends, so only the failures say
// that something went wrong.
func (s *watchSession) end(rep *reporter, last error) error {
	failed := make([]batch.FileResult, 0, len(s.failed))
	for _, fr := range s.failed {
		failed = append(failed, fr)
	}
	sort.Slice(failed, func(i, j int) bool { return failed[i].Input < failed[j].Input })
	rep.session(len(s.converted), failed)
	if len(failed) > 0 {
		return &batchOutcome{converted: len(s.converted), failed: len(failed)}
	}
	return last
}

// maxRecheck is the longest watch waits before looking again at a file
// still being written when nothing else changes.
const maxRecheck = time.Minute

// watchSkip tells the watcher what under the DIRs is not to be watched:
// OUTDIR (when inside a DIR: its outputs would wake the watcher) and
// rawbatch's own folders.
func watchSkip(outAbs string) func(string) bool {
	return func(p string) bool {
		switch filepath.Base(p) {
		case ".rawbatch", batch.GalleryDir:
			return true
		}
		if a, err := filepath.Abs(p); err == nil && outAbs != "" && (a == outAbs || strings.HasPrefix(a, outAbs+string(filepath.Separator))) {
			return true
		}
		return false
	}
}
