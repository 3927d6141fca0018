package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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
// the values, which the settings' declarations read (value, applySettings)
// into typed options.
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

// loadSettings resolves the settings decls of cmd (whose flags addFlags
// made from them). With strict (the command owns the config file's keys,
// as convert does), the RAWBATCH_* variables that are no setting of decls
// are warned of, and a config file key that is none of decls' is an
// error; without (a command that reads some of convert's settings, as
// cache reads cache-dir), the config file's other keys are left alone.
// The config file is --config, else RAWBATCH_CONFIG, else
// $XDG_CONFIG_HOME/rawbatch/config.yaml (configPath); none is read when
// decls is empty. Every command resolves its settings here.
// Errors: a flag that cannot be bound, an unreadable or malformed config
// file (a missing or unreadable default one is none), an unknown key.
func loadSettings(cmd *cobra.Command, decls []setting, strict bool) (*settings, error) {
	v := viper.New()
	v.SetEnvPrefix("RAWBATCH")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	st := &settings{Viper: v, flags: cmd.Flags()}
	for _, d := range decls {
		f := cmd.Flag(d.Name)
		if f == nil {
			return nil, fmt.Errorf("setting %s has no flag in '%s'", d.Name, cmd.CommandPath())
		}
		if err := v.BindPFlag(d.Name, f); err != nil {
			return nil, err
		}
	}
	if len(decls) == 0 {
		return st, nil
	}
	if strict {
		st.warnings = checkEnvNames(cmd, decls)
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
	if !strict {
		return st, nil
	}
	// Reject keys that are not settings: a typo in a config file must not
	// be silently ignored.
	keys := append(settingKeys(decls), queueCommandKeys()...) // one config file serves every command
	keys = append(keys, presetsKey)                           // read by readPresets
	for _, k := range v.AllKeys() {
		if !slices.Contains(keys, k) && !strings.HasPrefix(k, presetsKey+".") {
			if best := nearest(k, keys, ""); best != "" {
				return nil, fmt.Errorf("config file %s: unknown key %q; did you mean %q?", path, k, best)
			}
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
