package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// A setting is one setting of a command, declared once. From its Name come,
// by one rule each, its flag (--Name, and -Short when given), its config
// file key (Name) and its environment variable (envName: RAWBATCH_ and Name
// upper-cased, dashes as underscores: RAWBATCH_MEM_BUDGET for mem-budget).
// The flag's type and default are Default's. Apply reads the resolved value
// (flag > environment > config file > default, loadSettings) into the
// command's typed options, validating it there: nothing else reads a
// setting back by name.
type setting struct {
	// Name is the flag's long name and the config file key.
	Name string
	// Short is the one-letter flag ("o" for -o), or "".
	Short string
	// Default is the default and the type of the value: a string, int,
	// bool, float64, time.Duration, or []string for a repeatable flag
	// (nil for none).
	Default any
	// Help is the flag's help text.
	Help string
	// Keys are further config file keys that set the same thing another
	// way, with their environment variables (envName): variants: (a list)
	// for --variant.
	Keys []string
	// Values are the values shell completion offers (nil: none, a
	// file name); each list is checked against the parser (accepted).
	Values func() []string
	// Apply parses and validates the value into the options it was
	// declared for. An error that names the setting as a flag ("--jobs -2:
	// ...") gets where the value came from appended (applySettings).
	Apply func(v value) error
}

// envName is the environment variable of a setting or config key:
// RAWBATCH_MEM_BUDGET for mem-budget.
func envName(key string) string {
	return "RAWBATCH_" + strings.ToUpper(strings.ReplaceAll(key, "-", "_"))
}

// addFlags adds the flag of each setting to f, typed by its Default.
// It panics on a Default of another type: a declaration error, found by
// the first test that builds the command.
func addFlags(f *pflag.FlagSet, decls []setting) {
	for _, d := range decls {
		switch def := d.Default.(type) {
		case string:
			f.StringP(d.Name, d.Short, def, d.Help)
		case int:
			f.IntP(d.Name, d.Short, def, d.Help)
		case bool:
			f.BoolP(d.Name, d.Short, def, d.Help)
		case float64:
			f.Float64P(d.Name, d.Short, def, d.Help)
		case time.Duration:
			f.DurationP(d.Name, d.Short, def, d.Help)
		case []string:
			f.StringArrayP(d.Name, d.Short, def, d.Help)
		default:
			panic(fmt.Sprintf("setting %s: default %T is not a flag type", d.Name, d.Default))
		}
	}
}

// settingKeys returns the config file keys of decls: each Name and Keys.
func settingKeys(decls []setting) []string {
	var keys []string
	for _, d := range decls {
		keys = append(keys, d.Name)
		keys = append(keys, d.Keys...)
	}
	return keys
}

// value is one setting's value as loadSettings resolved it.
type value struct {
	name string
	st   *settings
}

// Raw is the value as its source gives it: the flag's typed value (also
// for the default), a string from the environment, the config file's YAML
// value (string, int, bool, float64, list, map).
func (v value) Raw() any { return v.st.Get(v.name) }

// String is the value as a string.
func (v value) String() string { return v.st.GetString(v.name) }

// From says where the value comes from.
func (v value) From() source { return sourceOf(v.st, v.name) }

// Describe names the setting and where it comes from, for messages
// (describe), with val when not empty.
func (v value) Describe(val string) string { return describe(v.st, v.name, v.From(), val) }

// Other is the value of another setting or config key of the same
// command, for the settings that depend on others' sources (--variant,
// --preset and --format are one choice).
func (v value) Other(name string) value { return value{name: name, st: v.st} }

// applySettings applies each of decls, in order, to the values st resolved,
// and returns the first error, with its source appended when it names the
// setting as a flag and its value came from the environment or the config
// file ("--quality: 85.5 is not a whole number; set by RAWBATCH_QUALITY=85.5
// in the environment").
func applySettings(st *settings, decls []setting) error {
	for _, d := range decls {
		v := value{name: d.Name, st: st}
		if err := d.Apply(v); err != nil {
			return withSource(v, err)
		}
	}
	return nil
}

// resolve is the one config resolution of every command that has
// settings: it resolves decls for cmd (loadSettings; strict as there) and
// applies them to the options they were declared for (applySettings).
func resolve(cmd *cobra.Command, decls []setting, strict bool) (*settings, error) {
	st, err := loadSettings(cmd, decls, strict)
	if err != nil {
		return nil, err
	}
	return st, applySettings(st, decls)
}

// GlobalOptions are what each command's run gets besides its own
// options: the standard streams (the cobra command's, so tests can give
// their own).
type GlobalOptions struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// globalOptions are cmd's standard streams.
func globalOptions(cmd *cobra.Command) GlobalOptions {
	return GlobalOptions{Stdin: cmd.InOrStdin(), Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()}
}
