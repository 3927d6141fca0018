package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/rawbatch/rawbatch/batch"
)

// newWorkerCmd is the hidden `rawbatch worker`: the child process that
// converts files one at a time for `rawbatch convert` and `rawbatch work`
// (batch.WorkerMain), so that a crash or hang of LibRaw fails only the
// file it was on.
func newWorkerCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "worker",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWorker(cmd.Context(), globalOptions(cmd), args)
		},
	}
}

// runWorker converts each file its parent sends on opts.Stdin, answering
// each on opts.Stdout (the process's own, as the parent started it), until
// its stdin ends; a worker that fails exits with its status.
func runWorker(_ context.Context, opts GlobalOptions, _ []string) error {
	if code := batch.WorkerMain(opts.Stdin, opts.Stdout); code != 0 {
		os.Exit(code)
	}
	return nil
}
