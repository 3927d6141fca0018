package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/rawbatch/rawbatch/batch"
	"github.com/rawbatch/rawbatch/pipeline"
)

// presetsKey is the config file key of the presets: a list, in the
// config file only (no flag, no environment variable).
const presetsKey = "presets"

// presetExample shows a presets: list in a config file.
const presetExample = `
  presets:
    - name: 6d-high-iso
      match: {camera: Canon EOS 6D, iso: 3200-}
      settings: {denoise: 2, exposure: 0.3}`

// presetSettingNames are the settings a preset may give: the develop's
// (the choices of pipeline.Choices but --sidecar, which decides what is
// planned, and --jpeg-subsampling, which is the outputs'; white balance,
// tone, noise reduction, sharpening, lens, exposure, half size). The
// outputs (format, quality, variants, metadata) are the run's, the same
// for every file, so that each file has the same output names.
func presetSettingNames() []string {
	var names []string
	for _, ch := range pipeline.Choices {
		if ch.Name != "sidecar" && ch.Name != "jpeg-subsampling" {
			names = append(names, ch.Name)
		}
	}
	return append(names, "wb", "tone", "denoise", "capture-sharpen", "lens-model", "exposure", "baseline-exposure", "half-size")
}

// readPresets reads the config file's presets: (a list; none when the key
// is absent) and makes each preset's settings: base (the run's settings,
// resolved) with the preset's settings applied by the same parsing and
// checks as their flags. A setting given on the command line or in the
// environment overrides a preset's: the preset's is not applied, with a
// warning. Errors name the config file and the preset: not a list, an
// unknown key or setting, a bad value, a glob or ISO range that cannot be
// parsed, two presets that cannot be told apart (batch.CheckPresets).
func readPresets(st *settings, base pipeline.Settings) (presets []batch.Preset, warnings []string, err error) {
	raw := st.Get(presetsKey)
	if raw == nil {
		return nil, nil, nil
	}
	where := "config file " + st.ConfigFileUsed() + ": " + presetsKey
	list, ok := raw.([]any)
	if !ok {
		return nil, nil, fmt.Errorf("%s: %s; want a list of presets, each with a name, a match and settings, as in%s", where, kindOf(raw), presetExample)
	}
	for i, item := range list {
		p, warns, err := readPreset(st, base, item)
		if err != nil {
			name := fmt.Sprintf("preset %d", i+1)
			if p.Name != "" {
				name = fmt.Sprintf("preset %q", p.Name)
			}
			return nil, nil, fmt.Errorf("%s: %s: %w", where, name, err)
		}
		presets = append(presets, p)
		warnings = append(warnings, warns...)
	}
	if err := batch.CheckPresets(presets); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", where, err)
	}
	return presets, warnings, nil
}

// readPreset reads one item of presets: (its Name is set as soon as it is
// read, for the caller's messages).
func readPreset(st *settings, base pipeline.Settings, item any) (p batch.Preset, warnings []string, err error) {
	m, err := lowerMap(item, "name, match and settings")
	if err != nil {
		return p, nil, err
	}
	if n, ok := m["name"].(string); ok {
		p.Name = strings.TrimSpace(n)
	}
	for k := range m {
		if k != "name" && k != "match" && k != "settings" {
			return p, nil, fmt.Errorf("unknown key %q (want name, match and settings)", k)
		}
	}
	if p.Name == "" {
		return p, nil, fmt.Errorf("no name: give each preset a name: (the report names the preset applied to each file)")
	}
	if p.Match, err = readMatch(m["match"]); err != nil {
		return p, nil, fmt.Errorf("match: %w", err)
	}
	if m["settings"] == nil {
		return p, nil, fmt.Errorf("no settings: give the settings: the preset applies")
	}
	p.Settings, warnings, err = presetSettings(st, base, p.Name, m["settings"])
	if err != nil {
		return p, nil, fmt.Errorf("settings: %w", err)
	}
	return p, warnings, nil
}

// lowerMap returns x as a map with lower-case keys (a YAML mapping).
func lowerMap(x any, want string) (map[string]any, error) {
	out := map[string]any{}
	switch m := x.(type) {
	case map[string]any:
		for k, v := range m {
			out[strings.ToLower(k)] = v
		}
	case map[any]any:
		for k, v := range m {
			out[strings.ToLower(fmt.Sprint(k))] = v
		}
	default:
		return nil, fmt.Errorf("%s; want a map of %s", kindOf(x), want)
	}
	return out, nil
}

// readMatch reads a preset's match: camera, lens, iso and glob, each
// optional (none: every file).
func readMatch(x any) (batch.PresetMatch, error) {
	var pm batch.PresetMatch
	if x == nil {
		return pm, nil
	}
	m, err := lowerMap(x, "camera, lens, iso and glob")
	if err != nil {
		return pm, err
	}
	for k, v := range m {
		text := strings.TrimSpace(fmt.Sprint(v))
		if v == nil || text == "" {
			return pm, fmt.Errorf("%s is empty", k)
		}
		switch k {
		case "camera":
			pm.Camera = text
		case "lens":
			pm.Lens = text
		case "iso":
			if pm.ISOMin, pm.ISOMax, err = batch.ParseISORange(text); err != nil {
				return pm, err
			}
			pm.HasISO = true
		case "glob":
			if err := batch.CheckGlob(text); err != nil {
				return pm, err
			}
			pm.Glob = text
		default:
			return pm, fmt.Errorf("unknown key %q (want camera, lens, iso and glob)", k)
		}
	}
	return pm, nil
}

// presetSettings returns base with the preset's settings x (a map of
// setting names to values) applied, each by its flag's parsing
// (pictureSettings' Apply) in the order of the settings' declarations,
// then checked as a whole (Settings.Validate). A setting the command line
// or the environment gives keeps their value, with a warning.
func presetSettings(st *settings, base pipeline.Settings, name string, x any) (pipeline.Settings, []string, error) {
	m, err := lowerMap(x, "setting names (as the flags: denoise, exposure, wb, ...) to values")
	if err != nil {
		return base, nil, err
	}
	allowed := presetSettingNames()
	var keys []string
	for k := range m {
		if !slices.Contains(allowed, k) {
			sort.Strings(allowed)
			return base, nil, fmt.Errorf("%q is not a setting a preset can give (presets give the develop's settings: %s; the outputs are the run's)", k, strings.Join(allowed, ", "))
		}
		keys = append(keys, k)
	}
	vals := viper.New()
	for k, v := range m {
		vals.Set(k, v)
	}
	one := &settings{Viper: vals, flags: pflag.NewFlagSet(name, pflag.ContinueOnError)}
	c := ConvertConfig{Settings: base}
	var warnings []string
	for _, d := range c.pictureSettings() {
		if !slices.Contains(keys, d.Name) {
			continue
		}
		if from := sourceOf(st, d.Name); from == fromFlag || from == fromEnv {
			warnings = append(warnings, fmt.Sprintf("%s overrides preset %q's %s", describe(st, d.Name, from, st.GetString(d.Name)), name, d.Name))
			continue
		}
		if err := d.Apply(value{name: d.Name, st: one}); err != nil {
			// The flag's message, naming the setting as the config does.
			return base, nil, fmt.Errorf("%s", strings.Replace(err.Error(), "--"+d.Name, d.Name, 1))
		}
	}
	if err := c.Settings.Validate(); err != nil {
		return base, nil, err
	}
	return c.Settings, warnings, nil
}
