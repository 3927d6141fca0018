package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/rawbatch/rawbatch/pipeline/batch"
)

// newWorkerCmd is the hidden `rawbatch worker`: the child process that
// converts one file for `rawbatch convert` (batch.WorkerMain), so that a
// crash or hang of LibRaw fails only that file.
func newWorkerCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "worker",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if code := batch.WorkerMain(os.Stdin, os.Stdout); code != 0 {
				os.Exit(code)
			}
			return nil
		},
	}
}
