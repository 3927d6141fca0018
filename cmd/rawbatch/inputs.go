package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cast"
	"github.com/spf13/pflag"

	"github.com/rawbatch/rawbatch/pipeline/batch"
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
}

// addFindFlags adds the flags of FindOptions to convert's flags.
func addFindFlags(f *pflag.FlagSet) {
	f.StringArray("include", nil, "take only walked files whose relative path matches this glob at any depth (*, ?, [a-z], ** for any folders; a leading / anchors it to the input root; case-insensitive); repeatable")
	f.StringArray("exclude", nil, "skip walked files and folders whose relative path matches this glob at any depth (a leading / anchors it); repeatable")
	f.Bool("fail-if-empty", false, "exit with status 3 when no RAW file is found (an empty or unmounted input)")
	f.String("files-from", "", "also convert the files listed in this file, one a line ('-': standard input); with --base, their folders are mirrored under OUTDIR")
	f.BoolP("null", "0", false, "--files-from's list is NUL-separated (find -print0)")
	f.String("name", batch.DefaultNameTemplate, "output name template: {stem}, {ext}, {dir}, {variant}, {date:2006-01-02} (capture date, Go layout), {camera}, {seq}; a / makes folders under OUTDIR ({date:2006/01}/{stem})")
	f.String("base", "", "with --files-from: the folder the listed files' output paths are relative to (a listed file outside it fails)")
}

// findConfig reads FindOptions from v into c.
func findConfig(v *settings, c *ConvertConfig) error {
	var err error
	if c.Find.Include, err = globList(v, "include"); err != nil {
		return err
	}
	if c.Find.Exclude, err = globList(v, "exclude"); err != nil {
		return err
	}
	if c.Find.FailIfEmpty, err = cast.ToBoolE(v.Get("fail-if-empty")); err != nil {
		return fmt.Errorf("--fail-if-empty: %q is not true or false", v.GetString("fail-if-empty"))
	}
	if c.Find.Null, err = cast.ToBoolE(v.Get("null")); err != nil {
		return fmt.Errorf("--null: %q is not true or false", v.GetString("null"))
	}
	if name := v.GetString("name"); name != batch.DefaultNameTemplate {
		if c.Find.Name, err = batch.ParseNameTemplate(name); err != nil {
			return fmt.Errorf("--name: %w", err)
		}
	}
	// Paths, expanded as output's are ("-" is standard input).
	if c.Find.FilesFrom = v.GetString("files-from"); c.Find.FilesFrom != "-" {
		if c.Find.FilesFrom, err = pathSetting(v, "files-from"); err != nil {
			return err
		}
	}
	if c.Find.Base, err = pathSetting(v, "base"); err != nil {
		return err
	}
	if c.Find.FilesFrom == "" && (c.Find.Base != "" || c.Find.Null) {
		// Name exactly the settings given, and where they were set.
		var given []string
		if c.Find.Base != "" {
			given = append(given, describe(v, "base", sourceOf(v, "base"), c.Find.Base))
		}
		if c.Find.Null {
			from, val := sourceOf(v, "null"), v.GetString("null")
			if from == fromFlag {
				val = ""
			}
			given = append(given, describe(v, "null", from, val))
		}
		verb := "goes"
		if len(given) > 1 {
			verb = "go"
		}
		return fmt.Errorf("%s %s with --files-from FILE only", strings.Join(given, " and "), verb)
	}
	if c.Find.Base != "" {
		if fi, err := os.Stat(c.Find.Base); err != nil {
			return fmt.Errorf("--base %s: %w", c.Find.Base, err)
		} else if !fi.IsDir() {
			return fmt.Errorf("--base %s: not a directory", c.Find.Base)
		}
	}
	return nil
}

// checkInputArgs refuses a convert without INPUT arguments.
func checkInputArgs(v *settings, inputs []string) error {
	if len(inputs) == 0 && v.GetString("files-from") == "" {
		return fmt.Errorf("requires at least 1 arg: the INPUT folders or files to convert (or --files-from FILE)")
	}
	return nil
}

// globList reads key as a list of globs: a list (flags, a config file
// list) or one string (the environment, a config file string) split at
// white space. Each must be a valid glob.
func globList(v *settings, key string) ([]string, error) {
	var out []string
	switch r := v.Get(key).(type) {
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
// from stdin for "-").
func planInputs(stdin io.Reader, cfg ConvertConfig, suffixes []string) (*batch.Plan, error) {
	o := planOptions(cfg)
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
		Recorded: batch.RecordedOutputs(cfg.OutDir)}
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
	case plan.Excluded == 1:
		rep.warn(fmt.Sprintf("the 1 RAW file in %s was excluded by --include/--exclude", where))
	case plan.Excluded > 1:
		rep.warn(fmt.Sprintf("all %d RAW files in %s were excluded by --include/--exclude", plan.Excluded, where))
	case plan.ExcludedDirs > 0:
		rep.warn(fmt.Sprintf("no RAW files found in %s outside the %s excluded by --exclude", where, plural(int64(plan.ExcludedDirs), "folder")))
	default:
		rep.warn(fmt.Sprintf("no RAW files found in %s (an empty folder, or a card or share that is not mounted?)", where))
	}
	if cfg.Find.FailIfEmpty {
		rep.summaryEmpty()
		return &batchOutcome{failed: 1}
	}
	return nil
}

// settleHint is the summary's line on files left because they are still
// being written (they kept changing while the run waited out --min-age),
// with what to do; "" when there are none.
func settleHint(results []batch.FileResult, minAge time.Duration) string {
	n := 0
	for _, fr := range results {
		if fr.Status == batch.StatusSkipped && strings.HasPrefix(fr.Reason, "still being written") {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	files := "files are"
	if n == 1 {
		files = "file is"
	}
	return fmt.Sprintf("%d %s still being written (changed within --min-age %s, or during the run) and left for a later run: run rawbatch again once the copy has finished", n, files, minAge)
}
