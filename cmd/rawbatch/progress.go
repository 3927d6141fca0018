package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"

	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/pipeline/rawerr"
)

// reporter shows the progress of a batch: a progress bar on a terminal, or
// one line per file (for cron logs) with --quiet or when w is not a
// terminal, and a summary at the end.
type reporter struct {
	w     io.Writer
	bar   *progressbar.ProgressBar
	mu    sync.Mutex
	t0    time.Time
	mpix  float64
	total int
	count int
}

func newReporter(w io.Writer, quiet bool, total int) *reporter {
	r := &reporter{w: w, t0: time.Now(), total: total}
	if !quiet && isTerminal(w) && total > 0 {
		r.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("converting"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	}
	return r
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// println writes a line above the bar (or plainly without one).
func (r *reporter) println(format string, a ...any) {
	if r.bar != nil {
		r.bar.Clear()
	}
	fmt.Fprintf(r.w, format+"\n", a...)
	if r.bar != nil {
		r.bar.RenderBlank()
	}
}

func (r *reporter) warn(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.println("warning: %s", msg)
}

func (r *reporter) started(pipeline.Task) {}

func (r *reporter) done(fr pipeline.FileResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count++
	mp := float64(fr.Result.Width) * float64(fr.Result.Height) / 1e6
	r.mpix += mp
	rate := r.mpix / max(time.Since(r.t0).Seconds(), 1e-3)
	if r.bar != nil {
		if fr.Status == pipeline.StatusFailed {
			r.println("failed: %v", fr.Err)
		}
		for _, w := range fr.Result.Warnings {
			r.println("warning: %s: %s", fr.Input, w)
		}
		r.bar.Describe(fmt.Sprintf("converting %.1f MP/s", rate))
		r.bar.Add(1)
		return
	}
	switch fr.Status {
	case pipeline.StatusConverted:
		fmt.Fprintf(r.w, "[%d/%d] converted %s -> %s (%dx%d, %.1fs)\n", r.count, r.total, fr.Input, fr.Output,
			fr.Result.Width, fr.Result.Height, fr.Duration.Seconds())
		for _, w := range fr.Result.Warnings {
			fmt.Fprintf(r.w, "[%d/%d] warning %s: %s\n", r.count, r.total, fr.Input, w)
		}
	case pipeline.StatusFailed:
		fmt.Fprintf(r.w, "[%d/%d] failed %v\n", r.count, r.total, fr.Err)
	default:
		fmt.Fprintf(r.w, "[%d/%d] skipped %s\n", r.count, r.total, fr.Input)
	}
}

// summary prints the counts, the peak concurrency and memory admitted, and
// every failure with its reason.
func (r *reporter) summary(results []pipeline.FileResult, interrupted bool, sched *budget.Scheduler) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bar != nil {
		r.bar.Finish()
		r.bar.Clear()
	}
	b := outcome(results, interrupted)
	el := time.Since(r.t0)
	fmt.Fprintf(r.w, "%d converted, %d skipped, %d failed in %.1fs (%.1f MP/s)\n",
		b.converted, b.skipped, b.failed, el.Seconds(), r.mpix/max(el.Seconds(), 1e-3))
	if sched != nil {
		if peak, n := sched.Stats(); n > 0 {
			fmt.Fprintf(r.w, "at most %d files at once, %s of the %s memory budget\n", n, budget.FormatSize(peak), budget.FormatSize(sched.Budget()))
		}
	}
	if b.failed > 0 {
		fmt.Fprintf(r.w, "failed files:\n")
		for _, fr := range results {
			if fr.Status == pipeline.StatusFailed {
				fmt.Fprintf(r.w, "  %v%s\n", fr.Err, hint(fr.Err))
			}
		}
	}
	if interrupted {
		fmt.Fprintf(r.w, "interrupted: %d files not started\n", b.skipped)
	}
}

// hint suggests what to do about a kind of failure.
func hint(err error) string {
	switch {
	case errors.Is(err, rawerr.ErrUnsupported):
		return " (hint: a newer LibRaw may read it; see 'rawbatch version')"
	case errors.Is(err, budget.ErrOverBudget):
		return "" // the message already says what to do
	}
	return ""
}
