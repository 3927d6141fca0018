package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cast"

	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/pipeline/batch"
)

// ConvertConfig is the resolved configuration of `rawbatch convert`, filled
// from viper (flag > RAWBATCH_* environment > config file > default). The
// pipeline only ever sees these plain values.
type ConvertConfig struct {
	Inputs []string
	OutDir string
	Jobs   int
	Quiet  bool
	// LogFormat is --log-format: logText or logJSON.
	LogFormat string
	// MemBudget is the memory budget in bytes (--mem-budget).
	MemBudget int64
	DryRun    bool
	// Timeout per file (0: scaled by size) and Grace after an interrupt.
	Timeout, Grace time.Duration
	// Re-run and overlap control (see batch.Runner).
	Force            bool
	LockWait, MinAge time.Duration
	Retries          int
	Report           string
	// The stage cache: directory, cap in bytes, keep entries after the run.
	CacheDir  string
	CacheSize int64
	KeepCache bool
	Settings  pipeline.Settings
	// Find chooses the input files (inputs.go).
	Find FindOptions
	// Resolved is every convert setting by flag name, for the report;
	// Warnings are the warnings about the settings (RAWBATCH_* typos).
	Resolved map[string]any
	Warnings []string

	// Overwrite: write over files rawbatch did not write (--overwrite);
	// NoRecreate: do not make again outputs the user deleted.
	Overwrite, NoRecreate bool
	// LockWaitOther bounds the wait for a run making other outputs of a
	// file: --lock-wait when given, else batch.DefaultLockWaitOther.
	LockWaitOther time.Duration
}

// convertConfig reads and validates the convert settings from v.
func convertConfig(v *settings, inputs []string) (ConvertConfig, error) {
	c := ConvertConfig{Inputs: inputs, Settings: pipeline.DefaultSettings()}
	if err := checkInputArgs(v, inputs); err != nil {
		return c, err
	}
	var err error
	if c.OutDir, err = pathSetting(v, "output"); err != nil {
		return c, err
	}
	if c.OutDir == "" {
		return c, fmt.Errorf("no output directory: give -o OUTDIR (or RAWBATCH_OUTPUT, or output: in the config file)")
	}
	s := &c.Settings
	if s.Demosaic, err = pipeline.ParseDemosaic(v.GetString("demosaic")); err != nil {
		return c, fmt.Errorf("--demosaic: %w", err)
	}
	if s.WhiteBalance, err = pipeline.ParseWhiteBalance(v.GetString("wb")); err != nil {
		return c, fmt.Errorf("--wb: %w", err)
	}
	if s.Tone, err = pipeline.ParseToneCurve(v.GetString("tone")); err != nil {
		return c, fmt.Errorf("--tone: %w", err)
	}
	if s.Format, err = pipeline.ParseFormat(v.GetString("format")); err != nil {
		return c, fmt.Errorf("--format: %w", err)
	}
	if s.Exposure, err = cast.ToFloat64E(v.Get("exposure")); err != nil {
		return c, fmt.Errorf("--exposure: %q is not a number of EV", v.GetString("exposure"))
	}
	if s.BaselineExposure, err = cast.ToBoolE(v.Get("baseline-exposure")); err != nil {
		return c, fmt.Errorf("--baseline-exposure: %q is not true or false", v.GetString("baseline-exposure"))
	}
	if s.Quality, err = wholeNumber(v, "quality"); err != nil {
		return c, err
	}
	if err := s.Validate(); err != nil {
		return c, err
	}
	if c.Jobs, err = wholeNumber(v, "jobs"); err != nil {
		return c, err
	}
	switch {
	case c.Jobs < 0:
		return c, fmt.Errorf("--jobs %d: want a positive number, or 0 for the number of CPUs", c.Jobs)
	case c.Jobs == 0:
		c.Jobs = runtime.NumCPU()
	}
	if c.Quiet, err = cast.ToBoolE(v.Get("quiet")); err != nil {
		return c, fmt.Errorf("--quiet: %q is not true or false", v.GetString("quiet"))
	}
	if c.LogFormat = v.GetString("log-format"); c.LogFormat != logText && c.LogFormat != logJSON {
		return c, fmt.Errorf("--log-format %q: want text or json", c.LogFormat)
	}
	if s.HalfSize, err = cast.ToBoolE(v.Get("half-size")); err != nil {
		return c, fmt.Errorf("--half-size: %q is not true or false", v.GetString("half-size"))
	}
	if c.DryRun, err = cast.ToBoolE(v.Get("dry-run")); err != nil {
		return c, fmt.Errorf("--dry-run: %q is not true or false", v.GetString("dry-run"))
	}
	if c.Timeout, err = duration(v, "timeout"); err != nil {
		return c, err
	}
	if c.Grace, err = duration(v, "grace"); err != nil {
		return c, err
	}
	if c.Force, err = cast.ToBoolE(v.Get("force")); err != nil {
		return c, fmt.Errorf("--force: %q is not true or false", v.GetString("force"))
	}
	if c.Overwrite, err = cast.ToBoolE(v.Get("overwrite")); err != nil {
		return c, fmt.Errorf("--overwrite: %q is not true or false", v.GetString("overwrite"))
	}
	if c.NoRecreate, err = cast.ToBoolE(v.Get("no-recreate")); err != nil {
		return c, fmt.Errorf("--no-recreate: %q is not true or false", v.GetString("no-recreate"))
	}
	if c.LockWait, err = duration(v, "lock-wait"); err != nil {
		return c, err
	}
	c.LockWaitOther = batch.DefaultLockWaitOther
	if sourceOf(v, "lock-wait") != unset {
		c.LockWaitOther = c.LockWait
	}
	if c.MinAge, err = duration(v, "min-age"); err != nil {
		return c, err
	}
	if c.Retries, err = wholeNumber(v, "retries"); err != nil {
		return c, err
	}
	if c.Retries < 0 {
		return c, fmt.Errorf("--retries %d: want 0 or more", c.Retries)
	}
	if c.Report, err = pathSetting(v, "report"); err != nil {
		return c, err
	}
	if s.Variants, err = variants(v, *s); err != nil {
		return c, err
	}
	if err := s.Validate(); err != nil {
		return c, err
	}
	if c.CacheDir, err = pathSetting(v, "cache-dir"); err != nil {
		return c, err
	}
	if c.KeepCache, err = cast.ToBoolE(v.Get("keep-cache")); err != nil {
		return c, fmt.Errorf("--keep-cache: %q is not true or false", v.GetString("keep-cache"))
	}
	if c.CacheDir != "" {
		fsSize, err := budget.FileSystemSize(c.CacheDir)
		if err != nil {
			return c, fmt.Errorf("--cache-dir %s: %w", c.CacheDir, err)
		}
		c.CacheSize = fsSize / 4
		if cs := v.GetString("cache-size"); cs != "" {
			if c.CacheSize, err = budget.ParseSize(cs, fsSize); err != nil {
				return c, fmt.Errorf("--cache-size: %w", err)
			}
		}
	}
	if c.MemBudget, err = memBudget(v.GetString("mem-budget")); err != nil {
		return c, fmt.Errorf("--mem-budget: %w", err)
	}
	if err := findConfig(v, &c); err != nil {
		return c, err
	}
	return c, nil
}

// A source is where a setting comes from, in increasing precedence.
type source int

const (
	unset source = iota
	fromFile
	fromEnv
	fromFlag
)

// sourceOf tells where v's value of key comes from: a flag given on the
// command line, a RAWBATCH_* environment variable (not empty, as viper
// reads them), the config file (even with an empty value), or nowhere.
func sourceOf(v *settings, key string) source {
	flag := v.flags.Lookup(key)
	switch {
	case flag != nil && flag.Changed:
		return fromFlag
	case os.Getenv(envName(key)) != "":
		return fromEnv
	case v.InConfig(key), flag == nil && slices.Contains(v.AllKeys(), key):
		return fromFile
	}
	return unset
}

// envName is the environment variable of key: RAWBATCH_MEM_BUDGET.
func envName(key string) string {
	return "RAWBATCH_" + strings.ToUpper(strings.ReplaceAll(key, "-", "_"))
}

// describe names a setting and where it comes from, for messages:
// "--preset web (command line)", "RAWBATCH_FORMAT=png16 (environment)",
// "variants (config file /etc/rawbatch.yaml)". val is left out when empty.
func describe(v *settings, key string, from source, val string) string {
	switch from {
	case fromFlag:
		return strings.TrimSpace("--"+key+" "+val) + " (command line)"
	case fromEnv:
		if val != "" {
			return envName(key) + "=" + val + " (environment)"
		}
		return envName(key) + " (environment)"
	}
	return strings.TrimSpace(key+" "+val) + " (config file " + v.ConfigFileUsed() + ")"
}

// variantExample shows a variants: list in a config file.
const variantExample = `
  variants:
    - main=jpeg
    - thumb=webp,size=512`

// variants resolves the output variants. --variant (RAWBATCH_VARIANT,
// variant:), the variants: list of the config file (RAWBATCH_VARIANTS,
// space separated) and --preset are one choice, taken from the
// highest-precedence source (flag > environment > config file) that gives
// any of them; two of them from that same source are an error. Without any
// there are none: one main variant from --format and --quality. --format
// is the same choice: from a higher-precedence source it wins (no
// variants), from a lower one they override it, from the same source it is
// an error. A --quality given in any source is the quality
// of every lossy variant that gives no quality= (presets included).
func variants(v *settings, s pipeline.Settings) ([]pipeline.Variant, error) {
	var keys []string // the keys of the choice from the best source
	best := unset
	for _, k := range []string{"variant", "variants", "preset"} {
		from := sourceOf(v, k)
		if k == "preset" && v.Get(k) == "" {
			from = unset // --preset "": none
		}
		if from == unset || from < best {
			continue
		}
		if from > best {
			best, keys = from, nil
		}
		keys = append(keys, k)
	}
	if best == unset {
		return nil, nil
	}
	// what names keys[i] from best, with its value for a preset.
	what := func(k string) string {
		if k == "preset" {
			return describe(v, k, best, v.GetString(k))
		}
		return describe(v, k, best, "")
	}
	if len(keys) > 1 {
		return nil, fmt.Errorf("%s and %s: choose one (a flag overrides the environment, which overrides the config file)", what(keys[0]), what(keys[1]))
	}
	key := keys[0]
	if from := sourceOf(v, "format"); from > best {
		return nil, nil // --format on the command line beats a preset: of the file
	} else if from == best {
		f := describe(v, "format", from, v.GetString("format"))
		if key == "preset" {
			return nil, fmt.Errorf("%s sets the single default output, and %s sets the formats of its variants: choose one", f, what(key))
		}
		return nil, fmt.Errorf("%s sets the single default output; with %s give the format in each variant (main=%s)", f, what(key), strings.ToLower(v.GetString("format")))
	}
	quality := 0
	if sourceOf(v, "quality") != unset {
		quality = s.Quality
	}
	if key == "preset" {
		p, ok := v.Get(key).(string)
		if !ok {
			return nil, fmt.Errorf("%s: %v is not a preset name: want %s", what(key), v.Get(key), pipeline.PresetNames)
		}
		vs, err := pipeline.Preset(p, quality)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what(key), err)
		}
		return vs, nil
	}
	specs, err := specList(v.Get(key))
	if err != nil {
		if best == fromFile {
			return nil, fmt.Errorf("config file %s: %s: %v; want a list of strings %s, one per variant, as in%s", v.ConfigFileUsed(), key, err, pipeline.VariantSyntax, variantExample)
		}
		return nil, fmt.Errorf("%s: %v; want %s, one per variant", what(key), err, pipeline.VariantSyntax)
	}
	var out []pipeline.Variant
	for _, sp := range specs {
		vv, err := pipeline.ParseVariantQuality(sp, quality)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what(key), err)
		}
		out = append(out, vv)
	}
	if err := pipeline.CheckVariants(out); err != nil {
		return nil, fmt.Errorf("%s: %w", what(key), err)
	}
	return out, nil
}

// specList reads a list of variant specs: a list of strings (a flag, a
// config file list) or one string (the environment, a config file string),
// split at white space.
func specList(raw any) ([]string, error) {
	var specs []string
	switch r := raw.(type) {
	case string:
		specs = strings.Fields(r)
	case []string:
		specs = r
	case []any:
		for i, e := range r {
			str, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("item %d is %s", i+1, kindOf(e))
			}
			specs = append(specs, str)
		}
	default:
		return nil, fmt.Errorf("the value is %s", kindOf(raw))
	}
	if len(specs) == 0 {
		return nil, errors.New("the list is empty")
	}
	return specs, nil
}

// kindOf describes a config value that is not a string, for messages.
func kindOf(x any) string {
	switch x := x.(type) {
	case nil:
		return "empty"
	case map[string]any:
		return fmt.Sprintf("a map (%v)", x)
	case []any:
		return fmt.Sprintf("a list (%v)", x)
	}
	return fmt.Sprintf("%T %v, not a string", x, x)
}

// duration reads key as a duration with a unit ("90s", "5m", "1h30m"). A
// bare number is refused rather than read as nanoseconds, as it would be
// from the environment or a config file.
func duration(v *settings, key string) (time.Duration, error) {
	raw := v.Get(key)
	if d, ok := raw.(time.Duration); ok { // from the flag
		if d < 0 {
			return 0, fmt.Errorf("--%s %s: want 0 or more", key, d)
		}
		return d, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(fmt.Sprint(raw)))
	if err != nil {
		return 0, fmt.Errorf("--%s: %v is not a duration with a unit, like 30s, 5m or 1h", key, raw)
	}
	if d < 0 {
		return 0, fmt.Errorf("--%s %v: want 0 or more", key, raw)
	}
	return d, nil
}

// wholeNumber reads key as an integer, refusing fractions ("85.5") and
// words rather than truncating them.
func wholeNumber(v *settings, key string) (int, error) {
	raw := v.Get(key)
	f, err := cast.ToFloat64E(raw)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<31 {
		return 0, fmt.Errorf("--%s: %v is not a whole number", key, raw)
	}
	return int(f), nil
}

// memBudget resolves --mem-budget: a size ("4GiB", "3500MB"), a
// percentage of the memory available to this process ("50%"), or "" for
// the default, 50% of the smaller of the cgroup limit and MemAvailable.
func memBudget(s string) (int64, error) {
	avail, err := budget.Available()
	if err != nil {
		return 0, err
	}
	if s == "" {
		return avail / 2, nil
	}
	if err := bareBytes(s); err != nil {
		return 0, err
	}
	return budget.ParseSize(s, avail)
}
