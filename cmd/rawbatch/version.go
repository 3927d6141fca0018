package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/rawbatch/rawbatch/pipeline"
)

// version is set by the release build (-ldflags "-X main.version=...").
var version = ""

// Version returns rawbatch's version: the release tag, else the module
// version or VCS revision recorded in the binary, else "dev".
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return v
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "dev-" + s.Value[:12]
			}
		}
	}
	return "dev"
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the versions of rawbatch, Go and LibRaw",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lib := pipeline.LibRawInfo()
			ts := "no (libraw, not thread-safe)"
			if lib.ThreadSafe {
				ts = "yes"
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "rawbatch %s\n", Version())
			fmt.Fprintf(out, "go       %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
			if lib.Bundled {
				fmt.Fprintf(out, "libraw   %s (bundled, linked statically)\n", lib.Version)
			} else {
				fmt.Fprintf(out, "libraw   %s (system, %s)\n", lib.Version, lib.Path)
			}
			fmt.Fprintf(out, "libraw_r %s\n", ts)
			return nil
		},
	}
}
