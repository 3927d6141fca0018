package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

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
	// warnings are the run's warnings said with warn, for the report.
	warnings []string
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
	fmt.Fprintln(r.w, clean(fmt.Sprintf(format, a...)))
	if r.bar != nil {
		r.bar.RenderBlank()
	}
}

// note prints a line that is neither a file's result nor a warning (what
// an interrupt does).
func (r *reporter) note(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.println("%s", msg)
}

func (r *reporter) warn(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings = append(r.warnings, msg)
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
		switch fr.Status {
		case pipeline.StatusFailed:
			r.println("failed: %v", fr.Err)
		case pipeline.StatusLocked:
			r.println("locked: %v", fr.Err)
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
		r.println("[%d/%d] converted %s -> %s (%.1fs)", r.count, r.total, fr.Input, written(fr), fr.Duration.Seconds())
		for _, w := range fr.Result.Warnings {
			r.println("[%d/%d] warning %s: %s", r.count, r.total, fr.Input, w)
		}
	case pipeline.StatusFailed:
		r.println("[%d/%d] failed %v", r.count, r.total, fr.Err)
	case pipeline.StatusLocked:
		r.println("[%d/%d] locked %v", r.count, r.total, fr.Err)
	default:
		r.println("[%d/%d] skipped %s (%s)", r.count, r.total, fr.Input, fr.Reason)
	}
}

// written lists the files a conversion wrote with their sizes:
// "out/a.jpg (6000x4000), out/a.thumb.webp (512x341)".
func written(fr pipeline.FileResult) string {
	if len(fr.Result.Variants) == 0 {
		return fmt.Sprintf("%s (%dx%d)", fr.Output, fr.Result.Width, fr.Result.Height)
	}
	// The task's paths, exactly: the ones a worker sends back have been
	// through JSON, which turns bytes that are not UTF-8 into U+FFFD.
	paths := map[string]string{}
	for _, o := range fr.Outputs {
		paths[o.Variant.Name] = o.Path
	}
	var parts []string
	for _, v := range fr.Result.Variants {
		p := v.Path
		if tp, ok := paths[v.Name]; ok {
			p = tp
		}
		parts = append(parts, fmt.Sprintf("%s (%dx%d)", p, v.Width, v.Height))
	}
	return strings.Join(parts, ", ")
}

// clean makes a line safe for a terminal or a log: control characters in
// file names (escape sequences, newlines) are shown escaped, so every
// report stays one line and cannot drive the terminal.
func clean(s string) string {
	if !strings.ContainsFunc(s, isControl) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1: // a byte that is not UTF-8
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case isControl(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func isControl(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0)
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
	fmt.Fprintf(r.w, "%d converted, %d skipped, %d failed, %d locked in %.1fs (%.1f MP/s)\n",
		b.converted, b.skipped, b.failed, b.locked, el.Seconds(), r.mpix/max(el.Seconds(), 1e-3))
	if sched != nil {
		if peak, n := sched.Stats(); n > 0 {
			fmt.Fprintf(r.w, "at most %d at once, using %s of the %s memory budget\n", n, budget.FormatSize(peak), budget.FormatSize(sched.Budget()))
		}
	}
	if b.failed > 0 {
		fmt.Fprintf(r.w, "failed files:\n")
		for _, fr := range results {
			if fr.Status == pipeline.StatusFailed {
				fmt.Fprintln(r.w, clean(fmt.Sprintf("  %v%s", fr.Err, hint(fr.Err))))
			}
		}
	}
	if interrupted {
		fmt.Fprintf(r.w, "interrupted: %d files skipped (not started, or cancelled with no output left)\n", b.skipped)
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
