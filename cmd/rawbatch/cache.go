package main

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/cache"
)

// newCacheCmd is `rawbatch cache stats|clear`: the stage cache of decoded
// images (see docs/variants.md). Neither subcommand creates or tags a
// directory: only convert makes caches.
func newCacheCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache stats|clear",
		Short: "Show or clear the stage cache of decoded images",
		Long: `Show or clear the stage cache of decoded images that convert keeps with
--keep-cache.

The cache directory is found as convert finds it: --cache-dir, else
RAWBATCH_CACHE_DIR, else cache-dir: in the config file, else the default.
These commands never create a directory or write into one that is not a
rawbatch cache (a directory with the CACHEDIR.TAG that convert writes); a
directory that does not exist holds no cache.`,
		Args: subcommandArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.PersistentFlags().String("cache-dir", cache.DefaultDir(), "stage cache directory")
	cmd.AddCommand(&cobra.Command{
		Use:   "stats",
		Short: "Print the number and size of cached decoded images",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := openCacheDir(cmd, "no stage cache")
			if c == nil || err != nil {
				return err
			}
			st, err := c.Stats()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "cache:       %s\n", st.Dir)
			fmt.Fprintf(out, "entries:     %d\n", st.Entries)
			fmt.Fprintf(out, "size:        %s\n", budget.FormatSize(st.Bytes))
			fmt.Fprintf(out, "file system: %s, %s free\n", budget.FormatSize(st.FSSize), budget.FormatSize(st.FSFree))
			return nil
		},
	}, &cobra.Command{
		Use:   "clear",
		Short: "Delete every cached decoded image",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := openCacheDir(cmd, "nothing to clear")
			if c == nil || err != nil {
				return err
			}
			n, err := c.Clear()
			entries := "entries"
			if n == 1 {
				entries = "entry"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed %d %s from %s\n", n, entries, c.Dir())
			return err
		},
	})
	return cmd
}

// subcommandArgs refuses arguments to `rawbatch cache` itself: cobra takes
// an unknown subcommand for an argument of its parent, and would otherwise
// print the help and exit 0.
func subcommandArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return fmt.Errorf("unknown command %q for %q: want one of %s\nRun '%s --help' for usage.",
		args[0], cmd.CommandPath(), strings.Join(names, ", "), cmd.CommandPath())
}

// openCacheDir opens the existing cache directory the command resolves
// (resolveCacheDir), creating and writing nothing. When there is no cache
// there — the directory does not exist, or cache-dir is empty, which turns
// the cache off — it prints "NONE: ..." and returns nil, nil. A directory
// that is not a rawbatch cache is an error.
func openCacheDir(cmd *cobra.Command, none string) (*cache.Cache, error) {
	dir, from, err := resolveCacheDir(cmd)
	if err != nil {
		return nil, err
	}
	if dir == "" {
		fmt.Fprintf(cmd.OutOrStdout(), "%s: cache-dir is empty (from %s), which turns the stage cache off\n", none, from)
		return nil, nil
	}
	c, err := cache.OpenExisting(dir, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(cmd.OutOrStdout(), "%s: %s does not exist (cache directory from %s)\n", none, dir, from)
		return nil, nil
	case errors.Is(err, cache.ErrNotCache):
		return nil, fmt.Errorf("%w\nNothing was changed. The directory came from %s: point that at a cache made by 'rawbatch convert' (only convert creates caches).", err, from)
	case err != nil:
		return nil, fmt.Errorf("%w (cache directory from %s)", err, from)
	}
	return c, nil
}

// resolveCacheDir resolves the cache directory as convert does, with the
// same resolution (loadSettings): the --cache-dir flag, else
// RAWBATCH_CACHE_DIR, else cache-dir: in the config file (--config, else
// RAWBATCH_CONFIG, else $XDG_CONFIG_HOME/rawbatch/config.yaml when it
// exists), else the default. It also says where the value came from, for
// messages. The config file's other keys are convert's and are not checked
// here. Errors: an unreadable or malformed config file, or a missing one
// given explicitly.
func resolveCacheDir(cmd *cobra.Command) (dir, from string, err error) {
	v, err := loadSettings(cmd, "cache-dir")
	if err != nil {
		return "", "", err
	}
	src, val := sourceOf(v, "cache-dir"), v.GetString("cache-dir")
	what := "cache-dir " + val
	switch src {
	case fromFlag:
		from, what = "--cache-dir", "--cache-dir "+val+" (command line)"
	case fromEnv:
		from, what = "RAWBATCH_CACHE_DIR", "RAWBATCH_CACHE_DIR="+val+" (environment)"
	case fromFile:
		from, what = "cache-dir: in "+v.configPath, "cache-dir "+val+" (config file "+v.configPath+")"
	default:
		from = "the default"
	}
	// Expanded as convert expands it (expandPath).
	dir, err = expandPath(val, src, what)
	return dir, from, err
}
