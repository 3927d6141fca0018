package main

import (
	"os"
	"path/filepath"

	"github.com/rawbatch/rawbatch/batch"
)

// inspectPath is a file for inspect to read, or (rec.Error set) a path it
// could not get a file from.
type inspectPath struct{ rec inspectRecord }

// noOutDir is the output directory given to batch.PlanBatch when
// inspect walks a directory: inspect writes nothing, and a path that does
// not exist keeps the walk from skipping any folder as convert's OUTDIR.
var noOutDir = filepath.Join(os.TempDir(), ".rawbatch-inspect-writes-nothing", "none")

// inspectPaths expands args as convert does: a directory is walked
// (recursively, lexical order, RAW extensions only, the same file once);
// a file is taken as given. A directory without RAW files and a directory
// that cannot be read give an error record each.
func inspectPaths(args []string) []inspectPath {
	var out []inspectPath
	for _, a := range args {
		if fi, err := os.Stat(a); err != nil || !fi.IsDir() {
			out = append(out, inspectPath{inspectRecord{Path: a}})
			continue
		}
		plan, err := batch.PlanBatch([]string{a}, noOutDir, ".jpg")
		if err != nil {
			out = append(out, inspectPath{inspectRecord{Path: a, Error: err.Error()}})
			continue
		}
		for _, p := range plan.Problems {
			out = append(out, inspectPath{inspectRecord{Path: p.Input, Error: p.Err.Error()}})
		}
		for _, t := range plan.Tasks {
			out = append(out, inspectPath{inspectRecord{Path: t.Input}})
		}
		if len(plan.Tasks)+len(plan.Problems) == 0 {
			out = append(out, inspectPath{inspectRecord{Path: a, Error: a + ": a directory with no RAW files in it"}})
		}
	}
	return out
}
