package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cast"

	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/pipeline"
)

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
// of every lossy variant that gives no quality= (presets included). v is
// the variant setting's value; s the settings resolved before it.
func variants(v value, s pipeline.Settings) ([]pipeline.Variant, error) {
	keys, best := variantKeys(v)
	if best == unset {
		return nil, nil
	}
	// what names keys[i] from best, with its value for a preset.
	what := func(k string) string {
		if k == "preset" {
			return describe(v.st, k, best, v.Other(k).String())
		}
		return describe(v.st, k, best, "")
	}
	if len(keys) > 1 {
		return nil, fmt.Errorf("%s and %s: choose one (a flag overrides the environment, which overrides the config file)", what(keys[0]), what(keys[1]))
	}
	key := keys[0]
	if from := v.Other("format").From(); from > best {
		return nil, nil // --format on the command line beats a preset: of the file
	} else if from == best {
		f := describe(v.st, "format", from, v.Other("format").String())
		if key == "preset" {
			return nil, fmt.Errorf("%s sets the single default output, and %s sets the formats of its variants: choose one", f, what(key))
		}
		return nil, fmt.Errorf("%s sets the single default output; with %s give the format in each variant (main=%s)", f, what(key), strings.ToLower(v.Other("format").String()))
	}
	quality := 0
	if v.Other("quality").From() != unset {
		quality = s.Quality
	}
	if key == "preset" {
		p, ok := v.Other(key).Raw().(string)
		if !ok {
			if _, err := specList(v.Other(key).Raw()); err == nil {
				return nil, fmt.Errorf("%s: %v is not a preset name: want one of %s, not a list", what(key), v.Other(key).Raw(), pipeline.PresetNames)
			}
			// Maps under preset: are most likely develop presets meant
			// for presets:.
			return nil, fmt.Errorf("%s: want one name of a set of output variants, %s; develop presets matched by camera, lens, ISO or name go under %s: (docs/usage.md, Presets)", what(key), pipeline.PresetNames, presetsKey)
		}
		vs, err := pipeline.PresetDefaults(p, pipeline.VariantDefaults{Quality: quality, Subsampling: s.JPEGSubsampling})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what(key), err)
		}
		return vs, nil
	}
	specs, err := specList(v.Other(key).Raw())
	if err != nil {
		if best == fromFile {
			return nil, fmt.Errorf("config file %s: %s: %v; want a list of strings %s, one per variant, as in%s", v.st.ConfigFileUsed(), key, err, pipeline.VariantSyntax, variantExample)
		}
		return nil, fmt.Errorf("%s: %v; want %s, one per variant", what(key), err, pipeline.VariantSyntax)
	}
	var out []pipeline.Variant
	for _, sp := range specs {
		vv, err := pipeline.ParseVariantDefaults(sp, pipeline.VariantDefaults{Quality: quality, Subsampling: s.JPEGSubsampling})
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

// variantKeys returns the keys of the variant choice (variant, variants,
// preset) set by the best source, and that source (unset: none); more than
// one key is an error of variants.
func variantKeys(v value) (keys []string, best source) {
	for _, k := range []string{"variant", "variants", "preset"} {
		from := v.Other(k).From()
		if k == "preset" && v.Other(k).Raw() == "" {
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
	return keys, best
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

// duration reads v as a duration with a unit ("90s", "5m", "1h30m"). A
// bare number is refused rather than read as nanoseconds, as it would be
// from the environment or a config file.
func duration(v value) (time.Duration, error) {
	key, raw := v.name, v.Raw()
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

// durationInto is the Apply of a duration setting: duration into dst.
func durationInto(dst *time.Duration) func(value) error {
	return func(v value) (err error) { *dst, err = duration(v); return err }
}

// wholeNumber reads v as an integer, refusing fractions ("85.5") and
// words rather than truncating them.
func wholeNumber(v value) (int, error) {
	raw := v.Raw()
	f, err := cast.ToFloat64E(raw)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<31 {
		return 0, fmt.Errorf("--%s: %v is not a whole number", v.name, raw)
	}
	return int(f), nil
}

// boolInto is the Apply of a true-or-false setting: the value into dst.
func boolInto(dst *bool) func(value) error {
	return func(v value) (err error) {
		if *dst, err = cast.ToBoolE(v.Raw()); err != nil {
			return fmt.Errorf("--%s: %q is not true or false", v.name, v.String())
		}
		return nil
	}
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
