package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

func newRootCmd() *cobra.Command {
	v := viper.New()
	root := &cobra.Command{
		Use:   "rawbatch",
		Short: "Batch-convert camera RAW files with correct colour",
		Long: `rawbatch converts folders of camera RAW files (DNG, CR3, ARW, NEF, RAF and
every other format LibRaw reads) to finished images: JPEG, TIFF, PNG or WebP,
one or several variants of each file from one decode (convert). Re-runs convert
only what is new or changed, overlapping runs can share an output folder, and a
file that crashes or hangs the decoder fails alone. inspect shows what rawbatch
reads from a file's header; cache manages the stage cache of decoded images.

Settings come from flags, then RAWBATCH_* environment variables (RAWBATCH_QUALITY,
RAWBATCH_BASELINE_EXPOSURE, ...), then the config file (--config FILE, default
$XDG_CONFIG_HOME/rawbatch/config.yaml), whose keys are the flag names.

` + exitHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version(), // --version; `rawbatch version` says more
	}
	// Only convert handles SIGINT, SIGTERM and SIGHUP (installSignals);
	// the other commands get their default action back.
	root.PersistentPreRun = func(c *cobra.Command, _ []string) {
		if c.Name() != "convert" {
			releaseSignals()
		}
	}
	root.SetVersionTemplate("rawbatch {{.Version}}\n")
	root.PersistentFlags().String("config", "", "config file (default $XDG_CONFIG_HOME/rawbatch/config.yaml)")
	root.AddCommand(newConvertCmd(v), newInspectCmd(), newCacheCmd(), newVersionCmd(), newWorkerCmd())
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w\nRun '%s --help' for usage.", err, c.CommandPath())
	})
	return root
}

// flagSets maps each *viper.Viper that loadConfig bound to the command's
// flags, so that sourceOf can tell a flag given on the command line.
var flagSets sync.Map

// loadConfig binds cmd's flags and the RAWBATCH_* environment to v and
// reads the config file, so v resolves flag > environment > file > default.
func loadConfig(v *viper.Viper, cmd *cobra.Command) error {
	v.SetEnvPrefix("RAWBATCH")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	var bindErr error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "config" || f.Name == "help" {
			return
		}
		if err := v.BindPFlag(f.Name, f); err != nil && bindErr == nil {
			bindErr = err
		}
	})
	if bindErr != nil {
		return bindErr
	}
	flagSets.Store(v, cmd.Flags())
	settingWarnings.Store(v, checkEnvNames(cmd))
	path, explicit, err := configPath(cmd)
	if err != nil {
		return err
	}
	if path == "" {
		return nil
	}
	v.SetConfigFile(path)
	if err := v.ReadInConfig(); err != nil {
		// The default location may be missing, or unreadable when HOME
		// is another user's (a service account): no config file then.
		if !explicit && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission)) {
			return nil
		}
		return fmt.Errorf("config file %s: %w", path, err)
	}
	// Reject keys that are not flags: a typo in a config file must not be
	// silently ignored.
	for _, k := range v.AllKeys() {
		if (cmd.Flags().Lookup(k) == nil && k != "variants") || k == "config" {
			return fmt.Errorf("config file %s: unknown key %q (keys are the flag names of '%s')", path, k, cmd.CommandPath())
		}
	}
	return nil
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
