package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// settings are one command's settings as loadSettings resolved them: a
// flag given on the command line, else its RAWBATCH_* environment variable
// (RAWBATCH_MEM_BUDGET for --mem-budget; an empty one is ignored), else its
// key in the config file (the flag's name), else the flag's default. Each
// command run makes its own (no global state); the embedded viper holds
// the values, read by key (v.GetString("quality")).
type settings struct {
	*viper.Viper
	// flags are the command's flags, to tell one given on the command
	// line (sourceOf).
	flags *pflag.FlagSet
	// warnings are about the environment: RAWBATCH_* variables that are
	// no setting (checkEnvNames); convert prints them.
	warnings []string
	// configPath is the config file read ("" when none was).
	configPath string
}

// loadSettings resolves cmd's settings: all of its flags (but --config and
// --help), or only those named by keys. With all flags, the RAWBATCH_*
// variables that are no setting of cmd are warned of, and a config file
// key that is no flag of cmd is an error; with keys (a command that reads
// some of convert's settings, as cache reads cache-dir), the config file's
// other keys are left alone. The config file is --config, else
// RAWBATCH_CONFIG, else $XDG_CONFIG_HOME/rawbatch/config.yaml (configPath).
// Errors: a flag that cannot be bound, an unreadable or malformed config
// file (a missing or unreadable default one is none), an unknown key.
func loadSettings(cmd *cobra.Command, keys ...string) (*settings, error) {
	v := viper.New()
	v.SetEnvPrefix("RAWBATCH")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	st := &settings{Viper: v, flags: cmd.Flags()}
	all := len(keys) == 0
	var bindErr error
	bind := func(f *pflag.Flag) {
		if f == nil || f.Name == "config" || f.Name == "help" {
			return
		}
		if err := v.BindPFlag(f.Name, f); err != nil && bindErr == nil {
			bindErr = err
		}
	}
	if all {
		cmd.Flags().VisitAll(bind)
	}
	for _, k := range keys {
		bind(cmd.Flag(k))
	}
	if bindErr != nil {
		return nil, bindErr
	}
	if all {
		st.warnings = checkEnvNames(cmd)
	}
	path, explicit, err := configPath(cmd)
	if err != nil || path == "" {
		return st, err
	}
	v.SetConfigFile(path)
	if err := v.ReadInConfig(); err != nil {
		// The default location may be missing, or unreadable when HOME
		// is another user's (a service account): no config file then.
		if !explicit && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission)) {
			return st, nil
		}
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	st.configPath = path
	if !all {
		return st, nil
	}
	// Reject keys that are not flags: a typo in a config file must not be
	// silently ignored.
	for _, k := range v.AllKeys() {
		if (cmd.Flags().Lookup(k) == nil && k != "variants") || k == "config" {
			return nil, fmt.Errorf("config file %s: unknown key %q (keys are the flag names of '%s')", path, k, cmd.CommandPath())
		}
	}
	return st, nil
}

// configPath returns the config file to read and whether it was named
// explicitly (--config, else RAWBATCH_CONFIG, expanded as other paths are:
// expandPath); otherwise the default $XDG_CONFIG_HOME/rawbatch/config.yaml
// (~/.config when XDG_CONFIG_HOME is unset), which may not exist; "" when
// there is no home directory either.
func configPath(cmd *cobra.Command) (path string, explicit bool, err error) {
	if f := cmd.Flag("config"); f != nil && f.Value.String() != "" {
		p, err := expandPath(f.Value.String(), fromFlag, "--config "+f.Value.String()+" (command line)")
		return p, true, err
	}
	if p := os.Getenv("RAWBATCH_CONFIG"); p != "" {
		p, err := expandPath(p, fromEnv, "RAWBATCH_CONFIG="+p+" (environment)")
		return p, true, err
	}
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", false, nil
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "rawbatch", "config.yaml"), false, nil
}
