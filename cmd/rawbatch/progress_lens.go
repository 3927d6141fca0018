package main

import (
	"github.com/rawbatch/rawbatch/batch"
)

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
