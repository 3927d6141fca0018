package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "rawbatch",
		Short: "Batch-convert camera RAW files with correct colour",
		Long: `rawbatch converts folders of camera RAW files (DNG, CR3, ARW, NEF, RAF and
every other format LibRaw reads) to finished images: JPEG, TIFF, PNG or WebP,
one or several variants of each file from one decode (convert). Re-runs convert
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
	// Only convert and the long-running commands of the multi-host mode
	// (broker, work, submit) handle SIGINT, SIGTERM and SIGHUP
	// (installSignals); the other commands get their default action back.
	root.PersistentPreRun = func(c *cobra.Command, _ []string) {
		switch c.Name() {
		case "convert", "broker", "work", "submit":
		default:
			earlySignalsOf(c.Context()).release()
		}
	}
	root.SetVersionTemplate("rawbatch {{.Version}}\n")
	root.PersistentFlags().String("config", "", "config file (default $XDG_CONFIG_HOME/rawbatch/config.yaml)")
	root.AddCommand(newConvertCmd(), newInspectCmd(), newCacheCmd(), newVersionCmd(), newWorkerCmd(),
		newBrokerCmd(), newSubmitCmd(), newWorkCmd(), newStatusCmd(), newDeadCmd())
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w\nRun '%s --help' for usage.", err, c.CommandPath())
	})
	return root
}
