package queue

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/internal/testtool"
)

// startNatsServer starts the nats-server program (Debian 12's 2.9.10: the
// queue's feature floor) with JetStream on a free port and its store in a
// temporary directory; under CI a missing nats-server fails the test.
func startNatsServer(t *testing.T) string {
	t.Helper()
	url, _ := startNatsServerCmd(t)
	return url
}

// startNatsServerCmd is startNatsServer, also returning its process.
func startNatsServerCmd(t *testing.T) (string, *exec.Cmd) {
	t.Helper()
	exe := testtool.Need(t, "nats-server")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	log, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-js", "-sd", filepath.Join(dir, "store"), "-a", "127.0.0.1", "-p", fmt.Sprint(port))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("nats-server's log:\n%s", b)
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitFor(t, "nats-server listening on "+addr, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return "nats://" + addr, cmd
}

// TestExternalServer runs the publish, backpressure and worker-loop tests
// against an external nats-server (.ci/run installs Debian's 2.9.10), so
// that the 2.9 feature floor is checked.
func TestExternalServer(t *testing.T) {
	url := startNatsServer(t)
	c := connectT(t, testOptions(url))
	t.Logf("nats-server %s", c.nc.ConnectedServerVersion())
	t.Run("publish", func(t *testing.T) { testPublishDedupe(t, url) })
	t.Run("backpressure", func(t *testing.T) {
		testBackpressure(t, startNatsServer(t)) // its own server: the bound is the stream's
	})
	t.Run("refusals", func(t *testing.T) { testRefusals(t, startNatsServer(t)) })
	t.Run("worker", func(t *testing.T) { testWorkerOutcomes(t, url) })
	t.Run("republish", func(t *testing.T) { testRepublishAfterProcessed(t, startNatsServer(t)) })
	t.Run("over-budget-grace", func(t *testing.T) { testOverBudgetGrace(t, startNatsServer(t)) })
}

// TestPartition: the broker stopped (SIGSTOP) for twice the ack deadline
// with a job running: the worker is fenced (Lost closed, Fence fails) and
// commits nothing; after SIGCONT the job is redelivered and done once, and
// the worker carries on by itself.
func TestPartition(t *testing.T) {
	url, cmd := startNatsServerCmd(t)
	o := testOptions(url)
	c := connectT(t, o)
	var cs counts
	taken := make(chan struct{}, 1)
	j := testJob("partitioned.dng", 1<<20)
	startWorker(t, c, 1, func(ctx context.Context, d Delivery) Outcome {
		if d.Job.ID == j.ID && d.Attempt == 1 {
			taken <- struct{}{}
			select {
			case <-d.Lost:
			case <-time.After(20 * time.Second):
				t.Error("Lost not closed while the broker was stopped")
			}
			if err := d.Fence(); !errors.Is(err, ErrFenced) {
				t.Errorf("Fence while stopped: %v, want ErrFenced", err)
			}
			cs.add(d, "fenced")
			return Outcome{Result: Fenced}
		}
		if err := d.Fence(); err != nil {
			cs.add(d, "fenced")
			return Outcome{Result: Fenced}
		}
		cs.add(d, "done")
		return Outcome{Result: Done, Converted: true}
	})
	publishT(t, c, j)
	<-taken
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	waitFor(t, "the worker fenced", func() bool { return cs.n("#1:fenced") == 1 })
	// Stopped for twice the ack deadline (the partition's length is the
	// point here, not a wait for a state).
	time.Sleep(2 * o.AckWait)
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed = true
	waitFor(t, "the job done after the partition", func() bool { return statusOf(t, c, j.ID).State == Processed })
	if n := cs.n(":done"); n != 1 {
		t.Errorf("done %d times, want once (%v)", n, cs.get())
	}
	j2 := testJob("after.dng", 1<<20)
	publishT(t, c, j2)
	waitFor(t, "a new job done after the partition", func() bool { return statusOf(t, c, j2.ID).State == Processed })
}
