package main

// The harness of the multi-host mode's end-to-end tests (distributed_test.go):
// real processes of this test binary acting as
// rawbatch (TestMain puts it in $PATH as "rawbatch"): a broker in its own
// process (so that it can be killed with SIGKILL and stopped with SIGSTOP),
// `rawbatch work` processes under a supervisor that restarts a killed one
// (as systemd's Restart=always would), `rawbatch submit`, and the checks of
// the invariant on OUTDIR's records, the dead letters and the workers' logs.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/internal/faulttest"
	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
	"github.com/rawbatch/rawbatch/queue"
)

// The queue's timings in these tests (design.md: short, so that
// redeliveries come within seconds): AckWait 3 s, LeaseTTL 2 s, Beat
// 0.5 s, transient backoff 0.5 s, MaxDeliver 5.
var distTimings = []string{"--ack-wait", "3s", "--lease-ttl", "2s", "--beat", "500ms",
	"--max-deliver", "5", "--retry-backoff", "500ms,500ms,500ms"}

// distDeadline bounds every wait on the cluster's state: generous, as the
// machine is shared; a test that reaches it has failed.
const distDeadline = 90 * time.Second

// cluster is one test's set of processes and folders.
type cluster struct {
	t    testing.TB
	exe  string // the rawbatch in $PATH (this test binary)
	dir  string // the test's folder
	in   string // the inputs
	out  string // OUTDIR
	logs string // one log file per process run
	url  string // nats://127.0.0.1:PORT
	port int
	env  []string // the environment of every process

	mu      sync.Mutex
	broker  *exec.Cmd
	brokerN int
	workers []*distWorker
	bg      []*exec.Cmd // background commands (submit --wait)
	qc      *queue.Client
	done    bool
	// commitBase is subtracted from the commits counted in the workers'
	// logs by checkInvariant: the commits of an earlier batch of the same
	// inputs (a test that converts some again); an input committed then
	// may be committed once more or not at all.
	commitBase map[string]int
}

// newCluster makes a test's folders and environment; no process yet.
func newCluster(t testing.TB) *cluster {
	t.Helper()
	exe, err := exec.LookPath("rawbatch")
	if err != nil {
		t.Fatalf("rawbatch (this test binary, installed by TestMain) is not in $PATH: %v", err)
	}
	dir := t.TempDir()
	c := &cluster{t: t, exe: exe, dir: dir, in: filepath.Join(dir, "in"), out: filepath.Join(dir, "out"),
		logs: filepath.Join(dir, "logs"), port: freePort(t)}
	c.url = "nats://127.0.0.1:" + strconv.Itoa(c.port)
	for _, d := range []string{c.in, c.out, c.logs, filepath.Join(dir, "faults"), filepath.Join(dir, "cache")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c.env = append(os.Environ(),
		"RAWBATCH_NATS="+c.url,
		// Every client sets the consumers' ack wait and redelivery
		// bound when it connects (the last one wins): submit, status and
		// dead must have the workers' timings, as the docs tell a
		// studio to set them on every host.
		"RAWBATCH_ACK_WAIT=3s", "RAWBATCH_LEASE_TTL=2s", "RAWBATCH_BEAT=500ms", "RAWBATCH_MAX_DELIVER=5",
		"RAWBATCH_RETRY_BACKOFF=500ms,500ms,500ms",
		"RAWBATCH_MIN_AGE=0s",
		"RAWBATCH_CACHE_DIR="+filepath.Join(dir, "cache"),
		"XDG_CONFIG_HOME="+filepath.Join(dir, ".config"),
		faulttest.CountDirEnv+"="+filepath.Join(dir, "faults"),
		faulttest.PIDFileEnv+"="+filepath.Join(dir, "faults", "pids"),
		faulttest.GateEnv+"="+filepath.Join(dir, "faults", "gate"),
	)
	t.Cleanup(c.stop)
	return c
}

// freePort returns a TCP port that was free a moment ago on 127.0.0.1.
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// logFile creates the log file of one process run.
func (c *cluster) logFile(name string) *os.File {
	f, err := os.Create(filepath.Join(c.logs, name+".log"))
	if err != nil {
		c.t.Fatal(err)
	}
	return f
}

// command is rawbatch ARGS with the cluster's environment plus extra.
func (c *cluster) command(extra []string, args ...string) *exec.Cmd {
	cmd := exec.Command(c.exe, args...)
	cmd.Dir = c.dir
	cmd.Env = append(append([]string(nil), c.env...), extra...)
	return cmd
}

// startBroker starts `rawbatch broker` on the cluster's port and store
// (the same store after a restart) and waits until it accepts
// connections.
func (c *cluster) startBroker() {
	c.t.Helper()
	c.mu.Lock()
	c.brokerN++
	log := c.logFile(fmt.Sprintf("broker.%d", c.brokerN))
	cmd := c.command(nil, "broker", "--store", filepath.Join(c.dir, "store"), "--listen", "127.0.0.1:"+strconv.Itoa(c.port))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		c.mu.Unlock()
		c.t.Fatalf("rawbatch broker: %v", err)
	}
	c.broker = cmd
	c.mu.Unlock()
	go func() { cmd.Wait(); log.Close() }()
	c.waitListening()
}

// startNATSServer starts the external nats-server at path (Debian's
// 2.9.10) with JetStream on the cluster's port and a store of its own.
func (c *cluster) startNATSServer(path string) {
	c.t.Helper()
	c.mu.Lock()
	c.brokerN++
	log := c.logFile(fmt.Sprintf("nats-server.%d", c.brokerN))
	cmd := exec.Command(path, "-js", "-sd", filepath.Join(c.dir, "store"), "-a", "127.0.0.1", "-p", strconv.Itoa(c.port))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		c.mu.Unlock()
		c.t.Fatalf("%s: %v", path, err)
	}
	c.broker = cmd
	c.mu.Unlock()
	go func() { cmd.Wait(); log.Close() }()
	c.waitListening()
}

// waitListening waits until the broker's port accepts connections.
func (c *cluster) waitListening() {
	c.t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(c.port)
	c.waitFor("the broker listening on "+addr, func() bool {
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return false
		}
		conn.Close()
		return true
	})
}

// signalBroker sends sig to the broker process (SIGKILL, SIGSTOP,
// SIGCONT); after SIGKILL it waits for its end.
func (c *cluster) signalBroker(sig syscall.Signal) {
	c.t.Helper()
	c.mu.Lock()
	b := c.broker
	c.mu.Unlock()
	if err := b.Process.Signal(sig); err != nil {
		c.t.Fatalf("signal %v to the broker: %v", sig, err)
	}
	if sig == syscall.SIGKILL {
		c.waitFor("the killed broker's end", func() bool { return b.ProcessState != nil })
	}
}

// distWorker is one supervised `rawbatch work` process: restarted when it
// dies of a signal while restart is set.
type distWorker struct {
	c     *cluster
	n     int
	args  []string
	extra []string // environment of its first run only (a fault for it alone)

	mu      sync.Mutex
	cmd     *exec.Cmd
	runs    int
	restart bool
	exited  chan struct{} // closed when the current run ends
}

// startWorker starts `rawbatch work` with the test timings plus args;
// extra is added to the environment of its first run only (a restarted
// worker runs without it). With restart set, a run that dies of a signal
// is started again after 100 ms (systemd's Restart=always).
func (c *cluster) startWorker(restart bool, extra []string, args ...string) *distWorker {
	c.t.Helper()
	c.mu.Lock()
	w := &distWorker{c: c, n: len(c.workers), args: args, extra: extra, restart: restart}
	c.workers = append(c.workers, w)
	c.mu.Unlock()
	w.start()
	return w
}

func (w *distWorker) start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.runs++
	log := w.c.logFile(fmt.Sprintf("worker%d.%d", w.n, w.runs))
	// Every input and OUTDIR of these tests lies in the test's folder.
	args := append(append([]string{"work", "--jobs", "1", "--grace", "2s", "--allow", w.c.dir}, distTimings...), w.args...)
	var extra []string
	if w.runs == 1 {
		extra = w.extra
	}
	cmd := w.c.command(extra, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		w.c.t.Errorf("rawbatch work: %v", err)
		log.Close()
		return
	}
	w.cmd = cmd
	exited := make(chan struct{})
	w.exited = exited
	go func() {
		cmd.Wait()
		log.Close()
		close(exited)
		w.c.mu.Lock()
		done := w.c.done
		w.c.mu.Unlock()
		w.mu.Lock()
		again := w.restart && !done && w.cmd == cmd
		w.mu.Unlock()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); again && ok && ws.Signaled() {
			time.Sleep(100 * time.Millisecond)
			w.start()
		}
	}()
}

// pid is the process id of the worker's current run.
func (w *distWorker) pid() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cmd.Process.Pid
}

// kill sends SIGKILL to the worker's current run and waits for its end
// (the supervisor then restarts it if restart is set).
func (w *distWorker) kill() {
	w.mu.Lock()
	cmd, exited := w.cmd, w.exited
	w.mu.Unlock()
	cmd.Process.Kill()
	select {
	case <-exited:
	case <-time.After(distDeadline):
		w.c.t.Fatalf("worker %d did not end after SIGKILL", w.n)
	}
}

// runs returns how many times the worker was started.
func (w *distWorker) started() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.runs
}

// stop ends every process: workers with SIGTERM (graceful, then SIGKILL
// after 15 s), the broker with SIGCONT (if stopped) and SIGTERM.
func (c *cluster) stop() {
	c.mu.Lock()
	if c.done {
		c.mu.Unlock()
		return
	}
	c.done = true
	ws, b, bg := c.workers, c.broker, c.bg
	c.mu.Unlock()
	for _, cmd := range bg {
		cmd.Process.Kill()
	}
	for _, w := range ws {
		w.mu.Lock()
		cmd, exited := w.cmd, w.exited
		w.mu.Unlock()
		if cmd == nil {
			continue
		}
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	if b != nil && b.ProcessState == nil {
		b.Process.Signal(syscall.SIGCONT)
		b.Process.Signal(syscall.SIGTERM)
		for deadline := time.Now().Add(15 * time.Second); b.ProcessState == nil && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		if b.ProcessState == nil {
			b.Process.Kill()
		}
	}
	if c.t.Failed() {
		c.dumpLogs()
	}
}

// dumpLogs logs the tail of every process's log (for a failed test).
func (c *cluster) dumpLogs() {
	ents, _ := os.ReadDir(c.logs)
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(c.logs, e.Name()))
		if len(b) > 6000 {
			b = append([]byte("...\n"), b[len(b)-6000:]...)
		}
		c.t.Logf("--- %s:\n%s", e.Name(), b)
	}
}

// waitFor polls cond every 50 ms until it holds, failing the test after
// distDeadline.
func (c *cluster) waitFor(what string, cond func() bool) {
	c.t.Helper()
	for deadline := time.Now().Add(distDeadline); ; time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("waited %v for %s", distDeadline, what)
		}
	}
}

// run runs rawbatch ARGS to its end and returns its exit code, stdout and
// stderr (failing the test if it could not run or ran past distDeadline).
func (c *cluster) run(extra []string, args ...string) (int, string, string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), distDeadline)
	defer cancel()
	cmd := c.command(extra, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("rawbatch %s: %v", strings.Join(args, " "), err)
	}
	go func() {
		<-ctx.Done()
		if ctx.Err() == context.DeadlineExceeded {
			cmd.Process.Kill()
		}
	}()
	err := cmd.Wait()
	if ctx.Err() == context.DeadlineExceeded {
		c.t.Fatalf("rawbatch %s ran past %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), distDeadline, &stdout, &stderr)
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatalf("rawbatch %s: %v", strings.Join(args, " "), err)
	}
	return code, stdout.String(), stderr.String()
}

// mustRun is run that requires exit code 0.
func (c *cluster) mustRun(args ...string) string {
	c.t.Helper()
	code, stdout, stderr := c.run(nil, args...)
	if code != 0 {
		c.t.Fatalf("rawbatch %s exited %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout
}

// synthInputs writes n tiny synthetic DNGs (48×32 displayed pixels)
// in.../f000.dng, f001.dng, ... and returns their base names. Each file
// differs (a patch of its own), as photographs do.
func (c *cluster) synthInputs(n int) []string {
	c.t.Helper()
	var names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("f%03d.dng", i)
		c.synthInput(name, i)
		names = append(names, name)
	}
	return names
}

// synthInput writes one tiny synthetic DNG named name into the inputs.
func (c *cluster) synthInput(name string, i int) {
	c.t.Helper()
	x := 2 * (i % 20)
	ch := synthdng.Chart{W: 48, H: 32, Background: [3]float64{0.18, 0.18, 0.18},
		Patches: []synthdng.Patch{{X0: x, Y0: 0, X1: x + 8, Y1: 8, SRGBLinear: [3]float64{0.6, 0.05 + 0.01*float64(i%10), 0.05}}}}
	w, h, scene := synthdng.ChartScene(ch, 1, synthdng.DefaultColorMatrix, 1)
	if err := synthdng.WriteFile(filepath.Join(c.in, name), synthdng.Spec{Width: w, Height: h, BlackLevel: 256,
		WhiteLevel: 16383, Orientation: 1, Scene: scene}); err != nil {
		c.t.Fatal(err)
	}
}

// submit runs `rawbatch submit IN -o OUT` with args and returns its exit
// code and output.
func (c *cluster) submit(args ...string) (int, string, string) {
	c.t.Helper()
	return c.run(nil, append([]string{"submit", c.in, "-o", c.out}, args...)...)
}

// submitCounts reads submit's "queued N, already queued M, up to date K".
var submitCountsRE = regexp.MustCompile(`queued (\d+), already queued (\d+), up to date (\d+)`)

func submitCounts(t *testing.T, out string) (queued, already, upToDate int) {
	t.Helper()
	m := submitCountsRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("submit did not print \"queued N, already queued M, up to date K\":\n%s", out)
	}
	queued, _ = strconv.Atoi(m[1])
	already, _ = strconv.Atoi(m[2])
	upToDate, _ = strconv.Atoi(m[3])
	return
}

// record is the part of a record in OUTDIR/.rawbatch/state that the
// checks read (state's Record: its JSON names).
type record struct {
	Input      string    `json:"input"`
	Output     string    `json:"output"`
	OutputSize int64     `json:"output_size"`
	Claim      bool      `json:"claim"`
	Written    time.Time `json:"written"`
}

// records returns OUTDIR's records (not claims), by input base name.
func (c *cluster) records() map[string][]record {
	c.t.Helper()
	recs := map[string][]record{}
	root := filepath.Join(c.out, ".rawbatch", "state")
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") || strings.HasPrefix(d.Name(), ".tmp-") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		var r record
		if err := json.Unmarshal(b, &r); err != nil {
			c.t.Errorf("record %s: %v", p, err)
			return nil
		}
		if !r.Claim {
			recs[filepath.Base(r.Input)] = append(recs[filepath.Base(r.Input)], r)
		}
		return nil
	})
	return recs
}

// dead returns the dead letters (`rawbatch dead list --json`), by input
// base name.
func (c *cluster) dead() map[string]queue.DeadLetter {
	c.t.Helper()
	out := c.mustRun("dead", "list", "--json")
	var dls []queue.DeadLetter
	if err := json.Unmarshal([]byte(out), &dls); err != nil {
		c.t.Fatalf("dead list --json: %v\n%s", err, out)
	}
	m := map[string]queue.DeadLetter{}
	for _, d := range dls {
		if _, ok := m[filepath.Base(d.Job.Input)]; ok {
			c.t.Errorf("two dead letters of %s", d.Job.Input)
		}
		m[filepath.Base(d.Job.Input)] = d
	}
	return m
}

// temps returns the temporary output files (pipeline.TempPrefix) left
// under OUTDIR.
func (c *cluster) temps() []string {
	var left []string
	filepath.WalkDir(c.out, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), pipeline.TempPrefix) {
			left = append(left, p)
		}
		return nil
	})
	return left
}

// workerLogs returns the text of every run's log of worker w (all
// workers when w is nil).
func (c *cluster) workerLogs(w *distWorker) string {
	pattern := "worker*.log"
	if w != nil {
		pattern = fmt.Sprintf("worker%d.*.log", w.n)
	}
	files, _ := filepath.Glob(filepath.Join(c.logs, pattern))
	sort.Strings(files)
	var b strings.Builder
	for _, f := range files {
		t, _ := os.ReadFile(f)
		b.Write(t)
	}
	return b.String()
}

// commitLineRE matches a worker's log line of a job whose outputs and
// records it wrote (`rawbatch work` logs "job ID (INPUT): attempt N:
// committed" after the runner wrote the records): the commits counted by
// the checks. A conversion that was fenced, failed or found up to date
// logs no such line.
var commitLineRE = regexp.MustCompile(`(?m)^.*: attempt \d+: committed$`)

// commits counts, per input base name, the commit lines in logs.
func commits(logs string, names []string) map[string]int {
	n := map[string]int{}
	for _, line := range commitLineRE.FindAllString(logs, -1) {
		for _, name := range names {
			if strings.Contains(line, string(filepath.Separator)+name+")") {
				n[name]++
			}
		}
	}
	return n
}

// checkInvariant checks the queue's invariant over the inputs names: every
// job ends either with its outputs and a processed record or in the dead
// letters with a reason, never both, never neither; no temporary output
// file is left; each input was committed at most once (exactly once if
// it has a record), counted from the workers' logs. It returns the dead
// letters and the commits per input.
func (c *cluster) checkInvariant(names []string) (map[string]queue.DeadLetter, map[string]int) {
	c.t.Helper()
	recs, dead := c.records(), c.dead()
	n := commits(c.workerLogs(nil), names)
	for name, k := range c.commitBase {
		n[name] -= k
	}
	for _, name := range names {
		rs := recs[name]
		d, isDead := dead[name]
		switch {
		case len(rs) > 0 && isDead:
			c.t.Errorf("%s: both processed (a record) and in the dead letters (%s: %s)", name, d.Kind, d.Reason)
		case len(rs) == 0 && !isDead:
			c.t.Errorf("%s: neither processed (no record) nor in the dead letters", name)
		case isDead && (d.Reason == "" || d.Kind == ""):
			c.t.Errorf("%s: dead letter without a kind and reason: %+v", name, d)
		}
		if len(rs) > 1 {
			c.t.Errorf("%s: %d records, want one (one output per input)", name, len(rs))
		}
		for _, r := range rs {
			fi, err := os.Stat(filepath.Join(c.out, filepath.FromSlash(r.Output)))
			if err != nil {
				c.t.Errorf("%s: record of %s but its output: %v", name, r.Output, err)
			} else if fi.Size() != r.OutputSize {
				c.t.Errorf("%s: output %s is %d bytes, its record says %d", name, r.Output, fi.Size(), r.OutputSize)
			}
		}
		switch {
		case len(rs) > 0 && (n[name] > 1 || n[name]+c.commitBase[name] < 1):
			c.t.Errorf("%s: committed %d times by the workers (their logs; %d before commitBase), want once", name, n[name], c.commitBase[name])
		case len(rs) == 0 && n[name] != 0:
			c.t.Errorf("%s: in the dead letters but committed %d times by the workers", name, n[name])
		}
	}
	if left := c.temps(); len(left) > 0 {
		c.t.Errorf("temporary output files left: %q", left)
	}
	return dead, n
}

// waitSettled waits until every input of names has a record or a dead
// letter (polling the records every 50 ms, the dead letters every
// 500 ms while some inputs have no record).
func (c *cluster) waitSettled(names []string) {
	c.t.Helper()
	var lastDead time.Time
	c.waitFor(fmt.Sprintf("all %d jobs processed or dead", len(names)), func() bool {
		recs := c.records()
		var missing []string
		for _, n := range names {
			if len(recs[n]) == 0 {
				missing = append(missing, n)
			}
		}
		if len(missing) == 0 {
			return true
		}
		if time.Since(lastDead) < 500*time.Millisecond {
			return false
		}
		lastDead = time.Now()
		dead := c.dead()
		for _, n := range missing {
			if _, ok := dead[n]; !ok {
				return false
			}
		}
		return true
	})
}

// lines returns the lines of s that contain sub.
func lines(s, sub string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if strings.Contains(sc.Text(), sub) {
			out = append(out, sc.Text())
		}
	}
	return out
}

// waitPIDLine waits until the fault hooks' pid file has a line and
// returns the first pid in it.
func (c *cluster) waitPIDLine() int {
	c.t.Helper()
	p := filepath.Join(c.dir, "faults", "pids")
	var pid int
	c.waitFor("a hung conversion's pid in "+p, func() bool {
		b, err := os.ReadFile(p)
		if err != nil {
			return false
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return false
		}
		pid, err = strconv.Atoi(f[0])
		return err == nil
	})
	return pid
}

// parentOf returns the parent process id of pid (/proc/PID/stat).
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatal(err)
	}
	return ppid
}

// client returns a queue client of the cluster's broker with the tests'
// timings (the same as the workers', so that connecting changes no
// consumer), connected on first use and closed at the test's end; the
// tests read the queue's state (depth, workers, statuses) through it.
func (c *cluster) client() *queue.Client {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.qc != nil {
		return c.qc
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	qc, err := queue.Connect(ctx, queue.Options{URL: c.url, AckWait: 3 * time.Second, LeaseTTL: 2 * time.Second,
		Beat: 500 * time.Millisecond, MaxDeliver: 5, Backoff: []time.Duration{500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond},
		Name: "test " + c.t.Name()})
	if err != nil {
		c.t.Fatalf("queue.Connect %s: %v", c.url, err)
	}
	c.qc = qc
	c.t.Cleanup(qc.Close)
	return qc
}

// info returns the queue's state (nil error or the test fails).
func (c *cluster) info() queue.QueueInfo {
	c.t.Helper()
	c.client()
	qi, err := c.tryInfo()
	if err != nil {
		c.t.Fatalf("queue info: %v", err)
	}
	return qi
}

// tryInfo returns the queue's state or the error (for goroutines other
// than the test's; the client must be connected already).
func (c *cluster) tryInfo() (queue.QueueInfo, error) {
	c.mu.Lock()
	qc := c.qc
	c.mu.Unlock()
	if qc == nil {
		return queue.QueueInfo{}, errors.New("queue client not connected")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return qc.Info(ctx)
}

// statuses returns the jobs' statuses by input base name.
func (c *cluster) statuses() map[string]queue.Status {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sts, err := c.client().Statuses(ctx, "")
	if err != nil {
		c.t.Fatalf("queue statuses: %v", err)
	}
	m := map[string]queue.Status{}
	for _, s := range sts {
		m[filepath.Base(s.Input)] = s
	}
	return m
}

// waitWorkers waits until n workers are in the registry. An info call
// that fails is tried again until the deadline: on a cluster that has
// just formed, a consumer may still be electing its leader.
func (c *cluster) waitWorkers(n int) {
	c.t.Helper()
	c.client()
	var last error
	c.waitFor(fmt.Sprintf("%d workers registered", n), func() bool {
		qi, err := c.tryInfo()
		if err != nil {
			if last == nil || err.Error() != last.Error() {
				c.t.Logf("queue info while waiting for workers: %v", err)
			}
			last = err
			return false
		}
		return len(qi.Workers) >= n
	})
}

// waitWorkersBack waits until n workers have refreshed their registry
// entry after t0 (they reach the broker again: reconnected by
// themselves).
func (c *cluster) waitWorkersBack(n int, t0 time.Time) {
	c.t.Helper()
	c.waitFor(fmt.Sprintf("%d workers back in the registry", n), func() bool {
		qi, err := c.tryInfo()
		if err != nil {
			return false
		}
		k := 0
		for _, w := range qi.Workers {
			if w.Seen.After(t0) {
				k++
			}
		}
		return k >= n
	})
}

// depth is the number of jobs waiting, all classes.
func depth(qi queue.QueueInfo) int {
	n := 0
	for _, d := range qi.Depth {
		n += d
	}
	return n
}

// pids returns the pids in the fault hooks' pid file (gate, hangtemp,
// hangconverted append theirs).
func (c *cluster) pids() []int {
	b, _ := os.ReadFile(filepath.Join(c.dir, "faults", "pids"))
	var ps []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// openGate opens the gate of the gate fault.
func (c *cluster) openGate() {
	c.t.Helper()
	if err := os.WriteFile(filepath.Join(c.dir, "faults", "gate"), nil, 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// background runs rawbatch ARGS in the background; wait returns its exit
// code and output, running whether it is still running.
func (c *cluster) background(args ...string) (wait func() (int, string), running func() bool) {
	type res struct {
		code int
		out  string
	}
	ch := make(chan res, 1)
	go func() {
		cmd := c.command(nil, args...)
		var out lockedBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		code := -1
		if err := cmd.Start(); err == nil {
			c.mu.Lock()
			c.bg = append(c.bg, cmd)
			c.mu.Unlock()
			err = cmd.Wait()
			code = 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			}
		} else {
			out.Write([]byte(err.Error()))
		}
		ch <- res{code, out.String()}
	}()
	var got *res
	wait = func() (int, string) {
		c.t.Helper()
		if got != nil {
			return got.code, got.out
		}
		select {
		case r := <-ch:
			got = &r
			return r.code, r.out
		case <-time.After(distDeadline):
			c.t.Fatalf("rawbatch %s ran past %v", strings.Join(args, " "), distDeadline)
		}
		return 0, ""
	}
	running = func() bool {
		if got != nil {
			return false
		}
		select {
		case r := <-ch:
			got = &r
			return false
		default:
			return true
		}
	}
	return wait, running
}
