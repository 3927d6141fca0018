package main

import (
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/batch"
	"github.com/rawbatch/rawbatch/pipeline"
)

func TestCleanEscapesControlCharacters(t *testing.T) {
	for in, want := range map[string]string{
		"plain/path.dng: ok":       "plain/path.dng: ok",
		"evil\x1b[2J.dng":          `evil\x1b[2J.dng`,
		"two\nlines.dng":           `two\nlines.dng`,
		"Grüße/写真.dng":             "Grüße/写真.dng",
		"bad\xffutf8.dng":          `bad\xffutf8.dng`,
		"tab\there.dng and \u009b": `tab\there.dng and \u009b`,
	} {
		if got := clean(in); got != want {
			t.Errorf("clean(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestBarWidth: the progress bar never wraps a narrow terminal (each
// update would add a line) and is not drawn on TERM=dumb.
func TestBarWidth(t *testing.T) {
	for _, c := range []struct {
		cols int
		term string
		want int
		ok   bool
	}{
		{200, "xterm-256color", 30, true},
		{80, "xterm", 27, true},
		{70, "xterm", 17, true},
		{60, "xterm", 0, false},
		{20, "xterm", 0, false},
		{0, "xterm", 0, false}, // size unknown
		{200, "dumb", 0, false},
	} {
		w, ok := barWidth(c.cols, c.term)
		if w != c.want || ok != c.ok {
			t.Errorf("barWidth(%d, %q) = %d, %v; want %d, %v", c.cols, c.term, w, ok, c.want, c.ok)
		}
		if ok && w+barText+1 > c.cols {
			t.Errorf("barWidth(%d, %q) = %d: the line is %d columns", c.cols, c.term, w, w+barText+1)
		}
	}
}

// TestRateCountsDecodedMegapixels: MP/s counts the megapixels LibRaw
// decoded (the raw image), not those of the outputs, the same for a file
// served from the stage cache, and nothing for a file that was not
// converted (a skip, a failure before its decode).
func TestRateCountsDecodedMegapixels(t *testing.T) {
	r := newReporter(io.Discard, io.Discard, true, logText, 3)
	fr := batch.FileResult{Status: batch.StatusConverted, Decoded: true}
	fr.Info.RawWidth, fr.Info.RawHeight, fr.Info.Width, fr.Info.Height = 6048, 4024, 6000, 4000
	fr.Result.Width, fr.Result.Height = 512, 341 // a thumbnail
	r.done(fr)
	cached := fr
	cached.Decoded, cached.Result.FromCache = false, true
	r.done(cached)
	r.done(batch.FileResult{Status: batch.StatusSkipped, Reason: "up to date"})
	failed := fr
	failed.Status, failed.Decoded = batch.StatusFailed, false
	r.done(failed)
	if want := 2 * 6048 * 4024 / 1e6; math.Abs(r.mpix-want) > 1e-9 {
		t.Errorf("counted %.3f MP, want %.3f", r.mpix, want)
	}
}

// TestNoNestedParentheses: a file's line never has parentheses inside
// parentheses, nor two groups in a row, whatever its reason says.
func TestNoNestedParentheses(t *testing.T) {
	var out, errw strings.Builder
	r := newReporter(&out, &errw, false, logText, 3)
	r.done(batch.FileResult{Task: batch.Task{Input: "in/new.dng"}, Status: batch.StatusSkipped,
		Reason: "still being written (modified 0.1 s ago; --min-age 2s)"})
	r.done(batch.FileResult{Task: batch.Task{Input: "in/a.dng", Output: "out/a.jpg"}, Status: batch.StatusConverted,
		Result: pipeline.Result{Width: 200, Height: 100}, Duration: 1500 * time.Millisecond})
	r.done(batch.FileResult{Task: batch.Task{Input: "in/b.dng"}, Status: batch.StatusSkipped, Reason: "up to date"})
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		depth, lastClose := 0, -1
		for i, c := range line {
			switch c {
			case '(':
				if depth++; depth > 1 {
					t.Errorf("nested parentheses: %s", line)
				}
				if lastClose >= 0 && strings.TrimSpace(line[lastClose+1:i]) == "" {
					t.Errorf("two groups of parentheses in a row: %s", line)
				}
			case ')':
				depth--
				lastClose = i
			}
		}
	}
	if !strings.Contains(out.String(), "skipped in/b.dng (up to date)") || !strings.Contains(out.String(), "converted in/a.dng -> out/a.jpg (200x100) in 1.5s") {
		t.Errorf("unexpected lines:\n%s", out.String())
	}
}
