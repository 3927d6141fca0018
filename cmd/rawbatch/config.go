package main

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cast"
	"github.com/spf13/viper"

	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/pipeline"
)

// ConvertConfig is the resolved configuration of `rawbatch convert`, filled
// from viper (flag > RAWBATCH_* environment > config file > default). The
// pipeline only ever sees these plain values.
type ConvertConfig struct {
	Inputs []string
	OutDir string
	Jobs   int
	Quiet  bool
	// MemBudget is the memory budget in bytes (--mem-budget).
	MemBudget int64
	DryRun    bool
	// Timeout per file (0: scaled by size) and Grace after an interrupt.
	Timeout, Grace time.Duration
	// Re-run and overlap control (see pipeline.Runner).
	Force            bool
	LockWait, MinAge time.Duration
	Retries          int
	Report           string
	// The stage cache: directory, cap in bytes, keep entries after the run.
	CacheDir  string
	CacheSize int64
	KeepCache bool
	Settings  pipeline.Settings
}

// convertConfig reads and validates the convert settings from v.
func convertConfig(v *viper.Viper, inputs []string) (ConvertConfig, error) {
	c := ConvertConfig{Inputs: inputs, Settings: pipeline.DefaultSettings()}
	c.OutDir = v.GetString("output")
	if c.OutDir == "" {
		return c, fmt.Errorf("no output directory: give -o OUTDIR (or RAWBATCH_OUTPUT, or output: in the config file)")
	}
	var err error
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
	if c.LockWait, err = duration(v, "lock-wait"); err != nil {
		return c, err
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
	c.Report = v.GetString("report")
	if s.Variants, err = variants(v); err != nil {
		return c, err
	}
	if err := s.Validate(); err != nil {
		return c, err
	}
	c.CacheDir = v.GetString("cache-dir")
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
	return c, nil
}

// variants resolves the output variants: --variant flags, else the
// variants: list of the config file (or RAWBATCH_VARIANTS, space
// separated), else --preset, else none (the main variant from --format and
// --quality).
func variants(v *viper.Viper) ([]pipeline.Variant, error) {
	specs := v.GetStringSlice("variant")
	if len(specs) == 0 {
		specs = v.GetStringSlice("variants")
	}
	var out []pipeline.Variant
	for _, sp := range specs {
		vv, err := pipeline.ParseVariant(sp)
		if err != nil {
			return nil, fmt.Errorf("--variant: %w", err)
		}
		out = append(out, vv)
	}
	if p := v.GetString("preset"); p != "" {
		if len(out) > 0 {
			return nil, fmt.Errorf("--preset %s and --variant: choose one", p)
		}
		vs, ok := pipeline.Presets[p]
		if !ok {
			return nil, fmt.Errorf("--preset %q: want web, print or archive", p)
		}
		out = append(out, vs...)
	}
	if err := pipeline.CheckVariants(out); len(out) > 0 && err != nil {
		return nil, err
	}
	return out, nil
}

// duration reads key as a duration with a unit ("90s", "5m", "1h30m"). A
// bare number is refused rather than read as nanoseconds, as it would be
// from the environment or a config file.
func duration(v *viper.Viper, key string) (time.Duration, error) {
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
func wholeNumber(v *viper.Viper, key string) (int, error) {
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
	return budget.ParseSize(s, avail)
}
