package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// planSignalEnv, in the tests only, makes rawbatch send itself SIGTERM
// while it plans (planHook) and wait until the signal has been taken.
const planSignalEnv = "RAWBATCH_TEST_PLAN_SIGNAL"

// startSignalEnv, in the tests only, makes rawbatch send itself SIGHUP
// right after main installed its handlers (startHook), before the command
// line is parsed, and wait until the signal has been taken.
const startSignalEnv = "RAWBATCH_TEST_START_SIGNAL"

// idleSignalEnv, in the tests only, makes watch send itself SIGINT once
// its first run is over and it waits for changes (idleHook), and wait
// until the signal has been taken.
const idleSignalEnv = "RAWBATCH_TEST_IDLE_SIGNAL"

func init() {
	if os.Getenv(idleSignalEnv) != "" {
		idleHook = func(ctx context.Context) {
			syscall.Kill(os.Getpid(), syscall.SIGINT)
			<-ctx.Done() // without a handler the signal has killed the process
		}
	}
	if os.Getenv(startSignalEnv) != "" {
		startHook = func(e *earlySignals) {
			syscall.Kill(os.Getpid(), syscall.SIGHUP)
			for len(e.ch) == 0 { // without a handler the signal has killed the process
				runtime.Gosched()
			}
		}
	}
	if os.Getenv(planSignalEnv) == "" {
		return
	}
	planHook = func(ctx context.Context) {
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
		<-ctx.Done() // without a handler the signal has killed the process
	}
}

// deadpipe STATUS ARGS...: run rawbatch ARGS with its stdout and stderr
// on a pipe whose reading end is closed (`rawbatch ... 2>&1 | head` after
// head exited), and require exit status STATUS.
func cmdDeadPipe(ts *testscript.TestScript, neg bool, args []string) {
	path, err := lookPathIn("rawbatch", ts.Getenv("PATH"))
	ts.Check(err)
	r, w, err := os.Pipe()
	ts.Check(err)
	ts.Check(r.Close())
	cmd := exec.Command(path, args[1:]...)
	cmd.Dir = ts.Getenv("WORK")
	cmd.Env = append(os.Environ(), "PATH="+ts.Getenv("PATH"), "RAWBATCH_MIN_AGE="+ts.Getenv("RAWBATCH_MIN_AGE"))
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Run()
	w.Close()
	got := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		got = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			ts.Fatalf("rawbatch was killed by %v (exit status %d in a shell)", ws.Signal(), 128+int(ws.Signal()))
		}
	} else if err != nil {
		ts.Fatalf("rawbatch: %v", err)
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	if got != want {
		ts.Fatalf("rawbatch exited %d, want %s", got, args[0])
	}
}

// TestSignalEcho: a signal right after the first (timeout(1) sends one to
// rawbatch and one to its process group) is the same request: no files
// are stopped; one later than signalEcho stops them. The clock is the
// test's, and counts its readings so that the test knows when the
// watcher has judged a signal.
func TestSignalEcho(t *testing.T) {
	var now, reads atomic.Int64 // nanoseconds; clock readings
	signalClock = func() time.Time { reads.Add(1); return time.Unix(0, now.Load()) }
	defer func() { signalClock = time.Now }()
	e := &earlySignals{ch: make(chan os.Signal, 4)}
	in := watchSignals(withEarlySignals(context.Background(), e), func(os.Signal) string { return "first" }, "second", func(string) {})
	defer in.stop()
	judged := func(n int64) { // the watcher has read the clock n times
		for reads.Load() < n {
			runtime.Gosched()
		}
	}
	in.sigs <- os.Interrupt
	<-in.Ctx.Done()
	judged(2) // at install, at the first signal
	now.Add(int64(signalEcho / 10))
	in.sigs <- os.Interrupt // the echo
	judged(3)
	select {
	case <-in.Abort:
		t.Fatal("a signal within signalEcho of the first stopped the files in progress")
	default:
	}
	now.Add(int64(signalEcho))
	in.sigs <- os.Interrupt
	select {
	case <-in.Abort:
	case <-time.After(10 * time.Second):
		t.Fatal("a second signal after signalEcho did not stop the files in progress")
	}
}
