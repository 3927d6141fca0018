package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/rawbatch/rawbatch/batch"
)

// printStagePlans prints, after a dry run's table, each distinct stage
// plan of its files once (batch.StagePlans), numbered, with how many files
// would run it: "stage plan N (M files): " and the plan's text
// (pipeline.StagePlan.String: decoded size, variants in order, one line
// per step with its size and whose step it is). Variant names are the
// user's, escaped as file names are (clean).
func printStagePlans(w io.Writer, files []batch.PlannedFile) {
	groups, _ := batch.StagePlans(files)
	for i, g := range groups {
		fmt.Fprintf(w, "stage plan %d (%s): ", i+1, plural(int64(g.Files), "file"))
		for _, line := range strings.Split(strings.TrimSuffix(g.Plan.String(), "\n"), "\n") {
			fmt.Fprintln(w, clean(line))
		}
	}
}

// addStagePlans adds the distinct stage plans of a dry run's files to its
// report (batch.AddStagePlans); results are what the report's files were
// built from, in order.
func addStagePlans(rep *batch.Report, results []batch.FileResult, files []batch.PlannedFile) {
	groups, numbers := batch.StagePlans(files)
	inputs := make([]string, len(results))
	for i, r := range results {
		inputs[i] = r.Input
	}
	batch.AddStagePlans(rep, inputs, files, groups, numbers)
}
