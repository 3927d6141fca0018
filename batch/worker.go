package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rawbatch/rawbatch/pipeline"

	"golang.org/x/sys/unix"

	"github.com/rawbatch/rawbatch/internal/fault"
	"github.com/rawbatch/rawbatch/internal/rawerr"
)

// Each file is converted in a child worker process of the rawbatch binary
// (`rawbatch worker`), so that LibRaw crashing (SIGSEGV) or looping on a
// malformed file fails that file only. The parent writes a workerRequest as
// JSON to the child's stdin and reads a workerReply from its stdout; the
// child's stderr (LibRaw's and libjpeg's messages) is kept as warnings of
// that file.
//
// The wire format is versioned (wireVersion): a worker refuses a request
// of another version (exit status 2, the reason on its stderr) and the
// parent a reply of another version, so a parent and a worker of different
// rawbatch builds never misread each other. Every path, and every text
// that may hold one (the error and the warnings), travels as bytes (base64
// in JSON): file names need not be UTF-8, and encoding/json would replace
// invalid bytes in a string by U+FFFD. Error kinds travel as rawerr.Kind's
// names (plus "transient", ErrTransient).

// wireVersion is the version of workerRequest and workerReply. Raise it on
// any change that an older parent or worker would misread.
const wireVersion = 1

// workerRequest is what the parent sends a worker.
type workerRequest struct {
	// Version is the wire format's version (wireVersion).
	Version  int
	Input    []byte
	Outputs  []workerOutput
	Settings pipeline.Settings
	// Threads is LibRaw's OpenMP thread cap and the worker's GOMAXPROCS
	// (Job.Threads; 0: the defaults), beside Settings.
	Threads int
	Cache   *CacheRequest
	// Estimate is the conversion's memory estimate in bytes (0: none),
	// Whole its whole-image estimate (Job.Whole).
	Estimate, Whole int64
	// Identify, when set, makes the worker a header helper: it reads the
	// header of this path with LibRaw instead of converting anything (see
	// HeaderReader), then serves further such requests.
	Identify []byte `json:",omitempty"`
}

// decodeRequest reads the next request from dec. Errors: io.EOF at the end
// of the input, a JSON error, or a request of another wire version (checked
// before the rest of the request is decoded, which that version may lay out
// differently).
func decodeRequest(dec *json.Decoder) (workerRequest, error) {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return workerRequest{}, err
	}
	var v struct{ Version int }
	if err := json.Unmarshal(raw, &v); err != nil {
		return workerRequest{}, err
	}
	if v.Version != wireVersion {
		return workerRequest{}, fmt.Errorf("request of wire format version %d, this worker speaks version %d (the parent is another rawbatch build)", v.Version, wireVersion)
	}
	var req workerRequest
	err := json.Unmarshal(raw, &req)
	return req, err
}

// secondsText writes d in seconds for messages: whole seconds from 10 s,
// else to a tenth ("63", "2.5", "3").
func secondsText(d time.Duration) string {
	if d >= 10*time.Second {
		return strconv.FormatFloat(math.Round(d.Seconds()), 'f', 0, 64)
	}
	return strconv.FormatFloat(math.Round(d.Seconds()*10)/10, 'f', -1, 64)
}

type workerOutput struct {
	Variant pipeline.Variant
	Path    []byte
}

// dir and max are the request's cache directory and size cap; none when
// the request has no cache.
func (c *CacheRequest) dir() []byte {
	if c == nil {
		return nil
	}
	return c.Dir
}

func (c *CacheRequest) max() int64 {
	if c == nil {
		return 0
	}
	return c.Max
}

// workerReply is what a worker sends back: its Result, whose paths and
// texts travel in the byte fields beside it (see newReply, reply.result).
type workerReply struct {
	// Version is the wire format's version (wireVersion).
	Version int
	// Result is the conversion's result without its Input, Output,
	// Variants' Path and Warnings, which are Input, Output, VariantPaths
	// and Warnings here.
	Result       pipeline.Result
	Input        []byte
	Output       []byte
	VariantPaths [][]byte
	Warnings     [][]byte
	// Err is the failure's text (nil: none), Kind its rawerr kind
	// ("corrupt", ..., see rawerr.Kind) or "transient" (ErrTransient).
	Err  []byte `json:",omitempty"`
	Kind string `json:",omitempty"`
}

// newReply is the reply of a conversion that returned res and err.
func newReply(res pipeline.Result, err error) workerReply {
	rep := workerReply{Version: wireVersion, Input: []byte(res.Input), Output: []byte(res.Output)}
	for _, w := range res.Warnings {
		rep.Warnings = append(rep.Warnings, []byte(w))
	}
	res.Input, res.Output, res.Warnings = "", "", nil
	res.Variants = append([]pipeline.VariantResult(nil), res.Variants...)
	for i := range res.Variants {
		rep.VariantPaths = append(rep.VariantPaths, []byte(res.Variants[i].Path))
		res.Variants[i].Path = ""
	}
	rep.Result = res
	if err != nil {
		rep.Err, rep.Kind = []byte(err.Error()), rawerr.Kind(err)
		if errors.Is(err, rawerr.ErrNeedsWhole) {
			rep.Kind = rawerr.KindNeedsWhole
		}
		if transient(err) {
			rep.Kind = rawerr.KindTransient
		}
	}
	return rep
}

// result rebuilds the worker's Result and error (with its kind, see
// replyError) from its reply. Errors: a reply of another wire version.
func (rep workerReply) result() (pipeline.Result, error) {
	if rep.Version != wireVersion {
		return pipeline.Result{}, fmt.Errorf("worker reply of wire format version %d, want %d", rep.Version, wireVersion)
	}
	res := rep.Result
	res.Input, res.Output = string(rep.Input), string(rep.Output)
	for _, w := range rep.Warnings {
		res.Warnings = append(res.Warnings, string(w))
	}
	res.Variants = append([]pipeline.VariantResult(nil), res.Variants...)
	for i := range res.Variants {
		if i < len(rep.VariantPaths) {
			res.Variants[i].Path = string(rep.VariantPaths[i])
		}
	}
	if rep.Err == nil {
		return res, nil
	}
	return res, replyError(string(rep.Err), rep.Kind)
}

// FaultEnv names the environment variable of the fault hooks read by
// workers in test builds: "crash=NAME" makes the decode of the input whose
// base name is NAME die with SIGSEGV, "hang=NAME" makes it hang,
// "hangheader=NAME" makes LibRaw's header open of NAME never return,
// "gate=NAME" makes it wait at a gate before decoding, "rewrite=NAME"
// rewrites it in place once decoded (see package internal/faulttest);
// several are separated by commas. The hooks exist only in binaries that
// import package internal/faulttest (test binaries): a release rawbatch
// ignores the variable.
const FaultEnv = "RAWBATCH_TEST_FAULT"

// WorkerMain is the body of `rawbatch worker`: it reads one request from
// r, converts the file, writes the reply to w and returns the exit status
// (0, or 2 for a request it cannot read or of another wire version, with
// the reason on stderr).
func WorkerMain(r io.Reader, w io.Writer) int { return workerMain(r, w, os.Stderr) }

// workerMain is WorkerMain with its messages written to errw.
func workerMain(r io.Reader, w io.Writer, errw io.Writer) int {
	dec := json.NewDecoder(r)
	req, err := decodeRequest(dec)
	if err != nil {
		fmt.Fprint(errw, failedLine("error", fmt.Sprintf("bad request: %v", err)))
		return 2
	}
	if req.Identify != nil {
		// A header helper (HeaderReader): one LibRaw header read per
		// request until its stdin closes.
		return identifyLoop(dec, req, w, errw)
	}
	in := string(req.Input)
	if req.Threads > 0 {
		// The conversion's share of the CPUs, decided at its admission,
		// as for LibRaw's OpenMP threads: the Go stages' row loops
		// (par.Rows) use as many, so that the workers running at once do
		// not oversubscribe the machine and one running alone uses all.
		runtime.GOMAXPROCS(req.Threads)
	}
	// The parent may raise the threads while the file converts: "threads
	// N" lines after the request (workerthreads.go).
	live := &workerThreads{n: req.Threads, max: req.Threads}
	var liveNow func() int
	if req.Threads > 0 {
		go live.read(io.MultiReader(dec.Buffered(), r), true)
		liveNow = live.now
	}
	fault.At(fault.Decode, in)
	pipeline.LimitMemory(req.Estimate)
	res, err := convertJob(context.Background(), req.job(), liveNow)
	// The Go stages' row loops read GOMAXPROCS at each loop: the largest
	// count set counts as used.
	res.ThreadsMax = max(res.ThreadsMax, live.peak())
	fault.At(fault.Converted, in)
	if encErr := json.NewEncoder(w).Encode(newReply(res, err)); encErr != nil {
		// No reply: the parent fails the file and removes the outputs
		// this worker committed (workerProc.outcome), with the kind
		// said here.
		kind := rawerr.Kind(err)
		if err == nil {
			kind = rawerr.Kind(encErr)
		}
		fmt.Fprint(errw, failedLine(kind, fmt.Sprintf("its reply could not be sent: %v", encErr)))
		return 2
	}
	return 0
}

// failedLine is the stderr line of a worker that exits without a reply:
// the rawerr kind of its failure and why (parsed by failedWorker).
func failedLine(kind, msg string) string {
	return fmt.Sprintf("rawbatch worker: failed (%s): %s\n", kind, msg)
}

var failedRE = regexp.MustCompile(`(?m)^rawbatch worker: failed \(([a-z-]+)\): (.*)$`)

// ErrCrashed: the worker converting a file died of a signal it was not
// sent by rawbatch (SIGSEGV, SIGBUS, SIGABRT, ...), or was OOM-killed.
// It is rawerr.ErrCrashed, whose kind is "crashed".
var ErrCrashed = rawerr.ErrCrashed

// ErrTimeout: the worker converting a file ran past its timeout and was
// killed. It is rawerr.ErrTimeout, whose kind is "timeout".
var ErrTimeout = rawerr.ErrTimeout

// workerRun is one worker process's outcome.
type workerRun struct {
	reply workerReply
	// peak is the worker's peak RSS in bytes (wait4 rusage ru_maxrss).
	peak   int64
	stderr string
	err    error // crash, timeout, or failure to run the worker
	// noReply: the worker exited by itself (not by a signal) without a
	// well-formed reply; err says why.
	noReply bool
}

// maxStderr bounds the stderr kept from one worker.
const maxStderr = 16 << 10

// job is the Job a request asks to convert (no header, timeout or
// thread channel: those stay with the parent).
func (req workerRequest) job() Job {
	j := Job{Input: req.Input, Settings: req.Settings, Threads: req.Threads, Cache: req.Cache, Estimate: req.Estimate, Whole: req.Whole}
	for _, o := range req.Outputs {
		j.Outputs = append(j.Outputs, JobOutput{Variant: o.Variant, Path: o.Path})
	}
	return j
}

// newWorkerRequest is the request that asks a worker to convert j.
func newWorkerRequest(j Job) workerRequest {
	req := workerRequest{Version: wireVersion, Input: j.Input, Settings: j.Settings, Threads: j.Threads, Cache: j.Cache, Estimate: j.Estimate, Whole: j.Whole}
	for _, o := range j.Outputs {
		req.Outputs = append(req.Outputs, workerOutput{Variant: o.Variant, Path: o.Path})
	}
	return req
}

// writeWorkerInput writes a worker's stdin: the request, then a "threads
// N" line for each count received from more (nil: none), until more is
// closed or the worker has exited; then it closes stdin. A failed write
// (the worker died) ends it: the wait reports why.
func writeWorkerInput(stdin io.WriteCloser, req []byte, more <-chan int, exited <-chan struct{}) {
	defer stdin.Close()
	if _, err := stdin.Write(req); err != nil {
		return
	}
	for {
		select {
		case n, ok := <-more:
			if !ok {
				return
			}
			if _, err := io.WriteString(stdin, threadsLine(n)); err != nil {
				return
			}
		case <-exited:
			return
		}
	}
}

// runWorker converts j in a child process exe ("exe worker"), killing it
// after j.Timeout (0: no timeout) or when ctx ends (after j.Grace, or at
// once when j.Abort is closed; it may be nil).
func runWorker(ctx context.Context, exe string, j Job) workerRun {
	req, err := json.Marshal(newWorkerRequest(j))
	if err != nil {
		return workerRun{err: err}
	}
	// Pdeathsig is delivered when the thread that started the child ends,
	// so this goroutine keeps its thread until the child is reaped.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w, err := startWorker(exe)
	if err != nil {
		return workerRun{err: fmt.Errorf("starting worker: %w", err)}
	}
	defer w.stderr.Close()
	exited := make(chan struct{})
	defer close(exited)
	go writeWorkerInput(w.stdin, req, j.MoreThreads, exited)
	waitErr, killedFor := w.wait(ctx, j.Timeout, j.Grace, j.Abort)
	return w.outcome(ctx, waitErr, killedFor)
}

// workerProc is a worker process started by startWorker: its command, its
// stdin (open after the request: the runner may raise the conversion's
// threads while it runs, "threads N", workerthreads.go), its stdout and
// stderr, and the cgroup's OOM kill count before it started.
type workerProc struct {
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	stdout    *bytes.Buffer
	stderr    *os.File
	oomBefore int64
}

// startWorker starts "exe worker" in its own process group, killed if
// this thread ends (Pdeathsig), its stderr an in-memory file. Errors:
// the pipe, the stderr file or the start failed (the caller names it).
func startWorker(exe string) (*workerProc, error) {
	cmd := exec.Command(exe, "worker")
	// A crash prints the signal and no goroutine dumps (parsed by crashSignal).
	cmd.Env = append(os.Environ(), "GOTRACEBACK=none")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	w := &workerProc{cmd: cmd, stdin: stdin, stdout: &bytes.Buffer{}}
	cmd.Stdout = w.stdout
	// The child's stderr is a file it can read back itself: libjpeg's
	// corrupt-data warnings appear only there, and the worker must see them
	// before it writes any output (libraw.Handle.Unpack).
	if w.stderr, err = stderrFile(); err != nil {
		return nil, err
	}
	cmd.Stderr = w.stderr
	// Its own process group: a Ctrl-C in the terminal (sent to the whole
	// foreground group) reaches only rawbatch, which gives files in flight
	// their grace period and then kills their workers itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	w.oomBefore = oomKills()
	if err := cmd.Start(); err != nil {
		w.stderr.Close()
		return nil, err
	}
	return w, nil
}

// wait waits for the worker to exit, killing it after timeout (0: none),
// or once ctx ends after grace (at once when abort is closed). It returns
// the wait's error and, when it killed the worker, why (ErrTimeout, or
// ctx's cause).
func (w *workerProc) wait(ctx context.Context, timeout, grace time.Duration, abort <-chan struct{}) (waitErr, killedFor error) {
	done := make(chan error, 1)
	go func() { done <- w.cmd.Wait() }()
	var timer <-chan time.Time
	if timeout > 0 {
		tm := time.NewTimer(timeout)
		defer tm.Stop()
		timer = tm.C
	}
	ctxDone := ctx.Done()
	for {
		select {
		case waitErr = <-done:
			return waitErr, killedFor
		case <-timer:
			killedFor = fmt.Errorf("%w after %s s (raise --timeout if the file is just very large)", ErrTimeout, secondsText(timeout))
			w.cmd.Process.Kill()
			timer = nil
		case <-ctxDone:
			ctxDone = nil
			// Give the file a grace period to finish, then abort it.
			g := time.NewTimer(grace)
			select {
			case waitErr = <-done:
				g.Stop()
				return waitErr, killedFor
			case <-g.C:
			case <-abort:
				g.Stop()
			}
			killedFor = context.Cause(ctx)
			w.cmd.Process.Kill()
		}
	}
}

// outcome is the workerRun of an exited worker: its peak RSS and stderr,
// and its reply, or why there is none: killed (killedFor), signalled
// (a crash, the OOM killer, or the run being interrupted), or failed
// without a reply.
func (w *workerProc) outcome(ctx context.Context, waitErr, killedFor error) workerRun {
	run := workerRun{stderr: strings.TrimSpace(readStderr(w.stderr))}
	ps := w.cmd.ProcessState
	if ps != nil {
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			run.peak = ru.Maxrss * 1024
		}
	}
	if killedFor != nil {
		run.err = killedFor
		return run
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		run.err = w.signalled(ctx, ws.Signal(), run.peak)
		return run
	}
	// The worker exited by itself: only a well-formed reply of this wire
	// version says what became of its file (whatever its exit status).
	var rep workerReply
	err := json.Unmarshal(w.stdout.Bytes(), &rep)
	if err == nil && rep.Version != wireVersion {
		err = fmt.Errorf("wire format version %d, want %d", rep.Version, wireVersion)
	}
	if err != nil {
		run.err, run.noReply = failedWorker(ps.ExitCode(), run.stderr), true
		return run
	}
	run.reply = rep
	return run
}

// failedWorker is the error of a worker that exited with status code
// without a well-formed reply, from
// what it said on stderr: a fatal signal the Go runtime caught (in
// LibRaw's C code or ours; it exits with status 2) is ErrCrashed, a
// failedLine has its kind, and anything else is ErrCrashed too.
func failedWorker(code int, stderr string) error {
	status := fmt.Sprintf("exited with status %d", code)
	if sig, ok := crashSignal(stderr); ok {
		return fmt.Errorf("%w (signal %d, %s)", ErrCrashed, int(sig), sig)
	}
	if m := failedRE.FindStringSubmatch(stderr); m != nil {
		msg := "its worker " + status + " without a reply: " + m[2]
		if kind := rawerr.FromKind(m[1]); kind != nil {
			return &remoteError{msg: msg, kind: kind}
		}
		return errors.New(msg)
	}
	msg := "its worker " + status + " without a reply"
	if stderr != "" {
		msg += ": " + firstLines(stderr, 3)
	}
	return fmt.Errorf("%w: %s", ErrCrashed, msg)
}

// signalled is the error of a worker that died of signal sig with peak
// bytes of RSS: ctx's cause while the run is being interrupted (not a
// crash), else ErrCrashed saying by what.
func (w *workerProc) signalled(ctx context.Context, sig syscall.Signal, peak int64) error {
	switch {
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case sig == syscall.SIGKILL && oomKills() > w.oomBefore:
		return fmt.Errorf("%w: killed by the kernel OOM killer (peak %d MiB)", ErrCrashed, peak>>20)
	case sig == syscall.SIGKILL || sig == syscall.SIGTERM || sig == syscall.SIGINT:
		// A signal a process sends, not a fault of the decoder's.
		return fmt.Errorf("%w: its worker was killed by signal %d (%s), which rawbatch did not send", ErrCrashed, int(sig), sig)
	}
	return fmt.Errorf("%w (signal %d, %s)", ErrCrashed, int(sig), sig)
}

var signalRE = regexp.MustCompile(`(?m)(?:\[signal |^)(SIG[A-Z]+)[: ]`)

var signalNumbers = map[string]syscall.Signal{
	"SIGSEGV": syscall.SIGSEGV, "SIGBUS": syscall.SIGBUS, "SIGFPE": syscall.SIGFPE, "SIGILL": syscall.SIGILL,
	"SIGABRT": syscall.SIGABRT, "SIGTRAP": syscall.SIGTRAP, "SIGSYS": syscall.SIGSYS,
}

// crashSignal finds the fatal signal in a Go runtime crash report ("[signal
// SIGSEGV: segmentation violation ...]" for a signal in C code, "SIGSEGV:
// segmentation violation" otherwise).
func crashSignal(stderr string) (syscall.Signal, bool) {
	for _, m := range signalRE.FindAllStringSubmatch(stderr, -1) {
		if sig, ok := signalNumbers[m[1]]; ok {
			return sig, true
		}
	}
	return 0, false
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], " | ")
}

// replyError rebuilds a worker's error from its text msg and rawerr kind
// name (see workerReply.Kind), so callers can still test it with errors.Is.
func replyError(msg, kindName string) error {
	if msg == "" {
		return nil
	}
	return &remoteError{msg: msg, kind: rawerr.FromKind(kindName)}
}

// remoteError is an error reported by a worker process.
type remoteError struct {
	msg  string
	kind error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.kind }

// stderrFile returns an anonymous in-memory file (memfd_create) for a
// worker's stderr, or an unlinked temporary file where memfd is missing.
func stderrFile() (*os.File, error) {
	if fd, err := unix.MemfdCreate("rawbatch-worker-stderr", unix.MFD_CLOEXEC); err == nil {
		return os.NewFile(uintptr(fd), "rawbatch-worker-stderr"), nil
	}
	f, err := os.CreateTemp("", "rawbatch-worker-stderr-*")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	return f, nil
}

// readStderr returns the first maxStderr bytes of a worker's stderr file.
func readStderr(f *os.File) string {
	b := make([]byte, maxStderr)
	n, _ := f.ReadAt(b, 0)
	return string(b[:n])
}

// oomKills returns the oom_kill count of this process's cgroup v2
// (memory.events), or -1 when it cannot be read.
func oomKills() int64 {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		p, ok := strings.CutPrefix(line, "0::")
		if !ok {
			continue
		}
		ev, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", p, "memory.events"))
		if err != nil {
			return -1
		}
		for _, l := range strings.Split(string(ev), "\n") {
			if v, ok := strings.CutPrefix(l, "oom_kill "); ok {
				var n int64
				fmt.Sscan(v, &n)
				return n
			}
		}
	}
	return -1
}
