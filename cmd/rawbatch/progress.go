package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rawbatch/rawbatch/batch"
	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/sys/unix"
)

// reporter shows the progress of a batch. Per-file results ("[3/10]
// converted ...") go to out (stdout); diagnostics (warnings, what a signal
// does, the progress bar and the summary) go to w (stderr). On a terminal
// stderr shows a progress bar, with failures and warnings above it; with
// --quiet only failures, warnings and the summary are printed: files
// locked by another run are a count in the summary, not a line each. With --log-format json every line is a JSON object (logEvent);
// text lines that do not go to a terminal start with a timestamp.
type reporter struct {
	w, out io.Writer
	quiet  bool
	json   bool
	bar    *progressbar.ProgressBar
	mu     sync.Mutex
	t0     time.Time
	begin  time.Time // the run's start: the summary's time is its wall time
	mpix   float64
	total  int
	count  int
	// warnings are the run's warnings said with warn, for the report.
	warnings []string
	// now is the clock of the timestamps (a test sets it).
	now func() time.Time
}

// Log formats (--log-format).
const (
	logText = "text"
	logJSON = "json"
)

// newReporter reports to out (results) and w (diagnostics); format is
// logText or logJSON; total is the number of files (0: not known yet, see
// start).
func newReporter(out, w io.Writer, quiet bool, format string, total int) *reporter {
	r := &reporter{w: w, out: out, quiet: quiet, json: format == logJSON, now: time.Now, begin: time.Now()}
	r.start(total)
	return r
}

// start begins the conversions of total files: the clock of the rate, and
// the progress bar on a terminal.
func (r *reporter) start(total int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.t0, r.total = time.Now(), total
	if width, ok := barWidth(terminalColumns(r.w), os.Getenv("TERM")); ok && !r.quiet && !r.json && isTerminal(r.w) && total > 0 {
		r.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(r.w),
			progressbar.OptionSetDescription("converting"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetWidth(width),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	}
}

// barText is the room the progress bar's text takes beside the bar
// itself: "converting 123.4 MP/s 100% || (1000/1000) [1h0m:1h0m]".
const barText = 52

// barWidth returns the width of the progress bar's bar on a terminal of
// cols columns (0: unknown) and TERM term, and false when there should be
// no bar: a dumb terminal (no cursor movement, every update would be a new
// line), an unknown size, or fewer columns than the bar's line needs (it
// would wrap, and each update would add a line).
func barWidth(cols int, term string) (int, bool) {
	if term == "dumb" || cols <= 0 {
		return 0, false
	}
	w := min(30, cols-1-barText)
	if w < 10 {
		return 0, false
	}
	return w, true
}

// terminalColumns returns the width of the terminal w is, or 0.
func terminalColumns(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// logEvent is one line of --log-format json (documented in docs/usage.md).
type logEvent struct {
	Time  string `json:"time"`            // RFC 3339, UTC, milliseconds
	Level string `json:"level"`           // info, warning or error
	Event string `json:"event"`           // converted, skipped, kept, known-failure, failed, locked, warning, note, summary, session
	N     int    `json:"n,omitempty"`     // the file's place in the run, 1..total
	Total int    `json:"total,omitempty"` // the files of the run
	// Input, with InputB64 when it is not valid UTF-8 (as in the report).
	Input    string   `json:"input,omitempty"`
	InputB64 string   `json:"input_b64,omitempty"`
	Outputs  []string `json:"outputs,omitempty"`
	// OutputsB64 is set when an output is not valid UTF-8: each output's
	// exact bytes in base64, in the order of Outputs ("" for those that
	// are valid UTF-8).
	OutputsB64 []string `json:"outputs_b64,omitempty"`
	Kind       string   `json:"kind,omitempty"`
	Reason     string   `json:"reason,omitempty"`
	Message    string   `json:"message,omitempty"`
	// Preset names the config preset of a file's settings (batch.Task.
	// Preset), when one applies.
	Preset string `json:"preset,omitempty"`
	// DurationMS is a file's conversion time, or the run's (summary).
	DurationMS *int64 `json:"duration_ms,omitempty"`
	// converted files decoded in this run: as the report (progress_look.go)
	WhiteBalance   *pipeline.WhiteBalanceUsed `json:"white_balance,omitempty"`
	ExposureEV     *float64                   `json:"exposure_ev,omitempty"`
	ExposureSource string                     `json:"exposure_source,omitempty"`
	Lens           *pipeline.LensCorrection   `json:"lens,omitempty"`
	// The counts of a summary.
	Converted *int `json:"converted,omitempty"`
	Skipped   *int `json:"skipped,omitempty"`
	Failed    *int `json:"failed,omitempty"`
	Locked    *int `json:"locked,omitempty"`
	// Of the skipped: kept as edited (--edited keep) and known failures
	// (--known-failures skip), when there are any.
	Kept          int `json:"kept,omitempty"`
	KnownFailures int `json:"known_failures,omitempty"`
	// The rest of a summary, as its text lines say it: the most files at
	// once and the memory they were estimated to need of the budget, the
	// failed files, and whether a signal stopped the run.
	MaxAtOnce      int          `json:"max_at_once,omitempty"`
	PeakBytes      int64        `json:"peak_bytes,omitempty"`
	MemBudgetBytes int64        `json:"mem_budget_bytes,omitempty"`
	FailedFiles    []failedLine `json:"failed_files,omitempty"`
	Interrupted    bool         `json:"interrupted,omitempty"`
}

// failedLine is a failed file in the JSON summary.
type failedLine struct {
	Input    string `json:"input"`
	InputB64 string `json:"input_b64,omitempty"`
	Kind     string `json:"kind"`
	Message  string `json:"message"`
	Hint     string `json:"hint,omitempty"`
}

// ms is d in milliseconds, for DurationMS.
func ms(d time.Duration) *int64 {
	n := d.Milliseconds()
	return &n
}

// emit writes one line: text (made safe for a terminal) or ev as JSON, to
// stdout when result is set, else stderr. A write that fails (a closed
// pipe) is dropped.
func (r *reporter) emit(result bool, ev logEvent, text string) {
	w := r.w
	if result {
		w = r.out
	}
	if r.json {
		ev.Time = r.now().UTC().Format("2006-01-02T15:04:05.000Z07:00")
		// Bytes that are not UTF-8 are shown \xNN, as in the paths (JSON
		// would turn them into U+FFFD).
		ev.Reason, ev.Message = displayText(ev.Reason), displayText(ev.Message)
		b, _ := json.Marshal(ev)
		w.Write(append(b, '\n'))
		return
	}
	onBar := r.bar != nil && (w == r.w || isTerminal(w))
	if onBar {
		r.bar.Clear()
	}
	line := clean(text)
	if !isTerminal(w) {
		line = r.now().UTC().Format("2006-01-02T15:04:05.000Z07:00") + " " + line
	}
	fmt.Fprintln(w, line)
	if onBar {
		r.bar.RenderBlank()
	}
}

// planRow prints a dry run's planEvent on stdout with --log-format json
// (the text table is printed by dryRun itself).
func (r *reporter) planRow(ev planEvent) {
	if !r.json {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ev.Time = r.now().UTC().Format("2006-01-02T15:04:05.000Z07:00")
	ev.Reason = displayText(ev.Reason)
	b, _ := json.Marshal(ev)
	r.out.Write(append(b, '\n'))
}

// note prints a line that is neither a file's result nor a warning (what
// an interrupt does).
func (r *reporter) note(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.emit(false, logEvent{Level: "info", Event: "note", Message: msg}, msg)
}

// aside is a note that -q leaves out: housekeeping and waits, nothing
// about this run's results.
func (r *reporter) aside(msg string) {
	if !r.quiet {
		r.note(msg)
	}
}

// keep adds msg to the run's warnings for the report without printing
// it.
func (r *reporter) keep(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings = append(r.warnings, msg)
}

func (r *reporter) warn(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings = append(r.warnings, msg)
	r.emit(false, logEvent{Level: "warning", Event: "warning", Message: msg}, "warning: "+msg)
}

func (r *reporter) started(batch.Task) {}

// decodedMP is the megapixels converted for fr: the sensor image LibRaw
// read (before half-size, resizing or cropping of the outputs), whether
// decoded in this run or served from the stage cache (a run of cache hits
// converts as many megapixels); 0 when nothing was
// converted from it (a skip, a failure before the decode).
func decodedMP(fr batch.FileResult) float64 {
	if !fr.Decoded && !fr.Result.FromCache {
		return 0
	}
	w, h := fr.Info.RawWidth, fr.Info.RawHeight
	if w == 0 || h == 0 {
		w, h = fr.Info.Width, fr.Info.Height
	}
	return float64(w) * float64(h) / 1e6
}

func (r *reporter) done(fr batch.FileResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count++
	r.mpix += decodedMP(fr)
	rate := r.mpix / max(time.Since(r.t0).Seconds(), 1e-3)
	ev := logEvent{Level: "info", Event: string(fr.Status), N: r.count, Total: r.total, Reason: fr.Reason,
		DurationMS: ms(fr.Duration), Preset: fr.Preset}
	ev.Input, ev.InputB64 = batch.ReportPath(fr.Input)
	if fr.Err != nil && (fr.Status != batch.StatusSkipped || fr.Reason == "") {
		ev.Message = fr.Err.Error()
	}
	var text string
	switch fr.Status {
	case batch.StatusConverted:
		text = fmt.Sprintf("[%d/%d] converted %s -> %s in %.1fs%s", r.count, r.total, fr.Input, written(fr), fr.Duration.Seconds(), lookNote(fr)+lensNote(fr))
		ev.Outputs, ev.OutputsB64 = logPaths(writtenPaths(fr))
		lookFields(&ev, fr)
		lensFields(&ev, fr)
	case batch.StatusFailed:
		ev.Level, ev.Kind = "error", batch.FailureKind(fr.Err)
		text = fmt.Sprintf("[%d/%d] failed %v", r.count, r.total, fr.Err)
	case batch.StatusLocked:
		ev.Level = "warning"
		text = fmt.Sprintf("[%d/%d] locked %v", r.count, r.total, fr.Err)
	case batch.StatusKept:
		text = fmt.Sprintf("[%d/%d] %s: %s -> %s", r.count, r.total, fr.Reason, fr.Input, strings.Join(keptPaths(fr), ", "))
	case batch.StatusKnownFailure:
		ev.Kind = batch.FailureKind(fr.Err)
		text = fmt.Sprintf("[%d/%d] %s", r.count, r.total, fr.Reason)
	default:
		text = fmt.Sprintf("[%d/%d] skipped %s (%s)", r.count, r.total, fr.Input, fr.Reason)
		if strings.ContainsAny(fr.Reason, "()") { // no parentheses in parentheses
			text = fmt.Sprintf("[%d/%d] skipped %s: %s", r.count, r.total, fr.Input, fr.Reason)
		}
	}
	serious := fr.Status == batch.StatusFailed || fr.Status == batch.StatusLocked
	switch {
	case r.bar != nil && isTerminal(r.out):
		// One terminal: the bar counts the files, failures go above it.
		if serious {
			r.emit(false, ev, fmt.Sprintf("%s: %v", fr.Status, fr.Err))
		}
	case !r.quiet || fr.Status == batch.StatusFailed:
		r.emit(true, ev, text)
	}
	for _, w := range fr.Result.Warnings {
		wev := logEvent{Level: "warning", Event: "warning", Input: ev.Input, InputB64: ev.InputB64, Message: w}
		r.emit(false, wev, fmt.Sprintf("warning: %s: %s", fr.Input, w))
	}
	if r.bar != nil {
		r.bar.Describe(fmt.Sprintf("converting %.1f MP/s", rate))
		r.bar.Add(1)
	}
}

// keptPaths are the outputs of a kept file (all of them: which were
// edited is in no result).
func keptPaths(fr batch.FileResult) []string {
	var paths []string
	for _, o := range fr.Outputs {
		paths = append(paths, o.Path)
	}
	if len(paths) == 0 {
		paths = append(paths, fr.Output)
	}
	return paths
}

// displayText is s with each byte that is not UTF-8 shown as \xNN, as
// batch.ReportPath shows paths.
func displayText(s string) string {
	d, _ := batch.ReportPath(s)
	return d
}

// logPaths returns paths for display and, when any is not valid UTF-8,
// each one's exact bytes in base64 ("" for the valid ones), else nil.
func logPaths(paths []string) (display, b64 []string) {
	some := false
	for _, p := range paths {
		d, b := batch.ReportPath(p)
		display, b64 = append(display, d), append(b64, b)
		some = some || b != ""
	}
	if !some {
		b64 = nil
	}
	return display, b64
}

// plural is n and word, with an s when n is not 1: "1 file", "2 files".
func plural(n int64, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// writtenPaths lists the paths of the files a conversion wrote, exactly
// (see written).
func writtenPaths(fr batch.FileResult) []string {
	if len(fr.Result.Variants) == 0 {
		return []string{fr.Output}
	}
	paths := map[string]string{}
	for _, o := range fr.Outputs {
		paths[o.Variant.Name] = o.Path
	}
	var out []string
	for _, v := range fr.Result.Variants {
		p := v.Path
		if tp, ok := paths[v.Name]; ok {
			p = tp
		}
		out = append(out, p)
	}
	return out
}

// written lists the files a conversion wrote with their sizes, and for
// a variant that asked for a source other than the raw, the one that
// made it: "out/a.jpg (6000x4000), out/a.thumb.webp (512x341, from the
// preview)". The paths are the task's, exactly (a worker sends its paths
// back as bytes too).
func written(fr batch.FileResult) string {
	if len(fr.Result.Variants) == 0 {
		return fmt.Sprintf("%s (%dx%d)", fr.Output, fr.Result.Width, fr.Result.Height)
	}
	paths := writtenPaths(fr)
	var parts []string
	for i, v := range fr.Result.Variants {
		from := ""
		if v.Source != "" {
			from = ", from the " + v.Source
		}
		parts = append(parts, fmt.Sprintf("%s (%dx%d%s)", paths[i], v.Width, v.Height, from))
	}
	return strings.Join(parts, ", ")
}

// clean makes a line safe for a terminal or a log: control characters in
// file names (escape sequences, newlines) are shown escaped, so every
// report stays one line and cannot drive the terminal (batch.CleanText).
func clean(s string) string { return batch.CleanText(s) }

// summary prints the counts, the peak concurrency and memory admitted, and
// every failure with its reason, on stderr.
func (r *reporter) summary(results []batch.FileResult, interrupted bool, sched *budget.Scheduler) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bar != nil {
		r.bar.Finish()
		r.bar.Clear()
		r.bar = nil
	}
	b := outcome(results, interrupted)
	el, conv := time.Since(r.begin), time.Since(r.t0) // wall time (planning, --min-age wait), converting
	tail := fmt.Sprintf(" in %.1fs (%.1f MP/s)", el.Seconds(), r.mpix/max(conv.Seconds(), 1e-3))
	if r.json {
		// One event with what the text lines below say.
		ev := summaryEvent(b, el, tail)
		ev.Interrupted = interrupted
		if sched != nil {
			if peak, n := sched.Stats(); n > 0 {
				ev.MaxAtOnce, ev.PeakBytes, ev.MemBudgetBytes = n, peak, sched.Budget()
			}
		}
		for _, fr := range results {
			if fr.Status == batch.StatusFailed {
				ev.FailedFiles = append(ev.FailedFiles, failedLineOf(fr))
			}
		}
		r.emit(false, ev, "")
		return
	}
	r.emitSummary(b, el, tail)
	if r.quiet && b.locked > 0 {
		r.emit(false, logEvent{}, fmt.Sprintf("locked: %s held by other runs, left to them (the report names them; a later run converts any they did not)", plural(int64(b.locked), "file")))
	}
	if sched != nil {
		if peak, n := sched.Stats(); n > 0 {
			r.emit(false, logEvent{}, fmt.Sprintf("at most %d at once, using %s of the %s memory budget", n, budget.FormatSize(peak), budget.FormatSize(sched.Budget())))
		}
	}
	if b.failed > 0 {
		r.emit(false, logEvent{}, "failed files:")
		for _, fr := range results {
			if fr.Status == batch.StatusFailed {
				r.emit(false, logEvent{}, fmt.Sprintf("  %v%s", fr.Err, hint(fr.Err)))
			}
		}
	}
	if b.kept > 0 {
		r.emit(false, logEvent{}, "kept files (edited since rawbatch wrote them; --edited keep):")
		for _, fr := range results {
			if fr.Status == batch.StatusKept {
				r.emit(false, logEvent{}, fmt.Sprintf("  %s -> %s", fr.Input, strings.Join(keptPaths(fr), ", ")))
			}
		}
	}
	if b.known > 0 {
		r.emit(false, logEvent{}, "known failures (same content and settings as when they failed; --known-failures skip):")
		for _, fr := range results {
			if fr.Status == batch.StatusKnownFailure {
				r.emit(false, logEvent{}, "  "+strings.TrimPrefix(fr.Reason, batch.ReasonKnownFailure))
			}
		}
	}
	if interrupted {
		r.emit(false, logEvent{}, fmt.Sprintf("interrupted: %s skipped (not started, or cancelled with no output left)", plural(int64(b.stopped), "file")))
	}
}

// failedLineOf is a failed file's line in the JSON summaries.
func failedLineOf(fr batch.FileResult) failedLine {
	fl := failedLine{Kind: batch.FailureKind(fr.Err), Message: displayText(fr.Err.Error()),
		Hint: strings.TrimPrefix(hint(fr.Err), "; hint: ")}
	fl.Input, fl.InputB64 = batch.ReportPath(fr.Input)
	return fl
}

// session prints the summary of a watch session that a signal ended:
// the files it converted and those that failed and were not converted
// since, each with its reason (also under -q). With --log-format json it
// is one event, session.
func (r *reporter) session(converted int, failed []batch.FileResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	line := fmt.Sprintf("watch stopped: this session converted %s; none failed", plural(int64(converted), "file"))
	if len(failed) > 0 {
		line = fmt.Sprintf("watch stopped: this session converted %s; %d failed (not converted since):", plural(int64(converted), "file"), len(failed))
	}
	nf := len(failed)
	ev := logEvent{Level: "info", Event: "session", Message: line, Converted: &converted, Failed: &nf}
	if r.json {
		for _, fr := range failed {
			ev.FailedFiles = append(ev.FailedFiles, failedLineOf(fr))
		}
		r.emit(false, ev, "")
		return
	}
	r.emit(false, ev, line)
	for _, fr := range failed {
		r.emit(false, logEvent{}, fmt.Sprintf("  %v%s", fr.Err, hint(fr.Err)))
	}
}

// emitSummary prints the counts of b, then tail: "N converted, N skipped,
// N failed, N locked" + tail, or the summary event of the JSON log.
func (r *reporter) emitSummary(b *batchOutcome, el time.Duration, tail string) {
	ev := summaryEvent(b, el, tail)
	r.emit(false, ev, ev.Message)
}

// summaryEvent is the summary's JSON event with its counts.
func summaryEvent(b *batchOutcome, el time.Duration, tail string) logEvent {
	var of []string
	if b.kept > 0 {
		of = append(of, fmt.Sprintf("%d kept as edited", b.kept))
	}
	if b.known > 0 {
		of = append(of, fmt.Sprintf("%d known to fail", b.known))
	}
	skipped := ""
	if len(of) > 0 {
		skipped = " (" + strings.Join(of, ", ") + ")"
	}
	line := fmt.Sprintf("%d converted, %d skipped%s, %d failed, %d locked%s", b.converted, b.skipped, skipped, b.failed, b.locked, tail)
	return logEvent{Level: "info", Event: "summary", Message: line, DurationMS: ms(el),
		Converted: &b.converted, Skipped: &b.skipped, Failed: &b.failed, Locked: &b.locked, Kept: b.kept, KnownFailures: b.known}
}

// summaryEmpty is the summary of a run that found nothing to convert
// and fails for it (--fail-if-empty).
func (r *reporter) summaryEmpty() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.emitSummary(&batchOutcome{}, time.Since(r.begin), ": nothing to convert (--fail-if-empty)")
}

// hint suggests what to do about a kind of failure.
func hint(err error) string {
	switch {
	case pipeline.IsNoPreview(err):
		// The file is readable; its embedded preview cannot make the
		// variant (pipeline.NoPreviewError).
		return "; hint: use source=auto (the raw data where the preview cannot make the variant) or source=raw"
	case errors.Is(err, rawerr.ErrUnsupported):
		return "; hint: a newer LibRaw may read it, see 'rawbatch version'"
	case errors.Is(err, budget.ErrOverBudget):
		return "" // the message already says what to do
	}
	return ""
}

// lensNote is the lens part of a converted file's text line: " [lens
// PROFILE]", or " [no lens profile for "NAME"]" naming the lens looked
// up, or the reason nothing was corrected; "" when the lens stage did not
// run (--lens off, or the file was not decoded in this run).
func lensNote(fr batch.FileResult) string {
	if s := fr.Result.Lens.Summary(); s != "" {
		return " [" + batch.ReportText(s) + "]"
	}
	return ""
}

// lensFields sets a converted file's lens correction on its JSON log
// event, as the report has it (lens).
func lensFields(ev *logEvent, fr batch.FileResult) {
	ev.Lens = fr.Result.Lens
}

// opcodeNote is the part of a converted file's text line that names the
// DNG opcodes not applied ("DNG opcodes not applied: MapPolynomial (list
// 3)"), "" when every opcode was applied or the file has none.
func opcodeNote(fr batch.FileResult) string {
	o := fr.Result.Opcodes
	if o == nil || len(o.NotApplied) == 0 {
		return ""
	}
	return "DNG opcodes not applied: " + strings.Join(o.NotApplied, ", ")
}

// lookFields sets a converted file's white balance and exposure on its JSON
// log event, as the report has them (white_balance, exposure_ev,
// exposure_source); nothing when the file was not decoded in this run.
func lookFields(ev *logEvent, fr batch.FileResult) {
	w := fr.Result.WhiteBalance
	if w == nil {
		return
	}
	ev.WhiteBalance = w
	x := fr.Result.Exposure.EV
	ev.ExposureEV, ev.ExposureSource = &x, batch.ReportText(fr.Result.Exposure.Source)
}

// lookNote is the short note a converted file's text line ends with:
// " (preset 6d-high-iso, WB preview, EV -0.98)", each part only when it
// says something the settings did not: the config preset whose settings
// it got, the white balance when it is neither as shot nor what
// --wb named (a fallback: fitted to the preview, auto), the exposure when
// it is not 0 at two decimals. "" when neither (docs/usage.md).
func lookNote(fr batch.FileResult) string {
	var parts []string
	if fr.Preset != "" {
		parts = append(parts, "preset "+fr.Preset)
	}
	if w := fr.Result.WhiteBalance; w != nil && w.Source != "as shot" && !strings.HasPrefix(string(w.Reason), "--wb ") {
		parts = append(parts, "WB "+w.Source)
	}
	if ev := fr.Result.Exposure.EV; fr.Result.WhiteBalance != nil && math.Abs(ev) >= 0.005 {
		parts = append(parts, fmt.Sprintf("EV %+.2f", ev))
	}
	if n := opcodeNote(fr); n != "" {
		parts = append(parts, n)
	}
	if fr.Result.HalfSizeTier {
		parts = append(parts, "half-size tier")
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
