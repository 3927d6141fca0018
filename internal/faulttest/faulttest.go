// Package faulttest installs rawbatch's fault hooks for tests. Importing it
// (for its side effect, from _test.go files only) makes the hook points of
// package internal/fault read the environment variable
// RAWBATCH_TEST_FAULT (pipeline.FaultEnv), a comma-separated list of
// KIND=NAME, NAME being an input's base name:
//
//   - crash=NAME: the worker converting NAME dies of SIGSEGV (a null-pointer
//     write in C code, as a decoder bug would);
//   - killed=NAME: the worker converting NAME is killed by SIGKILL before
//     decoding, as `kill -9` from another process would;
//   - hang=NAME: the worker converting NAME blocks forever before decoding;
//   - delete=NAME: the worker converting NAME deletes it first (before
//     LibRaw opens it), deleteafter=NAME once it has converted it;
//   - hangtemp=NAME: the conversion of NAME blocks for ever once its
//     temporary outputs are written, before they are renamed into place
//     (appending its pid to $RAWBATCH_TEST_FAULT_PIDS, as hangheader);
//   - hangconverted=NAME: the conversion of NAME blocks for ever once its
//     outputs are renamed into place, before the worker replies (appending
//     its pid to $RAWBATCH_TEST_FAULT_PIDS, as hangheader): scripts stop
//     such a worker, whose outputs are committed but not yet recorded;
//   - exitconverted=NAME: the worker converting NAME exits with status 2,
//     saying nothing, once its outputs are renamed into place, before it
//     replies (as one whose reply cannot be encoded): scripts check that
//     such a file fails and its outputs are removed;
//   - crashtemp=NAME: the worker converting NAME dies of SIGSEGV (as
//     crash) once its temporary outputs are written, before they are
//     renamed into place: scripts check that a worker killed with its
//     temporary files on disk leaves none behind;
//   - gate=NAME: the worker converting NAME creates the file
//     $RAWBATCH_TEST_GATE.ready (and appends its pid to
//     $RAWBATCH_TEST_FAULT_PIDS when set, as hangheader), then waits before
//     decoding until the file $RAWBATCH_TEST_GATE exists (GateEnv): scripts
//     hold one run in the middle of a conversion, its locks taken, while
//     another run starts; several gate=NAME share the one gate;
//   - gatetemp=NAME: as gate, once the temporary outputs of NAME are
//     written, before they are renamed into place: scripts change what is
//     under OUTDIR meanwhile;
//   - rewrite=NAME: once NAME is decoded, the worker rewrites it in place
//     (same inode) with the content of the file $RAWBATCH_TEST_REWRITE,
//     keeping its modification time, as `cp -p` or `rsync -a --inplace` of
//     another photograph of the same size would (RewriteEnv);
//   - hangheader=NAME: LibRaw's header open of NAME never returns (a C call
//     that blocks forever, as LibRaw's open does on some damaged CR3 files);
//   - transient=NAME:N: the conversion of NAME fails with "no space left on
//     device" (ENOSPC, a transient failure) when its temporary outputs are
//     written, before they are renamed into place (fault.Fail at Renaming),
//     on its first N attempts, counted across processes in the file
//     $RAWBATCH_TEST_FAULT_DIR/transient.NAME (one byte appended per
//     attempt, CountDirEnv); later attempts succeed. Without
//     $RAWBATCH_TEST_FAULT_DIR every attempt fails;
//   - stall=NAME: once the planner has found NAME (its size and time
//     noted), one more byte is appended to it, keeping its modification
//     time, as a copy whose writes paused for a while and go on would:
//     scripts check that such a file, truncated when its header is read,
//     is left for a later run, not failed;
//   - killworker=NAME: the worker converting NAME kills its parent (the
//     rawbatch process that started it: `rawbatch work` or `convert`) with
//     SIGKILL, then itself, before decoding: a file that kills its worker
//     every time.
//
// A release binary does not import this package, so it has no hooks.
package faulttest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rawbatch/rawbatch/internal/fault"
)

// Env is the environment variable read by the hooks (the same name as
// pipeline.FaultEnv).
const Env = "RAWBATCH_TEST_FAULT"

// PIDFileEnv, when set, names a file to which hangheader appends the
// process id of the process that hangs, one per line, before hanging: tests
// use it to check which process hung and that it was killed.
const PIDFileEnv = "RAWBATCH_TEST_FAULT_PIDS"

// GateEnv names the gate file of the gate fault.
const GateEnv = "RAWBATCH_TEST_GATE"

// RewriteEnv names the file whose content the rewrite fault writes.
const RewriteEnv = "RAWBATCH_TEST_REWRITE"

// CountDirEnv names the directory of the transient fault's attempt
// counters (one file per input name, shared by every process).
const CountDirEnv = "RAWBATCH_TEST_FAULT_DIR"

func init() {
	fault.Hook = hook
	fault.FailHook = fail
}

// fail is fault.FailHook: the transient fault.
func fail(point, input string) error {
	spec := os.Getenv(Env)
	if spec == "" || point != fault.Renaming {
		return nil
	}
	base := filepath.Base(input)
	for _, f := range strings.Split(spec, ",") {
		kind, arg, _ := strings.Cut(f, "=")
		if kind != "transient" {
			continue
		}
		i := strings.LastIndexByte(arg, ':')
		if i < 0 || arg[:i] != base {
			continue
		}
		n, err := strconv.Atoi(arg[i+1:])
		if err != nil {
			continue
		}
		attempt := countAttempt(base)
		if attempt > n {
			return nil
		}
		return fmt.Errorf("test fault transient=%s (attempt %d, failing the first %d): %w", arg, attempt, n,
			&os.PathError{Op: "write", Path: input, Err: syscall.ENOSPC})
	}
	return nil
}

// countAttempt appends a byte to $RAWBATCH_TEST_FAULT_DIR/transient.NAME
// and returns the file's size after it: the attempt's number (1 for the
// first), or 0 when there is no counter (no directory set, or it cannot
// be written).
func countAttempt(base string) int {
	dir := os.Getenv(CountDirEnv)
	if dir == "" {
		return 0
	}
	f, err := os.OpenFile(filepath.Join(dir, "transient."+base), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return 0
	}
	defer f.Close()
	if _, err := f.Write([]byte{'.'}); err != nil {
		return 0
	}
	st, err := f.Stat()
	if err != nil {
		return 0
	}
	return int(st.Size())
}

// gate announces that it is waiting and waits for the gate to open
// (polling every 10 ms; no limit: the run's --timeout kills a worker left
// waiting).
func gate() {
	g := os.Getenv(GateEnv)
	if g == "" {
		return
	}
	os.WriteFile(g+".ready", nil, 0o644)
	notePID()
	for {
		if _, err := os.Stat(g); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// rewriteInPlace overwrites in with the bytes of $RAWBATCH_TEST_REWRITE
// and restores in's modification time.
func rewriteInPlace(in string) {
	src := os.Getenv(RewriteEnv)
	st, err := os.Stat(in)
	if src == "" || err != nil {
		return
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return
	}
	if os.WriteFile(in, b, 0o644) == nil {
		os.Chtimes(in, time.Now(), st.ModTime())
	}
}

// notePID appends this process's id to $RAWBATCH_TEST_FAULT_PIDS, if set.
func notePID() {
	if p := os.Getenv(PIDFileEnv); p != "" {
		if f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			f.WriteString(strconv.Itoa(os.Getpid()) + "\n")
			f.Close()
		}
	}
}

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
		case point == fault.Decode && kind == "crash", point == fault.Renaming && kind == "crashtemp":
			fault.Crash()
		case point == fault.Decode && kind == "gate", point == fault.Renaming && kind == "gatetemp":
			gate()
		case point == fault.Decoded && kind == "rewrite":
			rewriteInPlace(input)
		case point == fault.Decode && kind == "killworker":
			syscall.Kill(os.Getppid(), syscall.SIGKILL)
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		case point == fault.Decode && kind == "killed":
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		case point == fault.Converted && kind == "exitconverted":
			os.Exit(2)
		case point == fault.Decode && kind == "hang":
			select {}
		case point == fault.Planned && kind == "stall":
			stallWrite(input)
		case point == fault.Decode && kind == "delete", point == fault.Converted && kind == "deleteafter":
			os.Remove(input)
		case point == fault.Header && kind == "hangheader", point == fault.Renaming && kind == "hangtemp",
			point == fault.Converted && kind == "hangconverted":
			notePID()
			fault.Hang()
		}
	}
}

// stallWrite appends one byte to path and sets its modification time back:
// a copy in progress whose writes stall (the stall fault).
func stallWrite(path string) {
	fi, err := os.Stat(path)
	if err != nil {
		return
	}
	if fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0); err == nil {
		fh.Write([]byte{0})
		fh.Close()
	}
	os.Chtimes(path, fi.ModTime(), fi.ModTime())
}
