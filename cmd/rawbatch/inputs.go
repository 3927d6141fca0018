package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rawbatch/rawbatch/batch"
)

// FindOptions are the convert settings that choose the input files:
// --include, --exclude, --fail-if-empty, --files-from, --null, --base.
type FindOptions struct {
	// FilesFrom is a file listing input files ("-": standard input), one
	// a line, or NUL-separated with Null; their output paths follow their
	// paths relative to Base ("" for none: OUTDIR/BASENAME).
	FilesFrom string
	Null      bool
	Base      string
	// Name is the --name output naming template (nil: the default,
	// {stem}).
	Name *batch.NameTemplate
	// Include and Exclude are globs (batch.MatchGlob) on the walked
	// files' paths relative to their input root and base names.
	Include, Exclude []string
	// FailIfEmpty makes a run that finds no RAW file exit with status 3.
	FailIfEmpty bool
	// Rating filters by the XMP sidecar's rating and label (--min-rating,
	// --label, --skip-rejected).
	Rating batch.RatingFilter
}

// checkBase refuses --base and --null without --files-from (naming
// exactly the settings given, and where they were set; base is --base's
// value), and a --base that is not a directory. Their settings (ConvertConfig.settings)
// are applied before.
func (o FindOptions) checkBase(base value) error {
	if o.FilesFrom == "" && (o.Base != "" || o.Null) {
		var given []string
		if o.Base != "" {
			given = append(given, base.Describe(o.Base))
		}
		if o.Null {
			null := base.Other("null")
			val := null.String()
			if null.From() == fromFlag {
				val = ""
			}
			given = append(given, null.Describe(val))
		}
		verb := "goes"
		if len(given) > 1 {
			verb = "go"
		}
		return fmt.Errorf("%s %s with --files-from FILE only", strings.Join(given, " and "), verb)
	}
	if o.Base != "" {
		if fi, err := os.Stat(o.Base); err != nil {
			return fmt.Errorf("--base %s: %w", o.Base, err)
		} else if !fi.IsDir() {
			return fmt.Errorf("--base %s: not a directory", o.Base)
		}
	}
	return nil
}

// globList reads v as a list of globs: a list (flags, a config file
// list) or one string (the environment, a config file string) split at
// white space. Each must be a valid glob.
func globList(v value) ([]string, error) {
	key := v.name
	var out []string
	switch r := v.Raw().(type) {
	case nil:
	case string:
		out = strings.Fields(r)
	case []string:
		out = r
	case []any:
		for i, e := range r {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("--%s: item %d is %s", key, i+1, kindOf(e))
			}
			out = append(out, s)
		}
	default:
		return nil, fmt.Errorf("--%s: the value is %s", key, kindOf(r))
	}
	for _, g := range out {
		if err := batch.CheckGlob(g); err != nil {
			return nil, fmt.Errorf("--%s: %w", key, err)
		}
	}
	return out, nil
}

// planInputs plans the batch of cfg: the INPUT arguments walked with
// --include and --exclude, then the files listed by --files-from (read
// from stdin for "-"). ctx stops the walk (a signal): the plan then
// holds the files found so far.
func planInputs(ctx context.Context, stdin io.Reader, cfg ConvertConfig, suffixes []string) (*batch.Plan, error) {
	o := planOptions(cfg)
	o.Ctx = ctx // a signal stops the walk
	if cfg.Find.FilesFrom != "" {
		var err error
		if o.Files, err = readList(stdin, cfg.Find.FilesFrom, cfg.Find.Null); err != nil {
			return nil, err
		}
	}
	return batch.PlanBatchWith(o, cfg.Inputs, cfg.OutDir, suffixes...)
}

// planOptions are the batch.PlanOptions of cfg (without the listed
// files).
func planOptions(cfg ConvertConfig) batch.PlanOptions {
	return batch.PlanOptions{Include: cfg.Find.Include, Exclude: cfg.Find.Exclude, Base: cfg.Find.Base, Name: cfg.Find.Name,
		Rating: cfg.Find.Rating, NoSidecar: cfg.Settings.Sidecar == "off", Recorded: batch.RecordedOutputs(cfg.OutDir)}
}

// readList reads the --files-from list name ("-": stdin): paths separated
// by NUL bytes (null) or by newlines (a carriage return before one is
// dropped); empty entries are skipped. Names are kept as bytes.
func readList(stdin io.Reader, name string, null bool) ([]string, error) {
	var b []byte
	var err error
	if name == "-" {
		b, err = io.ReadAll(stdin)
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, fmt.Errorf("--files-from %s: %w", name, err)
	}
	sep := "\n"
	if null {
		sep = "\x00"
	} else if bytes.IndexByte(b, 0) >= 0 {
		return nil, fmt.Errorf("--files-from %s: the list has NUL bytes: add -0 (--null)", name)
	}
	var out []string
	for _, e := range strings.Split(string(b), sep) {
		if !null {
			e = strings.TrimSuffix(e, "\r")
		}
		if e != "" {
			out = append(out, e)
		}
	}
	return out, nil
}

// checkEmpty warns through rep when plan found no file at all (an empty
// folder, or a card that is not mounted: cron would otherwise look green),
// and with --fail-if-empty prints the summary and returns a failed outcome
// (exit status 3).
func checkEmpty(rep *reporter, cfg ConvertConfig, plan *batch.Plan) error {
	if len(plan.Tasks) > 0 || len(plan.Problems) > 0 {
		return nil
	}
	where := strings.Join(cfg.Inputs, ", ")
	if cfg.Find.FilesFrom != "" {
		where = strings.TrimPrefix(where+", the files listed in "+cfg.Find.FilesFrom, ", ")
	}
	switch {
	case len(plan.Filtered) > 0:
		rep.warn(fmt.Sprintf("all %s in %s were left out by --min-rating/--label/--skip-rejected", plural(int64(len(plan.Filtered)), "RAW file"), where))
	case plan.Excluded == 1:
		rep.warn(fmt.Sprintf("the 1 RAW file in %s was excluded by --include/--exclude", where))
	case plan.Excluded > 1:
		rep.warn(fmt.Sprintf("all %d RAW files in %s were excluded by --include/--exclude", plan.Excluded, where))
	case plan.SkippedListed > 0:
		rep.warn(fmt.Sprintf("no RAW files to convert in %s: only AppleDouble files (macOS metadata) were listed, %s, skipped", where,
			plural(int64(plan.SkippedListed), "file")))
	case plan.SkippedOutDir:
		rep.warn(fmt.Sprintf("no RAW files found in %s outside the output directory %s, which lies inside it and is never walked", where, cfg.OutDir))
	case plan.ExcludedDirs > 0:
		rep.warn(fmt.Sprintf("no RAW files found in %s outside the %s excluded by --exclude", where, plural(int64(plan.ExcludedDirs), "folder")))
	case plan.Others > 0:
		rep.warn(fmt.Sprintf("no RAW files found in %s: %s, none with a RAW extension (%s); a file named on the command line is tried whatever its extension",
			where, plural(int64(plan.Others), "other file"), strings.Join(plan.OtherExts, " ")))
	case plan.LinkedDirs > 0:
		links := "the symbolic link to a folder in it, which is not followed"
		if plan.LinkedDirs > 1 {
			links = fmt.Sprintf("the %d symbolic links to folders in it, which are not followed", plan.LinkedDirs)
		}
		rep.warn(fmt.Sprintf("no RAW files found in %s outside %s (name a folder on the command line to convert it)", where, links))
	default:
		rep.warn(fmt.Sprintf("no RAW files found in %s (an empty folder, or a card or share that is not mounted?)", where))
	}
	if cfg.Find.FailIfEmpty {
		rep.summaryEmpty()
		return &batchOutcome{failed: 1}
	}
	return nil
}

// unsettled counts the results left because their files are still being
// written.
func unsettled(results []batch.FileResult) int {
	n := 0
	for _, fr := range results {
		if isUnsettled(fr) {
			n++
		}
	}
	return n
}

func isUnsettled(fr batch.FileResult) bool {
	return fr.Status == batch.StatusSkipped && strings.HasPrefix(fr.Reason, "still being written")
}

// settleHint is the summary's line on the files of results left because
// they are still being written, with the rules that found them so
// (batch.FileResult.Unsettled: modified within --min-age, found truncated
// and modified within the last minute, changed during the run, ...) and
// what to do (watch looks at them again by itself); "" when there are
// none.
func settleHint(results []batch.FileResult, watching bool) string {
	var rules []string
	count := map[string]int{}
	n := 0
	for _, fr := range results {
		if !isUnsettled(fr) {
			continue
		}
		n++
		rule := fr.Unsettled
		if rule == "" {
			rule = "changed during the run"
		}
		if count[rule] == 0 {
			rules = append(rules, rule)
		}
		count[rule]++
	}
	if n == 0 {
		return ""
	}
	files := "files are"
	if n == 1 {
		files = "file is"
	}
	why := rules
	if len(rules) > 1 {
		why = make([]string, len(rules))
		for i, r := range rules {
			why[i] = fmt.Sprintf("%d %s", count[r], r)
		}
	}
	then := "run rawbatch again once the copy has finished"
	if watching {
		then = "watch looks at them again"
	}
	return fmt.Sprintf("%d %s still being written (%s) and left for a later run: %s", n, files, strings.Join(why, "; "), then)
}
