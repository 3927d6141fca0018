// Command rawbatch converts folders of camera RAW files (DNG, CR3, ARW, NEF
// and every other format LibRaw reads) to finished images.
//
// Exit status: 0 every file converted; 3 one or more files failed; 1 the run
// could not start (bad flags, unreadable config, unwritable output
// directory); 130 interrupted by SIGINT or SIGTERM.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// run executes the command line args and returns the process exit status.
func run(args []string) int {
	// Signals first, before cobra parses anything: convert takes them
	// (watchInterrupts), the other commands give them back.
	early := installSignals()
	defer early.release()
	if startHook != nil {
		startHook(early)
	}
	root := newRootCmd()
	root.SetArgs(args)
	err := root.ExecuteContext(withEarlySignals(context.Background(), early))
	code := exitCode(err)
	if err != nil && code == ExitUsage {
		fmt.Fprintf(root.ErrOrStderr(), "rawbatch: %v\n", err)
	}
	return code
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "rawbatch",
		Short: "Batch-convert camera RAW files with correct colour",
		Long: `rawbatch converts folders of camera RAW files (DNG, CR3, ARW, NEF, RAF and
every other format LibRaw reads) to finished images: JPEG, TIFF, PNG, WebP,
AVIF, JPEG XL or an Ultra HDR JPEG with a gain map, one or several variants of
each file from one decode (convert). Re-runs convert
only what is new or changed, overlapping runs can share an output folder, and a
file that crashes or hangs the decoder fails alone. inspect shows what rawbatch
reads from a file's header; cache manages the stage cache of decoded images.

On many hosts: submit queues the files on a NATS JetStream broker (broker runs
one), work converts them on each host, status shows the queue and dead lists
the files that failed for good (docs/distributed.md).

Settings come from flags, then RAWBATCH_* environment variables (RAWBATCH_QUALITY,
RAWBATCH_BASELINE_EXPOSURE, ...), then the config file (--config FILE, default
$XDG_CONFIG_HOME/rawbatch/config.yaml), whose keys are the flag names.

` + exitHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version(), // --version; `rawbatch version` says more
	}
	// Only convert, watch and the long-running commands of the multi-host mode
	// (broker, work, submit) handle SIGINT, SIGTERM and SIGHUP
	// (installSignals); the other commands get their default action back.
	root.PersistentPreRun = func(c *cobra.Command, _ []string) {
		switch c.Name() {
		case "convert", "watch", "broker", "work", "submit":
		default:
			earlySignalsOf(c.Context()).release()
		}
	}
	root.SetVersionTemplate("rawbatch {{.Version}}\n")
	root.PersistentFlags().String("config", "", "config file (default $XDG_CONFIG_HOME/rawbatch/config.yaml)")
	root.AddCommand(newConvertCmd(), newInspectCmd(), newCacheCmd(), newVersionCmd(), newWorkerCmd(),
		newBrokerCmd(), newSubmitCmd(), newWorkCmd(), newStatusCmd(), newDeadCmd(), newWatchCmd())
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w\nRun '%s --help' for usage.", err, c.CommandPath())
	})
	return root
}

// registerCompletions gives shell completion (`rawbatch completion bash`)
// the Values of each setting of decls that declares them.
func registerCompletions(cmd *cobra.Command, decls []setting) {
	for _, d := range decls {
		if d.Values == nil || cmd.Flags().Lookup(d.Name) == nil {
			continue
		}
		list := d.Values
		cmd.RegisterFlagCompletionFunc(d.Name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return list(), cobra.ShellCompDirectiveNoFileComp
		})
	}
}

// accepted returns the candidates that parse accepts: a setting's
// completion list follows its parser, a candidate the parser refuses is
// left out.
func accepted(parse func(string) error, candidates ...string) func() []string {
	return func() []string {
		var out []string
		for _, c := range candidates {
			if parse(c) == nil {
				out = append(out, c)
			}
		}
		return out
	}
}
