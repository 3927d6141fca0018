package main

// The multi-host mode's end-to-end tests, with real processes
// (distributed_harness_test.go): a broker (`rawbatch broker`, or Debian's
// nats-server), three `rawbatch work`, `rawbatch submit`, on tiny synthetic
// DNGs, with the queue's timings short (AckWait 3 s, LeaseTTL 2 s,
// Beat 0.5 s, backoff 0.5 s, MaxDeliver 5). After each, checkInvariant:
// every job has its output and a record, or a dead letter with a reason,
// never both, never neither; no temporary output file left; each input
// committed at most once.

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/internal/testtool"
	"github.com/rawbatch/rawbatch/queue"
)

// distFiles is how many inputs each test converts.
const distFiles = 60

// skipShortDist skips the end-to-end tests under -short (make
// test-short); make test runs them.
func skipShortDist(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end multi-host test (make test runs it)")
	}
}

// convertCountsRE reads convert's summary "N converted, M skipped".
var convertCountsRE = regexp.MustCompile(`(\d+) converted, (\d+) skipped`)

// basicRun is the three-worker run of 60 files against the broker c runs:
// 60 commits, every worker did some, no dead letter, a second submit queues
// nothing, convert then converts nothing.
func basicRun(t *testing.T, c *cluster) {
	ws := []*distWorker{c.startWorker(false, nil), c.startWorker(false, nil), c.startWorker(false, nil)}
	c.waitWorkers(3)
	names := c.synthInputs(distFiles)
	code, stdout, stderr := c.submit("--wait", "--report", filepath.Join(c.dir, "report.json"))
	if code != 0 {
		t.Fatalf("submit --wait exited %d\n%s\n%s", code, stdout, stderr)
	}
	if q, a, u := submitCounts(t, stdout+stderr); q != distFiles || a != 0 || u != 0 {
		t.Errorf("submit: queued %d, already queued %d, up to date %d; want %d, 0, 0", q, a, u, distFiles)
	}
	dead, n := c.checkInvariant(names)
	if len(dead) != 0 {
		t.Errorf("%d dead letters, want none: %v", len(dead), dead)
	}
	total := 0
	for _, k := range n {
		total += k
	}
	if total != distFiles {
		t.Errorf("%d commits in the workers' logs, want %d", total, distFiles)
	}
	for _, w := range ws {
		k := 0
		for _, m := range commits(c.workerLogs(w), names) {
			k += m
		}
		if k == 0 {
			t.Errorf("worker %d committed no file (want every worker to take some)", w.n)
		}
		t.Logf("worker %d committed %d files", w.n, k)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "report.json")); err != nil {
		t.Errorf("submit --wait --report wrote no report: %v", err)
	}

	// The same folder again: no job.
	code, stdout, stderr = c.submit()
	if code != 0 {
		t.Fatalf("second submit exited %d\n%s\n%s", code, stdout, stderr)
	}
	if q, _, u := submitCounts(t, stdout+stderr); q != 0 || u != distFiles {
		t.Errorf("second submit: queued %d, up to date %d; want 0, %d", q, u, distFiles)
	}
	if qi := c.info(); depth(qi) != 0 || qi.InFlight != 0 {
		t.Errorf("after the second submit: depth %v, in flight %d; want none", qi.Depth, qi.InFlight)
	}

	// A plain convert of the folder converts nothing.
	code, stdout, stderr = c.run(nil, "convert", c.in, "-o", c.out)
	m := convertCountsRE.FindStringSubmatch(stdout + stderr)
	if code != 0 || m == nil || m[1] != "0" || m[2] != strconv.Itoa(distFiles) {
		t.Errorf("convert after the distributed run: exit %d, summary %q; want 0 converted, %d skipped\n%s", code, m, distFiles, stderr)
	}
}

// TestDistributedThreeWorkers: three workers and 60 files with the
// embedded broker (`rawbatch broker`).
func TestDistributedThreeWorkers(t *testing.T) {
	skipShortDist(t)
	c := newCluster(t)
	c.startBroker()
	basicRun(t, c)
}

// natsServerPath is Debian's nats-server (/usr/sbin is not in every
// $PATH), else the one testtool.Need finds (failing under CI=true when
// there is none).
func natsServerPath(t *testing.T) string {
	if _, err := os.Stat("/usr/sbin/nats-server"); err == nil {
		return "/usr/sbin/nats-server"
	}
	return testtool.Need(t, "nats-server")
}

// TestDistributedNATSServer: the same run against an external nats-server
// (Debian 12's 2.9.10 in CI: the feature floor).
func TestDistributedNATSServer(t *testing.T) {
	skipShortDist(t)
	path := natsServerPath(t)
	c := newCluster(t)
	c.startNATSServer(path)
	basicRun(t, c)
	if v, err := exec.Command(path, "--version").Output(); err == nil {
		t.Logf("against %s", strings.TrimSpace(string(v)))
	}
}

// TestDistributedWorkerKilledMidFile: kill -9 of a worker in the middle of
// a file (its temporary output written, not yet renamed into place): the
// file is redelivered and committed once by another worker; no temporary
// file remains. The killed worker is restarted (supervisor) without the
// fault.
func TestDistributedWorkerKilledMidFile(t *testing.T) {
	skipShortDist(t)
	c := newCluster(t)
	c.startBroker()
	names := c.synthInputs(distFiles)
	const victim = "f007.dng"
	w0 := c.startWorker(true, []string{"RAWBATCH_TEST_FAULT=hangtemp=" + victim})
	c.waitWorkers(1)
	wait, _ := c.background("submit", c.in, "-o", c.out, "--wait")
	pid := c.waitPIDLine()
	if pp := parentOf(t, pid); pp != w0.pid() {
		t.Fatalf("the hung conversion (pid %d) is a child of %d, not of worker 0 (%d)", pid, pp, w0.pid())
	}
	var tmp []string
	for _, p := range c.temps() {
		if strings.Contains(filepath.Base(p), strings.TrimSuffix(victim, ".dng")) {
			tmp = append(tmp, p)
		}
	}
	if len(tmp) == 0 {
		t.Fatalf("%s hangs with no temporary output on disk (%q): the kill would not be mid-file", victim, c.temps())
	}
	c.startWorker(false, nil)
	c.startWorker(false, nil)
	killed := time.Now()
	w0.kill()
	code, out := wait()
	if code != 0 {
		t.Fatalf("submit --wait exited %d\n%s", code, out)
	}
	dead, _ := c.checkInvariant(names)
	if len(dead) != 0 {
		t.Errorf("dead letters: %v", dead)
	}
	st := c.statuses()[victim]
	if st.State != queue.Processed || st.Attempt < 2 {
		t.Errorf("%s: status %s attempt %d, want processed on a redelivery (attempt ≥ 2)", victim, st.State, st.Attempt)
	}
	if rs := c.records()[victim]; len(rs) == 1 && rs[0].Written.Before(killed) {
		t.Errorf("%s: its record was written at %v, before its worker was killed (%v)", victim, rs[0].Written, killed)
	}
	if w0.started() != 2 {
		t.Errorf("worker 0 started %d times, want 2 (killed once, restarted)", w0.started())
	}
	t.Logf("%s redelivered %v after the kill (attempt %d)", victim, st.Ended.Sub(killed).Round(100*time.Millisecond), st.Attempt)
}

// TestDistributedBrokerKilled: kill -9 of the broker (with a file in
// flight, held at a gate) and a restart on the same store: no submitted
// job is lost, the file in flight commits once after the workers
// reconnect.
func TestDistributedBrokerKilled(t *testing.T) {
	skipShortDist(t)
	c := newCluster(t)
	c.startBroker()
	const held = "f020.dng"
	var ws []*distWorker
	for range 3 {
		ws = append(ws, c.startWorker(false, []string{"RAWBATCH_TEST_FAULT=gate=" + held}))
	}
	c.waitWorkers(3)
	names := c.synthInputs(distFiles)
	code, stdout, stderr := c.submit()
	if code != 0 {
		t.Fatalf("submit exited %d\n%s\n%s", code, stdout, stderr)
	}
	if q, _, _ := submitCounts(t, stdout+stderr); q != distFiles {
		t.Fatalf("submit queued %d, want %d", q, distFiles)
	}
	c.waitPIDLine() // held is in flight
	c.signalBroker(syscall.SIGKILL)
	killed := time.Now()
	c.startBroker()
	restarted := time.Now()
	t.Logf("broker restarted %v after its kill", restarted.Sub(killed).Round(10*time.Millisecond))
	c.openGate()
	c.waitSettled(names)
	dead, _ := c.checkInvariant(names)
	if len(dead) != 0 {
		t.Errorf("dead letters: %v", dead)
	}
	c.waitWorkersBack(len(ws), restarted)
	if st := c.statuses()[held]; st.State != queue.Processed {
		t.Errorf("%s: status %s, want processed", held, st.State)
	} else {
		t.Logf("%s: processed at attempt %d, %v after the broker's restart", held, st.Attempt, st.Ended.Sub(restarted).Round(10*time.Millisecond))
	}
}

// TestDistributedPoisonSet: a truncated DNG goes to the dead letters on
// its first attempt ("corrupt"); a file that crashes the decoder with
// "decoder crashed"; a transient fault that fails twice succeeds on the
// third delivery; a file that kills its worker every time reaches the
// dead letters after 5 deliveries (5 workers killed, restarted by their
// supervisor); the other files are unaffected.
func TestDistributedPoisonSet(t *testing.T) {
	skipShortDist(t)
	c := newCluster(t)
	c.startBroker()
	names := c.synthInputs(distFiles - 4)
	c.synthInput("truncated.dng", 70)
	b, err := os.ReadFile(filepath.Join(c.in, "truncated.dng"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.in, "truncated.dng"), b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	// Truncated long ago: one modified within a minute is a copy in
	// progress, left for later rather than failed.
	old := time.Now().Add(-5 * time.Minute)
	if err := os.Chtimes(filepath.Join(c.in, "truncated.dng"), old, old); err != nil {
		t.Fatal(err)
	}
	c.synthInput("crash.dng", 71)
	c.synthInput("flaky.dng", 72)
	c.synthInput("killer.dng", 73)
	names = append(names, "truncated.dng", "crash.dng", "flaky.dng", "killer.dng")
	c.env = append(c.env, "RAWBATCH_TEST_FAULT=crash=crash.dng,transient=flaky.dng:2,killworker=killer.dng")
	ws := []*distWorker{c.startWorker(true, nil), c.startWorker(true, nil), c.startWorker(true, nil)}
	c.waitWorkers(3)
	code, stdout, stderr := c.submit("--wait")
	if code != ExitFailures {
		t.Errorf("submit --wait of a poison set exited %d, want %d (some failed)\n%s\n%s", code, ExitFailures, stdout, stderr)
	}
	c.waitSettled(names)
	dead, _ := c.checkInvariant(names)
	if len(dead) != 3 {
		t.Errorf("%d dead letters, want 3 (truncated, crash, killer): %v", len(dead), dead)
	}
	if d := dead["truncated.dng"]; d.Kind != "corrupt" || d.Attempts != 1 {
		t.Errorf("truncated.dng: dead letter kind %q after %d attempts (%s), want corrupt on the first", d.Kind, d.Attempts, d.Reason)
	}
	if d := dead["crash.dng"]; !strings.Contains(d.Reason, "decoder crashed") || d.Attempts != 1 {
		t.Errorf("crash.dng: dead letter %q after %d attempts, want \"decoder crashed\" on the first", d.Reason, d.Attempts)
	}
	if d := dead["killer.dng"]; d.Kind != "redelivered" || d.Attempts != 6 {
		t.Errorf("killer.dng: dead letter kind %q at delivery %d (%s), want redelivered at the 6th, after 5", d.Kind, d.Attempts, d.Reason)
	}
	killed := 0
	for _, w := range ws {
		killed += w.started() - 1
	}
	if killed != 5 {
		t.Errorf("%d workers were killed (by killer.dng), want 5: one per delivery before it went to the dead letters", killed)
	}
	if st := c.statuses()["flaky.dng"]; st.State != queue.Processed || st.Attempt != 3 {
		t.Errorf("flaky.dng: status %s at attempt %d, want processed on the 3rd", st.State, st.Attempt)
	}
	if b, _ := os.ReadFile(filepath.Join(c.dir, "faults", "transient.flaky.dng")); len(b) != 3 {
		t.Errorf("flaky.dng was converted %d times, want 3", len(b))
	}
}

// TestDistributedPartition: the broker stopped (SIGSTOP) for twice the
// ack deadline with three files in flight (held at a gate, opened while
// the broker is stopped): their workers are fenced and commit nothing,
// the redelivered jobs commit once, the workers reconnect by themselves.
func TestDistributedPartition(t *testing.T) {
	skipShortDist(t)
	c := newCluster(t)
	c.startBroker()
	held := []string{"f005.dng", "f006.dng", "f007.dng"}
	fault := "RAWBATCH_TEST_FAULT=gate=" + strings.Join(held, ",gate=")
	var ws []*distWorker
	for range 3 {
		ws = append(ws, c.startWorker(false, []string{fault}))
	}
	c.waitWorkers(3)
	names := c.synthInputs(distFiles)
	wait, _ := c.background("submit", c.in, "-o", c.out, "--wait")
	c.waitFor("the three held files in flight", func() bool { return len(c.pids()) >= 3 })
	c.signalBroker(syscall.SIGSTOP)
	stopped := time.Now()
	c.waitFor("every worker fenced", func() bool {
		for _, w := range ws {
			if len(lines(c.workerLogs(w), "fenced")) == 0 {
				return false
			}
		}
		return true
	})
	fenced := time.Since(stopped)
	// Their conversions go on if fencing did not stop them: they must
	// commit nothing all the same.
	c.openGate()
	if d := 2*3*time.Second - time.Since(stopped); d > 0 {
		time.Sleep(d) // the partition lasts twice the ack deadline (the scenario, not a wait for a state)
	}
	for _, h := range held {
		if rs := c.records()[h]; len(rs) != 0 {
			t.Errorf("%s committed while the broker was stopped (by a fenced worker)", h)
		}
	}
	c.signalBroker(syscall.SIGCONT)
	resumed := time.Now()
	code, out := wait()
	if code != 0 {
		t.Errorf("submit --wait exited %d\n%s", code, out)
	}
	c.waitSettled(names)
	dead, _ := c.checkInvariant(names)
	if len(dead) != 0 {
		t.Errorf("dead letters: %v", dead)
	}
	sts := c.statuses()
	for _, h := range held {
		if st := sts[h]; st.State != queue.Processed || st.Attempt < 2 {
			t.Errorf("%s: status %s attempt %d, want processed on a redelivery", h, st.State, st.Attempt)
		}
		if rs := c.records()[h]; len(rs) == 1 && rs[0].Written.Before(resumed) {
			t.Errorf("%s: record written at %v, before the broker resumed (%v)", h, rs[0].Written, resumed)
		}
		t.Logf("%s: attempt %d started %v after the broker resumed", h, sts[h].Attempt, sts[h].Started.Sub(resumed).Round(10*time.Millisecond))
	}
	c.waitWorkersBack(len(ws), resumed)
	t.Logf("workers fenced %v after the broker stopped", fenced.Round(10*time.Millisecond))
}

// TestDistributedBackpressure: with --queue-max 10, a submit of 60 files
// waits while the queue is full (no worker yet: the queue holds 10 and
// submit is still running), then all 60 complete once workers start; the
// queue never holds more than 10.
func TestDistributedBackpressure(t *testing.T) {
	skipShortDist(t)
	c := newCluster(t)
	c.startBroker()
	names := c.synthInputs(distFiles)
	wait, running := c.background("submit", c.in, "-o", c.out, "--queue-max", "10", "--wait")
	c.waitFor("a full queue (10 jobs waiting)", func() bool { return depth(c.info()) == 10 })
	if !running() {
		code, out := wait()
		t.Fatalf("submit ended (exit %d) with the queue full and no worker: it did not wait\n%s", code, out)
	}
	done := make(chan struct{})
	maxSeen := 0
	go func() {
		defer close(done)
		for deadline := time.Now().Add(distDeadline); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if qi, err := c.tryInfo(); err == nil {
				maxSeen = max(maxSeen, depth(qi)+qi.InFlight)
			}
			if len(c.records()) == distFiles {
				return
			}
		}
	}()
	for range 3 {
		c.startWorker(false, nil)
	}
	code, out := wait()
	<-done
	if code != 0 {
		t.Fatalf("submit --queue-max 10 --wait exited %d\n%s", code, out)
	}
	if maxSeen > 10 {
		t.Errorf("the queue held %d jobs (waiting + in flight), over --queue-max 10", maxSeen)
	}
	dead, _ := c.checkInvariant(names)
	if len(dead) != 0 {
		t.Errorf("dead letters: %v", dead)
	}
}

// TestDistributedBrokerStoreLost: the records in OUTDIR stay the source
// of truth. A batch done by two workers; the broker killed, its store
// deleted, a new broker on an empty store (the workers keep running); the
// user deletes three outputs and rewrites one input with new content; a
// submit of the same folder queues exactly those four (the others are up
// to date by their records), the workers convert only them, each once.
func TestDistributedBrokerStoreLost(t *testing.T) {
	skipShortDist(t)
	c := newCluster(t)
	c.startBroker()
	ws := []*distWorker{c.startWorker(false, nil), c.startWorker(false, nil)}
	c.waitWorkers(len(ws))
	const n = 12
	names := c.synthInputs(n)
	if code, stdout, stderr := c.submit("--wait"); code != 0 {
		t.Fatalf("first submit --wait exited %d\n%s\n%s", code, stdout, stderr)
	}
	if dead, _ := c.checkInvariant(names); len(dead) != 0 {
		t.Fatalf("first batch: dead letters: %v", dead)
	}

	c.signalBroker(syscall.SIGKILL)
	if err := os.RemoveAll(filepath.Join(c.dir, "store")); err != nil {
		t.Fatal(err)
	}
	c.startBroker()
	c.dropClient()
	if qi := c.info(); depth(qi) != 0 || len(c.statuses()) != 0 {
		t.Fatalf("the new broker's store is not empty: depth %v, %d statuses", qi.Depth, len(c.statuses()))
	}

	recs := c.records()
	redo := map[string]bool{"f002.dng": true, "f005.dng": true, "f009.dng": true, "f004.dng": true}
	for _, name := range []string{"f002.dng", "f005.dng", "f009.dng"} {
		if err := os.Remove(filepath.Join(c.out, filepath.FromSlash(recs[name][0].Output))); err != nil {
			t.Fatal(err)
		}
	}
	c.synthInput("f004.dng", 40) // new content (another patch), a new mtime
	c.commitBase = commits(c.workerLogs(nil), names)

	code, stdout, stderr := c.submit("--wait")
	if code != 0 {
		t.Fatalf("submit --wait after the store's loss exited %d\n%s\n%s", code, stdout, stderr)
	}
	if q, a, u := submitCounts(t, stdout+stderr); q != len(redo) || a != 0 || u != n-len(redo) {
		t.Errorf("submit after the store's loss: queued %d, already queued %d, up to date %d; want %d, 0, %d", q, a, u, len(redo), n-len(redo))
	}
	dead, again := c.checkInvariant(names)
	if len(dead) != 0 {
		t.Errorf("dead letters: %v", dead)
	}
	for _, name := range names {
		if want := map[bool]int{true: 1, false: 0}[redo[name]]; again[name] != want {
			t.Errorf("%s: converted %d times after the store's loss, want %d", name, again[name], want)
		}
	}
	sts := c.statuses()
	if len(sts) != len(redo) {
		t.Errorf("%d statuses on the new broker, want %d (only the jobs of the rebuilt queue)", len(sts), len(redo))
	}
	for name := range redo {
		if st := sts[name]; st.State != queue.Processed {
			t.Errorf("%s: status %q on the new broker, want processed", name, st.State)
		}
	}
	if rs := c.records()["f004.dng"]; len(rs) == 1 && !rs[0].Written.After(recs["f004.dng"][0].Written) {
		t.Errorf("f004.dng (new content): its record was not rewritten (%v)", rs[0].Written)
	}
}
