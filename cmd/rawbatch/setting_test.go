package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// commandSettings are the commands with settings, each with its
// declarations and a fresh command whose flags were made from them.
func commandSettings() []struct {
	name  string
	decls []setting
	cmd   func() *cobra.Command
} {
	var c ConvertConfig
	var k CacheOptions
	var (
		b  BrokerOptions
		sb SubmitOptions
		w  WorkOptions
		st StatusOptions
		d  DeadOptions
		wa WatchOptions
	)
	sub := func(parent func() *cobra.Command, name string) func() *cobra.Command {
		return func() *cobra.Command {
			for _, c := range parent().Commands() {
				if c.Name() == name {
					return c
				}
			}
			panic("no subcommand " + name)
		}
	}
	return []struct {
		name  string
		decls []setting
		cmd   func() *cobra.Command
	}{
		{"convert", c.settings(), newConvertCmd},
		{"cache stats", k.settings(), func() *cobra.Command {
			for _, sub := range newCacheCmd().Commands() {
				if sub.Name() == "stats" {
					return sub
				}
			}
			panic("no cache stats")
		}},
		{"watch", wa.settings(), newWatchCmd},
		{"broker", b.settings(), newBrokerCmd},
		{"submit", sb.settings(), newSubmitCmd},
		{"work", w.settings(), newWorkCmd},
		{"status", st.settings(), newStatusCmd},
		{"dead list", d.settings(), sub(newDeadCmd, "list")},
		{"dead retry", append(d.settings(), d.allSetting()), sub(newDeadCmd, "retry")},
	}
}

// ruleEnv is the environment variable of a setting by the documented rule,
// written out here apart from envName: RAWBATCH_ and the name upper-cased,
// each dash an underscore.
func ruleEnv(name string) string {
	var b strings.Builder
	b.WriteString("RAWBATCH_")
	for _, r := range name {
		switch {
		case r == '-':
			b.WriteByte('_')
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// sample is a value of a setting's type given as a flag, and the string
// the resolution gives for it.
func sample(def any) string {
	switch def.(type) {
	case bool:
		return "true"
	case int:
		return "7"
	case float64:
		return "1.5"
	case time.Duration:
		return "3m0s"
	}
	return "x"
}

// Every declared setting has a flag (--NAME, -SHORT, with its default and
// help), a config file key NAME and an environment variable by the one
// rule, and each of them sets it, with flag > environment > config file;
// every flag of the command (but --help and --config) is a declared
// setting.
func TestSettingsDerived(t *testing.T) {
	for _, cs := range commandSettings() {
		declared := map[string]bool{}
		for _, d := range cs.decls {
			declared[d.Name] = true
			if d.Apply == nil || d.Help == "" {
				t.Errorf("%s: setting %s has no Apply or no help", cs.name, d.Name)
			}
			f := cs.cmd().Flag(d.Name)
			if f == nil {
				t.Errorf("%s: setting %s has no flag --%s", cs.name, d.Name, d.Name)
				continue
			}
			if f.Shorthand != d.Short || f.Usage != d.Help {
				t.Errorf("%s --%s: short %q, help %q; declared %q, %q", cs.name, d.Name, f.Shorthand, f.Usage, d.Short, d.Help)
			}
			if want := defValue(d.Default); f.DefValue != want {
				t.Errorf("%s --%s: default %q, declared %q", cs.name, d.Name, f.DefValue, want)
			}
			if envName(d.Name) != ruleEnv(d.Name) {
				t.Errorf("%s: %s's variable is %s, the rule makes %s", cs.name, d.Name, envName(d.Name), ruleEnv(d.Name))
			}
			for _, key := range append([]string{d.Name}, d.Keys...) {
				checkSources(t, cs.name, cs.cmd, cs.decls, d, key)
			}
		}
		cs.cmd().Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" && f.Name != "config" && !declared[f.Name] {
				t.Errorf("%s: flag --%s is not a declared setting", cs.name, f.Name)
			}
		})
	}
}

// checkSources resolves key of d from the config file, then the
// environment too, then a flag too, and checks each time that the value
// and its source are those of the best one.
func checkSources(t *testing.T, name string, newCmd func() *cobra.Command, decls []setting, d setting, key string) {
	t.Helper()
	for _, e := range os.Environ() { // the tests' environment sets RAWBATCH_MIN_AGE
		if n, _, _ := strings.Cut(e, "="); strings.HasPrefix(n, "RAWBATCH_") {
			t.Setenv(n, "")
		}
	}
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "%q: from-file\n", key), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RAWBATCH_CONFIG", cfg)
	steps := []struct {
		env, flag string
		want      string
		from      source
	}{
		{want: "from-file", from: fromFile},
		{env: "from-env", want: "from-env", from: fromEnv},
	}
	if key == d.Name {
		s := sample(d.Default)
		steps = append(steps, struct {
			env, flag string
			want      string
			from      source
		}{env: "from-env", flag: "--" + d.Name + "=" + s, want: s, from: fromFlag})
	}
	for _, st := range steps {
		t.Setenv(ruleEnv(key), st.env)
		cmd := newCmd()
		var args []string
		if st.flag != "" {
			args = append(args, st.flag)
		}
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatalf("%s %v: %v", name, args, err)
		}
		v, err := loadSettings(cmd, decls, true)
		if err != nil {
			t.Fatalf("%s %s: %v", name, key, err)
		}
		got := value{name: key, st: v}
		s := got.String()
		if l, ok := got.Raw().([]string); ok && len(l) == 1 { // a repeatable flag
			s = l[0]
		}
		if s != st.want || got.From() != st.from {
			t.Errorf("%s %s (env %q, %v): %q from %d, want %q from %d", name, key, st.env, args, s, got.From(), st.want, st.from)
		}
		if st.from == fromEnv && !strings.Contains(got.Describe(s), ruleEnv(key)+"=from-env (environment)") {
			t.Errorf("%s %s: described as %q", name, key, got.Describe(s))
		}
	}
}

// defValue is the flag default pflag shows for a declared default.
func defValue(def any) string {
	switch d := def.(type) {
	case []string:
		return "[" + strings.Join(d, ",") + "]"
	case float64:
		return fmt.Sprint(d)
	}
	return fmt.Sprint(def)
}

// docs/usage.md has a row for each setting of each command, naming its
// flag, its config key and its environment variable: a new setting cannot
// be left undocumented.
func TestSettingsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/usage.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, l := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(l, "| `") {
			rows = append(rows, l)
		}
	}
	for _, cs := range commandSettings() {
		for _, d := range cs.decls {
			flag := regexp.MustCompile("^\\| `(-" + regexp.QuoteMeta(d.Short) + ", )?--" + regexp.QuoteMeta(d.Name) + "[ `]")
			if d.Short == "" {
				flag = regexp.MustCompile("^\\| `--" + regexp.QuoteMeta(d.Name) + "[ `]")
			}
			row := ""
			for _, r := range rows {
				if flag.MatchString(r) {
					row = r
				}
			}
			if row == "" {
				t.Errorf("docs/usage.md: no row for %s's setting --%s (the table of flags, environment and config file)", cs.name, d.Name)
				continue
			}
			cols := strings.Split(row, " | ")
			if len(cols) < 2 {
				t.Errorf("docs/usage.md: --%s's row has no config key column: %s", d.Name, row)
				continue
			}
			for _, key := range append([]string{d.Name}, d.Keys...) {
				if !strings.Contains(cols[1], "`"+key+"`") && !strings.Contains(cols[1], "`\""+key+"\"`") {
					t.Errorf("docs/usage.md: --%s's row does not name the config key %s: %s", d.Name, key, cols[1])
				}
				if !strings.Contains(cols[1], "`"+ruleEnv(key)+"`") {
					t.Errorf("docs/usage.md: --%s's row does not name the variable %s: %s", d.Name, ruleEnv(key), cols[1])
				}
			}
		}
	}
}

// The resolved values land in the typed options, each parsed by its
// setting, and an error names where a bad value came from, by the same
// rule.
func TestConvertOptionsResolved(t *testing.T) {
	for _, e := range os.Environ() {
		if n, _, _ := strings.Cut(e, "="); strings.HasPrefix(n, "RAWBATCH_") {
			t.Setenv(n, "")
		}
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("quality: 70\nlock-wait: 30s\n\"null\": true\nfiles-from: list\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RAWBATCH_CONFIG", cfg)
	t.Setenv("RAWBATCH_JOBS", "3")
	t.Setenv("RAWBATCH_HALF_SIZE", "true")
	resolveArgs := func(args ...string) (ConvertConfig, error) {
		var opts ConvertConfig
		cmd := newConvertCmd()
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		opts.Inputs = cmd.Flags().Args()
		_, err := resolve(cmd, opts.settings(), true)
		return opts, err
	}
	opts, err := resolveArgs("-o", filepath.Join(dir, "out"), "--exposure", "-1", "in")
	if err != nil {
		t.Fatal(err)
	}
	if opts.Jobs != 3 || !opts.Settings.HalfSize || opts.Settings.Quality != 70 || opts.Settings.Exposure != -1 ||
		opts.LockWait != 30*time.Second || opts.LockWaitOther != 30*time.Second || !opts.Find.Null ||
		opts.OutDir != filepath.Join(dir, "out") || opts.MinAge != 2*time.Second {
		t.Errorf("resolved %+v", opts)
	}
	t.Setenv("RAWBATCH_JOBS", "-2")
	if _, err := resolveArgs("-o", "out", "in"); err == nil || err.Error() != "--jobs -2: want a positive number, or 0 for the default (the number of CPUs, one more for the last file); set by RAWBATCH_JOBS=-2 in the environment" {
		t.Errorf("RAWBATCH_JOBS=-2: %v", err)
	}
	t.Setenv("RAWBATCH_JOBS", "")
	if err := os.WriteFile(cfg, []byte("retries: -1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := resolveArgs("-o", "out", "in"); err == nil || err.Error() != "--retries -1: want 0 or more; set by retries: in the config file "+cfg {
		t.Errorf("retries: -1: %v", err)
	}
	if _, err := resolveArgs("-o", "out", "--retries", "-1", "in"); err == nil || strings.Contains(err.Error(), "set by") {
		t.Errorf("--retries -1: %v", err)
	}
}
