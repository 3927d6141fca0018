package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFaultHookTransientCountsAcrossProcesses: transient=NAME:N fails the
// first N conversions of NAME with a transient error (no space left),
// counted across worker processes (each attempt of convert's retries is a
// new worker process), then lets it convert: with --retries 2 the file
// converts on its third attempt; with --retries 1 another such file fails
// with the transient error after its two attempts.
func TestFaultHookTransientCountsAcrossProcesses(t *testing.T) {
	c := newCluster(t)
	c.synthInput("flaky.dng", 1)
	fault := []string{"RAWBATCH_TEST_FAULT=transient=flaky.dng:2,transient=stuck.dng:2"}
	code, stdout, stderr := c.run(fault, "convert", c.in, "-o", c.out, "--retries", "2")
	if code != 0 {
		t.Fatalf("convert with retries 2 exited %d\n%s\n%s", code, stdout, stderr)
	}
	if n := len(c.records()["flaky.dng"]); n != 1 {
		t.Errorf("flaky.dng: %d records after its third attempt, want 1", n)
	}
	if b, err := os.ReadFile(filepath.Join(c.dir, "faults", "transient.flaky.dng")); err != nil || len(b) != 3 {
		t.Errorf("transient.flaky.dng counter: %q, %v; want 3 attempts", b, err)
	}
	if left := c.temps(); len(left) > 0 {
		t.Errorf("temporary outputs left by the failed attempts: %q", left)
	}

	os.Remove(filepath.Join(c.in, "flaky.dng"))
	c.synthInput("stuck.dng", 2)
	code, stdout, stderr = c.run(fault, "convert", c.in, "-o", c.out, "--retries", "1")
	if code == 0 {
		t.Fatalf("convert with retries 1 of a file failing twice exited 0\n%s\n%s", stdout, stderr)
	}
	if !strings.Contains(stdout+stderr, "no space left on device") {
		t.Errorf("convert's output does not name the transient failure (no space left on device):\n%s\n%s", stdout, stderr)
	}
	if n := len(c.records()["stuck.dng"]); n != 0 {
		t.Errorf("stuck.dng: %d records after two failed attempts, want none", n)
	}
	if left := c.temps(); len(left) > 0 {
		t.Errorf("temporary outputs left by the failed attempts: %q", left)
	}
}

// TestFaultHookKillWorker: killworker=NAME makes the worker process
// converting NAME kill its parent (here `rawbatch convert`) with SIGKILL.
func TestFaultHookKillWorker(t *testing.T) {
	c := newCluster(t)
	c.synthInput("killer.dng", 3)
	cmd := c.command([]string{"RAWBATCH_TEST_FAULT=killworker=killer.dng"}, "convert", c.in, "-o", c.out)
	err := cmd.Run()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("convert of a killworker file ended with %v (%v), want killed by SIGKILL", cmd.ProcessState, err)
	}
	if n := len(c.records()["killer.dng"]); n != 0 {
		t.Errorf("killer.dng: %d records, want none", n)
	}
}
