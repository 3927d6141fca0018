package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/rawbatch/rawbatch/pipeline"
)

// version is set by the release build (-ldflags "-X main.version=...").
var version = ""

// Version returns rawbatch's version: the release tag, else the module
// version or VCS revision recorded in the binary (versionFrom), else
// "dev". The up-to-date records store it: it is the same for every run of
// one binary.
func Version() string {
	if version != "" {
		return version
	}
	bi, _ := debug.ReadBuildInfo()
	return versionFrom(bi)
}

// versionFrom reads a version from build info: the main module's version
// ("v1.4.0", or a pseudo-version when built with go install
// module@commit), else "dev-" and the first 12 digits of the VCS revision,
// with "-dirty" when the work tree had changes, else "dev".
func versionFrom(bi *debug.BuildInfo) string {
	if bi == nil {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) < 12 {
		return "dev"
	}
	if dirty {
		return "dev-" + rev[:12] + "-dirty"
	}
	return "dev-" + rev[:12]
}

// newVersionCmd is `rawbatch version`; it has no options but the streams.
func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the versions of rawbatch, Go and LibRaw",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVersion(cmd.Context(), globalOptions(cmd), args)
		},
	}
}

// runVersion prints the versions of rawbatch, Go, and the LibRaw and
// libjpeg linked (read at run time).
func runVersion(_ context.Context, opts GlobalOptions, _ []string) error {
	lib := pipeline.LibRawInfo()
	ts := "no (libraw, not thread-safe)"
	if lib.ThreadSafe {
		ts = "yes"
	}
	out := opts.Stdout
	fmt.Fprintf(out, "rawbatch %s\n", Version())
	fmt.Fprintf(out, "go       %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if lib.Bundled {
		fmt.Fprintf(out, "libraw   %s (bundled, linked statically)\n", lib.Version)
	} else {
		fmt.Fprintf(out, "libraw   %s (system, %s)\n", lib.Version, lib.Path)
	}
	fmt.Fprintf(out, "libraw_r %s\n", ts)
	fmt.Fprintf(out, "libjpeg  %s\n", pipeline.JPEGLibrary())
	return nil
}
