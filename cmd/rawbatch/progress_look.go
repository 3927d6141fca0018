package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/rawbatch/rawbatch/batch"
)

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
// " (WB preview, EV -0.98)", each part only when it says something the
// settings did not: the white balance when it is neither as shot nor what
// --wb named (a fallback: fitted to the preview, auto), the exposure when
// it is not 0 at two decimals. "" when neither (docs/usage.md).
func lookNote(fr batch.FileResult) string {
	var parts []string
	if w := fr.Result.WhiteBalance; w != nil && w.Source != "as shot" && !strings.HasPrefix(string(w.Reason), "--wb ") {
		parts = append(parts, "WB "+w.Source)
	}
	if ev := fr.Result.Exposure.EV; fr.Result.WhiteBalance != nil && math.Abs(ev) >= 0.005 {
		parts = append(parts, fmt.Sprintf("EV %+.2f", ev))
	}
	if n := opcodeNote(fr); n != "" {
		parts = append(parts, n)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
