package queue

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/internal/testtool"
)

// startNatsServer starts the nats-server program (Debian 12's 2.9.10: the
// queue's feature floor) with JetStream on a free port and its store in a
// temporary directory; under CI a missing nats-server fails the test.
func startNatsServer(t *testing.T) string {
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
	return "nats://" + addr
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
}
