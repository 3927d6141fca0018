package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/rawbatch/rawbatch/batch"
)

// newWorkerCmd is the hidden `rawbatch worker`: the child process that
// converts one file for `rawbatch convert` (batch.WorkerMain), so that a
// crash or hang of LibRaw fails only that file.
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

// runWorker converts the one file its parent sends on opts.Stdin, answering
// on opts.Stdout (the process's own, as the parent started it); a worker
// that fails exits with its status.
func runWorker(_ context.Context, opts GlobalOptions, _ []string) error {
	if code := batch.WorkerMain(opts.Stdin, opts.Stdout); code != 0 {
		os.Exit(code)
	}
	return nil
}
