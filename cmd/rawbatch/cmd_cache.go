package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/cache"
)

// CacheOptions are the options of `rawbatch cache stats|clear`.
type CacheOptions struct {
	GlobalOptions
	// Dir is the cache directory, expanded as convert expands it
	// (expandPath); "" turns the cache off. From says where it came from,
	// for messages: "--cache-dir", "RAWBATCH_CACHE_DIR", "cache-dir: in
	// FILE" or "the default".
	Dir, From string
}

// AddFlags adds the flags of the cache commands' settings to f.
func (o *CacheOptions) AddFlags(f *pflag.FlagSet) { addFlags(f, o.settings()) }

// settings are the cache commands' one setting, convert's cache-dir
// (cacheDirSetting), resolved as convert resolves it: --cache-dir, else
// RAWBATCH_CACHE_DIR, else cache-dir: in the config file, else the
// default. The config file's other keys are convert's and are not checked
// here (resolve without strict).
func (o *CacheOptions) settings() []setting {
	return []setting{cacheDirSetting(func(v value) (err error) {
		switch v.From() {
		case fromFlag:
			o.From = "--cache-dir"
		case fromEnv:
			o.From = envName(v.name)
		case fromFile:
			o.From = v.name + ": in " + v.st.configPath
		default:
			o.From = "the default"
		}
		o.Dir, err = pathSetting(v)
		return err
	})}
}

// newCacheCmd is `rawbatch cache stats|clear`: the stage cache of decoded
// images (see docs/variants.md). Neither subcommand creates or tags a
// directory: only convert makes caches.
func newCacheCmd() *cobra.Command {
	var opts CacheOptions
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
	opts.AddFlags(cmd.PersistentFlags())
	sub := func(use, short string, run func(context.Context, CacheOptions, []string) error) *cobra.Command {
		return &cobra.Command{
			Use:   use,
			Short: short,
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				opts.GlobalOptions = globalOptions(cmd)
				if _, err := resolve(cmd, opts.settings(), false); err != nil {
					return err
				}
				return run(cmd.Context(), opts, args)
			},
		}
	}
	cmd.AddCommand(
		sub("stats", "Print the number and size of cached decoded images", runCacheStats),
		sub("clear", "Delete every cached decoded image", runCacheClear))
	return cmd
}

// runCacheStats prints the number and size of the entries of the cache
// opts.Dir, and its file system's size and free space.
func runCacheStats(_ context.Context, opts CacheOptions, _ []string) error {
	c, err := openCacheDir(opts, "no stage cache")
	if c == nil || err != nil {
		return err
	}
	st, err := c.Stats()
	if err != nil {
		return err
	}
	out := opts.Stdout
	fmt.Fprintf(out, "cache:       %s\n", st.Dir)
	fmt.Fprintf(out, "entries:     %d\n", st.Entries)
	fmt.Fprintf(out, "size:        %s\n", budget.FormatSize(st.Bytes))
	fmt.Fprintf(out, "file system: %s, %s free\n", budget.FormatSize(st.FSSize), budget.FormatSize(st.FSFree))
	return nil
}

// runCacheClear deletes every entry of the cache opts.Dir.
func runCacheClear(_ context.Context, opts CacheOptions, _ []string) error {
	c, err := openCacheDir(opts, "nothing to clear")
	if c == nil || err != nil {
		return err
	}
	n, err := c.Clear()
	entries := "entries"
	if n == 1 {
		entries = "entry"
	}
	fmt.Fprintf(opts.Stdout, "removed %d %s from %s\n", n, entries, c.Dir())
	return err
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

// openCacheDir opens the existing cache directory opts.Dir, creating and
// writing nothing. When there is no cache there — the directory does not
// exist, or cache-dir is empty, which turns the cache off — it prints
// "NONE: ..." and returns nil, nil. A directory that is not a rawbatch
// cache is an error.
func openCacheDir(opts CacheOptions, none string) (*cache.Cache, error) {
	dir, from := opts.Dir, opts.From
	if dir == "" {
		fmt.Fprintf(opts.Stdout, "%s: cache-dir is empty (from %s), which turns the stage cache off\n", none, from)
		return nil, nil
	}
	c, err := cache.OpenExisting(dir, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(opts.Stdout, "%s: %s does not exist (cache directory from %s)\n", none, dir, from)
		return nil, nil
	case errors.Is(err, cache.ErrNotCache):
		return nil, fmt.Errorf("%w\nNothing was changed. The directory came from %s: point that at a cache made by 'rawbatch convert' (only convert creates caches).", err, from)
	case err != nil:
		return nil, fmt.Errorf("%w (cache directory from %s)", err, from)
	}
	return c, nil
}
