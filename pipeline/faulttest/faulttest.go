// Package faulttest installs rawbatch's fault hooks for tests. Importing it
// (for its side effect, from _test.go files only) makes the hook points of
// package pipeline/internal/fault read the environment variable
// RAWBATCH_TEST_FAULT (pipeline.FaultEnv), a comma-separated list of
// KIND=NAME, NAME being an input's base name:
//
//   - crash=NAME: the worker converting NAME dies of SIGSEGV (a null-pointer
//     write in C code, as a decoder bug would);
//   - hang=NAME: the worker converting NAME blocks forever before decoding;
//   - delete=NAME: the worker converting NAME deletes it first (before
//     LibRaw opens it), deleteafter=NAME once it has converted it;
//   - hangtemp=NAME: the conversion of NAME blocks for ever once its
//     temporary outputs are written, before they are renamed into place
//     (appending its pid to $RAWBATCH_TEST_FAULT_PIDS, as hangheader);
//   - hangheader=NAME: LibRaw's header open of NAME never returns (a C call
//     that blocks forever, as LibRaw's open does on some damaged CR3 files).
//
// A release binary does not import this package, so it has no hooks.
package faulttest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rawbatch/rawbatch/pipeline/internal/fault"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
)

// Env is the environment variable read by the hooks (the same name as
// pipeline.FaultEnv).
const Env = "RAWBATCH_TEST_FAULT"

// PIDFileEnv, when set, names a file to which hangheader appends the
// process id of the process that hangs, one per line, before hanging: tests
// use it to check which process hung and that it was killed.
const PIDFileEnv = "RAWBATCH_TEST_FAULT_PIDS"

func init() { fault.Hook = hook }

func hook(point, input string) {
	spec := os.Getenv(Env)
	if spec == "" {
		return
	}
	base := filepath.Base(input)
	for _, f := range strings.Split(spec, ",") {
		kind, name, _ := strings.Cut(f, "=")
		if name != base {
			continue
		}
		switch {
		case point == fault.Decode && kind == "crash":
			libraw.CrashForTest()
		case point == fault.Decode && kind == "hang":
			select {}
		case point == fault.Decode && kind == "delete", point == fault.Converted && kind == "deleteafter":
			os.Remove(input)
		case point == fault.Header && kind == "hangheader", point == fault.Renaming && kind == "hangtemp":
			if p := os.Getenv(PIDFileEnv); p != "" {
				if f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
					f.WriteString(strconv.Itoa(os.Getpid()) + "\n")
					f.Close()
				}
			}
			libraw.HangForTest()
		}
	}
}
