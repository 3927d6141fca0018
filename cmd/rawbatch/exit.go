package main

import (
	"errors"

	"github.com/rawbatch/rawbatch/batch"
)

// Exit statuses of rawbatch (documented in `rawbatch --help` and
// docs/usage.md).
const (
	ExitOK          = 0   // every file converted
	ExitUsage       = 1   // the run could not start
	ExitFailures    = 3   // one or more files failed, the rest converted
	ExitInterrupted = 130 // SIGINT or SIGTERM
)

const exitHelp = `Exit status:
  0    every file converted, up to date, or left to another run that holds its lock
  1    the run could not start (bad flags or config, missing input, unwritable OUTDIR)
  3    one or more files failed (even if all did); the others were converted;
       with --fail-if-empty: no RAW file found, or none converted and some
       still being written
  130  interrupted by SIGINT, SIGTERM or SIGHUP`

// batchOutcome is returned by convert when the batch ran; it carries the
// counts that decide the exit status.
type batchOutcome struct {
	converted, failed, skipped, locked int
	// kept counts the skipped files whose edited outputs were kept
	// (--edited keep); known counts the skipped files that are known failures
	// (--known-failures skip).
	kept, known int
	// stopped counts the skipped files the interrupt left unconverted
	// (not started, or cancelled in flight).
	stopped     int
	interrupted bool
	// unsettledEmpty: with --fail-if-empty, nothing was converted and
	// files were left as still being written (exit status 3).
	unsettledEmpty bool
}

func (b *batchOutcome) Error() string {
	switch {
	case b.interrupted:
		return "interrupted"
	case b.failed > 0:
		return "some files failed"
	case b.unsettledEmpty:
		return "nothing converted, files still being written"
	}
	return "ok"
}

// exitCode maps the result of a command to the process exit status. It is
// the one place where outcomes become exit codes.
func exitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var b *batchOutcome
	if errors.As(err, &b) {
		switch {
		case b.interrupted:
			return ExitInterrupted
		case b.failed > 0, b.unsettledEmpty:
			return ExitFailures
		}
		return ExitOK
	}
	return ExitUsage
}

// outcome counts results.
func outcome(results []batch.FileResult, interrupted bool) *batchOutcome {
	b := &batchOutcome{interrupted: interrupted}
	for _, r := range results {
		switch r.Status {
		case batch.StatusConverted:
			b.converted++
		case batch.StatusFailed:
			b.failed++
		case batch.StatusLocked:
			b.locked++
		case batch.StatusKept:
			b.kept++
			b.skipped++
		case batch.StatusKnownFailure:
			b.known++
			b.skipped++
		default:
			b.skipped++
			if r.Reason == batch.ReasonNotStarted || r.Reason == batch.ReasonCancelled {
				b.stopped++
			}
		}
	}
	return b
}
