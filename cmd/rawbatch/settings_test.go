package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// loadSettings resolves each setting from the first source that gives it:
// flag > RAWBATCH_* environment > config file > default; each load is its
// own (two commands resolved one after the other share nothing).
func TestLoadSettingsOrder(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("quality: 70\nexposure: 0.5\ntone: none\ncache-dir: /from/file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RAWBATCH_CONFIG", cfg)
	t.Setenv("RAWBATCH_QUALITY", "75")
	t.Setenv("RAWBATCH_EXPOSURE", "1.5")
	t.Setenv("RAWBATCH_QUALTY", "1") // a typo, warned of

	var opts ConvertConfig
	decls := opts.settings()
	cmd := newConvertCmd()
	if err := cmd.ParseFlags([]string{"--quality", "80"}); err != nil {
		t.Fatal(err)
	}
	v, err := loadSettings(cmd, decls, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key, val string
		from     source
	}{
		{"quality", "80", fromFlag},
		{"exposure", "1.5", fromEnv},
		{"tone", "none", fromFile},
		{"cache-dir", "/from/file", fromFile},
		{"demosaic", cmd.Flag("demosaic").DefValue, unset},
	} {
		if got, from := v.GetString(c.key), sourceOf(v, c.key); got != c.val || from != c.from {
			t.Errorf("%s = %q from %d, want %q from %d", c.key, got, from, c.val, c.from)
		}
	}
	if v.configPath != cfg {
		t.Errorf("config file %q, want %q", v.configPath, cfg)
	}
	if !slices.ContainsFunc(v.warnings, func(w string) bool { return strings.Contains(w, "did you mean RAWBATCH_QUALITY?") }) {
		t.Errorf("warnings %q, want one about RAWBATCH_QUALTY", v.warnings)
	}

	// Another command, resolved afterwards: nothing of the first carries
	// over (no flag given here).
	other := newConvertCmd()
	w, err := loadSettings(other, decls, true)
	if err != nil {
		t.Fatal(err)
	}
	if got, from := w.GetString("quality"), sourceOf(w, "quality"); got != "75" || from != fromEnv {
		t.Errorf("second command: quality %q from %d, want 75 from the environment", got, from)
	}
	if sourceOf(v, "quality") != fromFlag {
		t.Errorf("first command's quality no longer from its flag")
	}

	// Only some keys (as cache reads cache-dir): the file's other keys
	// are not checked, and the environment is not warned of.
	var copts CacheOptions
	only, err := loadSettings(other, copts.settings(), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := only.GetString("cache-dir"); got != "/from/file" || len(only.warnings) != 0 {
		t.Errorf("cache-dir %q, warnings %q; want /from/file and none", got, only.warnings)
	}
}

// A config file key that is no flag is an error when all of a command's
// settings are loaded, and left alone when only some keys are.
func TestLoadSettingsUnknownKey(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("qualty: 70\ncache-dir: /c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RAWBATCH_CONFIG", cfg)
	var opts ConvertConfig
	var copts CacheOptions
	if _, err := loadSettings(newConvertCmd(), opts.settings(), true); err == nil {
		t.Error("unknown key qualty: no error")
	}
	if _, err := loadSettings(newConvertCmd(), copts.settings(), false); err != nil {
		t.Errorf("only cache-dir: %v", err)
	}
}
