package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rawbatch/rawbatch/batch"
	"github.com/rawbatch/rawbatch/pipeline"
)

// resolvedSettings returns the convert settings as resolved by v (flag >
// environment > config file > default), by flag name, for the report:
// durations as strings ("10s"), lists of strings as lists, the rest as
// viper holds them, but variant and preset as the resolved settings s ran
// them (variantSettings). --config names the file read, if any.
func resolvedSettings(v *settings, cmd *cobra.Command, s pipeline.Settings) map[string]any {
	out := map[string]any{}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" || f.Name == "config" {
			return
		}
		switch x := v.Get(f.Name).(type) {
		case time.Duration:
			out[f.Name] = x.String()
		case []string:
			l := make([]string, 0, len(x))
			for _, e := range x {
				l = append(l, batch.ReportText(e))
			}
			out[f.Name] = l
		case []any:
			l := make([]string, 0, len(x))
			for _, e := range x {
				l = append(l, batch.ReportText(fmt.Sprint(e)))
			}
			out[f.Name] = l
		case nil:
			out[f.Name] = ""
		case string:
			// A path that is not UTF-8 is shown \xNN, with its exact
			// bytes in NAME_b64 (as the files' paths have path_b64).
			var b64 string
			out[f.Name], b64 = batch.ReportPath(x)
			if b64 != "" {
				out[f.Name+"_b64"] = b64
			}
		case bool, int, int64, float64:
			out[f.Name] = x
		default:
			out[f.Name] = v.GetString(f.Name)
		}
	})
	out["variant"], out["preset"] = variantSettings(v, s)
	out["jpeg-subsampling"] = jpegSubsamplingSetting(s)
	if used := v.ConfigFileUsed(); used != "" {
		if _, err := os.Stat(used); err == nil { // the default one may not exist
			var b64 string
			if out["config"], b64 = batch.ReportPath(used); b64 != "" {
				out["config_b64"] = b64
			}
		}
	}
	return out
}

// runReport is what the command adds to batch.BuildReport: versions,
// settings, times, the exit status and the run's own warnings.
type runReport struct {
	start    time.Time
	cfg      ConvertConfig
	warnings []string
	// written: the run wrote its report; refused: its path must not be
	// written (checkReport refused it).
	written, refused bool
	// unsettled is the number of files the run left because they are
	// still being written (watch looks at them again).
	unsettled int
	// results are the run's results, once it has run (watch counts
	// them for its session).
	results []batch.FileResult
}

// build makes the report of results with exit status code.
func (rr runReport) build(results []batch.FileResult, interrupted, dryRun bool, code int) batch.Report {
	return rr.buildFrom(batch.BuildReport(results), interrupted, dryRun, code)
}

// buildFrom completes rep, batch.BuildReport's (or BuildReportOf's), with
// the run's versions, settings, times, exit status code and warnings.
func (rr runReport) buildFrom(rep batch.Report, interrupted, dryRun bool, code int) batch.Report {
	rep.RawbatchVersion = Version()
	rep.LibRawVersion = pipeline.LibRawInfo().Version
	rep.DryRun = dryRun
	if rr.cfg.Resolved != nil {
		rep.Settings = rr.cfg.Resolved
	}
	rep.SettingsHash = batch.SettingsHash(rr.cfg.Settings)
	rep.MemBudgetBytes = rr.cfg.MemBudget
	rep.StartTime = rr.start.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	rep.DurationMS = time.Since(rr.start).Milliseconds()
	rep.ExitStatus = code
	rep.Interrupted = interrupted
	own := []batch.ReportWarning{}
	for _, w := range rr.warnings {
		own = append(own, batch.ReportWarning{Message: batch.ReportText(w)})
	}
	rep.Warnings = append(own, rep.Warnings...)
	return rep
}

// planResults turns a dry run's plan into the results a report is made of,
// Problems first: each planned file's batch.PlannedFile.Result (files is
// batch.Runner.DryPlan's of plan, one per task).
func planResults(plan *batch.Plan, files []batch.PlannedFile) []batch.FileResult {
	out := append([]batch.FileResult(nil), plan.Problems...)
	for _, f := range files {
		out = append(out, f.Result())
	}
	return out
}
