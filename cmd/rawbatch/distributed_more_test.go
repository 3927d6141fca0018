package main

// More end-to-end tests of the multi-host mode, on the harness
// of distributed_harness_test.go: SIGTERM of a worker in the middle of a
// file (within and past --grace), and workers of different memory budgets
// (size classes).

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
	"github.com/rawbatch/rawbatch/queue"
)

// synthInputWH writes one synthetic DNG of w×h displayed pixels named
// name into the inputs (a larger file than synthInput's, for the size
// classes).
func (c *cluster) synthInputWH(name string, w, h int) {
	c.t.Helper()
	ch := synthdng.Chart{W: w, H: h, Background: [3]float64{0.18, 0.18, 0.18},
		Patches: []synthdng.Patch{{X0: w / 4, Y0: h / 4, X1: w / 2, Y1: h / 2, SRGBLinear: [3]float64{0.5, 0.2, 0.1}}}}
	cw, chh, scene := synthdng.ChartScene(ch, 1, synthdng.DefaultColorMatrix, 1)
	if err := synthdng.WriteFile(filepath.Join(c.in, name), synthdng.Spec{Width: cw, Height: chh, BlackLevel: 256,
		WhiteLevel: 16383, Orientation: 1, Scene: scene}); err != nil {
		c.t.Fatal(err)
	}
}

// dropClient closes the test's queue client (the next client() connects
// again, ensuring the streams and buckets): after the broker lost its
// store, the old client's consumers are gone.
func (c *cluster) dropClient() {
	c.mu.Lock()
	qc := c.qc
	c.qc = nil
	c.mu.Unlock()
	if qc != nil {
		qc.Close()
	}
}

// synthInputsBut is synthInputs(n) but leaves the input held alone (it
// is written already, and in flight: rewriting it would make it another
// job).
func (c *cluster) synthInputsBut(n int, held string) []string {
	c.t.Helper()
	var names []string
	for i := range n {
		name := fmt.Sprintf("f%03d.dng", i)
		if name != held {
			c.synthInput(name, i)
		}
		names = append(names, name)
	}
	return names
}

// signal sends sig to the worker's current run.
func (w *distWorker) signal(sig syscall.Signal) {
	w.c.t.Helper()
	w.mu.Lock()
	cmd := w.cmd
	w.mu.Unlock()
	if err := cmd.Process.Signal(sig); err != nil {
		w.c.t.Fatalf("signal %v to worker %d: %v", sig, w.n, err)
	}
}

// waitExit waits for the end of the worker's current run and returns its
// exit code (-1: killed by a signal).
func (w *distWorker) waitExit() int {
	w.c.t.Helper()
	w.mu.Lock()
	cmd, exited := w.cmd, w.exited
	w.mu.Unlock()
	select {
	case <-exited:
	case <-time.After(distDeadline):
		w.c.t.Fatalf("worker %d did not end within %v", w.n, distDeadline)
	}
	return cmd.ProcessState.ExitCode()
}

// jobLines returns the lines of logs about the job of input base name
// (its "job ID (PATH): ..." lines).
func jobLines(logs, name string) []string {
	return lines(logs, string(filepath.Separator)+name+"): ")
}

// after returns the part of logs after the first line containing sub
// ("" when there is none).
func after(logs, sub string) string {
	i := strings.Index(logs, sub)
	if i < 0 {
		return ""
	}
	return logs[i:]
}

// TestDistributedSIGTERMWithinGrace: SIGTERM to a worker in the middle of
// a file (held at a gate) that finishes within --grace: the file commits
// on that worker, which takes no other job (seven wait in the queue) and
// exits 0; another worker then converts the seven.
func TestDistributedSIGTERMWithinGrace(t *testing.T) {
	skipShortDist(t)
	c := newCluster(t)
	c.startBroker()
	const held = "f000.dng"
	c.synthInput(held, 0)
	w0 := c.startWorker(false, []string{"RAWBATCH_TEST_FAULT=gate=" + held}, "--grace", "60s")
	c.waitWorkers(1)
	if code, stdout, stderr := c.submit(); code != 0 {
		t.Fatalf("submit exited %d\n%s\n%s", code, stdout, stderr)
	}
	c.waitPIDLine() // held is in flight on worker 0
	names := c.synthInputsBut(8, held)
	code, stdout, stderr := c.submit()
	if code != 0 {
		t.Fatalf("submit exited %d\n%s\n%s", code, stdout, stderr)
	}
	if q, a, _ := submitCounts(t, stdout+stderr); q != 7 || a != 1 {
		t.Fatalf("second submit: queued %d, already queued %d; want 7, 1", q, a)
	}
	w0.signal(syscall.SIGTERM)
	c.waitFor("worker 0 taking no more jobs", func() bool { return len(lines(c.workerLogs(w0), "taking no more jobs")) > 0 })
	c.openGate()
	if code := w0.waitExit(); code != 0 {
		t.Errorf("worker 0 exited %d after SIGTERM, want 0", code)
	}
	logs := c.workerLogs(w0)
	if n := commits(logs, names)[held]; n != 1 {
		t.Errorf("%s: committed %d times by worker 0 (signalled mid-file, let through within --grace), want once", held, n)
	}
	if taken := lines(logs, ": taken"); len(taken) != 1 {
		t.Errorf("worker 0 took %d jobs, want only %s (none after SIGTERM): %q", len(taken), held, taken)
	}
	if l := lines(after(logs, "taking no more jobs"), "handed back"); len(l) != 0 {
		t.Errorf("worker 0 handed a job back though it finished within --grace: %q", l)
	}
	if qi := c.info(); depth(qi) != 7 || qi.InFlight != 0 {
		t.Errorf("after worker 0's exit: %d jobs waiting, %d in flight; want 7, 0", depth(qi), qi.InFlight)
	}
	c.startWorker(false, nil)
	c.waitSettled(names)
	if dead, _ := c.checkInvariant(names); len(dead) != 0 {
		t.Errorf("dead letters: %v", dead)
	}
	if st := c.statuses()[held]; st.State != queue.Processed || st.Attempt != 1 {
		t.Errorf("%s: status %s at attempt %d, want processed on the first", held, st.State, st.Attempt)
	}
}

// TestDistributedSIGTERMPastGrace: SIGTERM to a worker whose file is held
// (a gate) past --grace (1 s): its conversion is stopped, the job handed
// back (worker 0 logs it and exits 0) and redelivered at once: the other
// worker commits it on attempt 2. The workers' ack wait is 20 s here
// (not the tests' 3 s): a job merely abandoned (not handed back) would
// come back only 20 s after worker 0's last beat, so its redelivery
// before that is the hand-back's (a bound by construction, 20 s against
// the 0.3 s measured; the delay is logged).
func TestDistributedSIGTERMPastGrace(t *testing.T) {
	skipShortDist(t)
	c := newCluster(t)
	c.startBroker()
	const held = "f003.dng"
	c.synthInput(held, 3)
	const ackWait = 20 * time.Second
	w0 := c.startWorker(false, []string{"RAWBATCH_TEST_FAULT=gate=" + held}, "--grace", "1s", "--ack-wait", ackWait.String())
	c.waitWorkers(1)
	if code, stdout, stderr := c.submit(); code != 0 {
		t.Fatalf("submit exited %d\n%s\n%s", code, stdout, stderr)
	}
	c.waitPIDLine()
	names := c.synthInputsBut(6, held)
	w1 := c.startWorker(false, nil, "--ack-wait", ackWait.String())
	c.waitWorkers(2)
	wait, _ := c.background("submit", c.in, "-o", c.out, "--wait")
	signalled := time.Now()
	w0.signal(syscall.SIGTERM)
	if code := w0.waitExit(); code != 0 {
		t.Errorf("worker 0 exited %d after SIGTERM, want 0", code)
	}
	exited := time.Now()
	if code, out := wait(); code != 0 {
		t.Fatalf("submit --wait exited %d\n%s", code, out)
	}
	dead, _ := c.checkInvariant(names)
	if len(dead) != 0 {
		t.Errorf("dead letters: %v", dead)
	}
	l0 := jobLines(c.workerLogs(w0), held)
	if len(lines(strings.Join(l0, "\n"), "attempt 1: stopped (shutting down): handed back")) != 1 {
		t.Errorf("worker 0 did not hand %s back on SIGTERM past --grace; its lines: %q", held, l0)
	}
	if n := commits(c.workerLogs(w0), names)[held]; n != 0 {
		t.Errorf("%s committed %d times by worker 0 after its grace", held, n)
	}
	l1 := jobLines(c.workerLogs(w1), held)
	if len(lines(strings.Join(l1, "\n"), "attempt 2: committed")) != 1 {
		t.Errorf("worker 1 did not commit %s on attempt 2 (the hand-back's redelivery); its lines: %q", held, l1)
	}
	st := c.statuses()[held]
	if st.State != queue.Processed || st.Attempt != 2 {
		t.Errorf("%s: status %s at attempt %d, want processed on the 2nd", held, st.State, st.Attempt)
	}
	if d := st.Started.Sub(exited); d >= ackWait-time.Second {
		t.Errorf("%s: attempt 2 started %v after worker 0's exit, about the ack wait (%v): it was not handed back", held, d, ackWait)
	}
	t.Logf("%s: worker 0 exited %v after SIGTERM (grace 1 s); attempt 2 started %v after its exit (ack wait %v)",
		held, exited.Sub(signalled).Round(10*time.Millisecond), st.Started.Sub(exited).Round(10*time.Millisecond), ackWait)
}

// TestDistributedSizeClasses: a small worker (--mem-budget 260MiB, which
// takes only the smallest size class, le256m) and a large one (2GiB);
// eight tiny files and two 48 MP ones (estimate over 256 MiB: class
// le512m or larger, over the small worker's budget): the small worker
// never takes a large file (its log and the statuses), all commit.
func TestDistributedSizeClasses(t *testing.T) {
	skipShortDist(t)
	c := newCluster(t)
	c.startBroker()
	small := c.startWorker(false, nil, "--mem-budget", "260MiB")
	large := c.startWorker(false, nil, "--mem-budget", "2GiB")
	c.waitWorkers(2)
	names := c.synthInputs(8)
	bigs := []string{"big0.dng", "big1.dng"}
	for _, b := range bigs {
		c.synthInputWH(b, 8000, 6000)
	}
	names = append(names, bigs...)
	code, stdout, stderr := c.submit("--wait")
	if code != 0 {
		t.Fatalf("submit --wait exited %d\n%s\n%s", code, stdout, stderr)
	}
	if dead, _ := c.checkInvariant(names); len(dead) != 0 {
		t.Errorf("dead letters: %v", dead)
	}
	sl, ll := c.workerLogs(small), c.workerLogs(large)
	sts := c.statuses()
	var largeName string
	if f := strings.Fields(strings.SplitN(ll, "\n", 2)[0]); len(f) > 2 {
		largeName = strings.TrimSuffix(f[2], ":") // "TIME worker HOST:PID: broker ..."
	}
	for _, b := range bigs {
		if l := jobLines(sl, b); len(l) != 0 {
			t.Errorf("the small worker (260 MiB) took %s (estimate over its budget): %q", b, l)
		}
		if n := commits(ll, names)[b]; n != 1 {
			t.Errorf("%s: committed %d times by the large worker, want once", b, n)
		}
		if st := sts[b]; largeName == "" || !strings.HasSuffix(st.Worker, " "+largeName) {
			t.Errorf("%s: status worker %q, want the large worker %q", b, st.Worker, largeName)
		}
	}
	ks := 0
	for _, k := range commits(sl, names) {
		ks += k
	}
	t.Logf("small worker committed %d tiny files, large worker %d files (2 of 48 MP)", ks, len(names)-ks)
	for _, line := range lines(sl, "for a bigger worker") {
		t.Logf("small worker: %s", line)
	}
}
