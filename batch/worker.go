package batch

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rawbatch/rawbatch/pipeline"

	"golang.org/x/sys/unix"

	"github.com/rawbatch/rawbatch/internal/fault"
	"github.com/rawbatch/rawbatch/internal/rawerr"
)

// Files are converted in child worker processes of the rawbatch binary
// (`rawbatch worker`), so that LibRaw crashing (SIGSEGV) or looping on a
// malformed file fails that file only. A worker serves many files in
// sequence (pool.go): the parent writes one workerRequest per line (JSON,
// which escapes every newline inside it) on the worker's stdin, and the
// worker answers each with one workerReply line on its stdout before it
// reads the next. Between a request and its reply the parent may write
// "threads N" lines (workerthreads.go). The worker's stderr is a file the
// parent created (stderrFile); what was written to it between a request
// and its reply (LibRaw's and libjpeg's messages, a crash report) is kept
// as the warnings of that request's file only. The worker exits when its
// stdin ends.
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
const wireVersion = 2

// workerRequest is what the parent sends a worker.
type workerRequest struct {
	// Version is the wire format's version (wireVersion).
	Version int
	Input   []byte
	Outputs []workerOutput
	// OutDir is Job.OutDir (the outputs are written below it without
	// following a symbolic link).
	OutDir   []byte `json:",omitempty"`
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

// decodeRequest reads the next request from dec (a header helper's
// input); errors as parseRequest's, or io.EOF at the end of the input.
func decodeRequest(dec *json.Decoder) (workerRequest, error) {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return workerRequest{}, err
	}
	return parseRequest(raw)
}

// parseRequest decodes one request. Errors: a JSON error, or a request of
// another wire version (checked before the rest of the request is
// decoded, which that version may lay out differently).
func parseRequest(raw []byte) (workerRequest, error) {
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
	// ("corrupt", ..., see rawerr.Kind) or "transient" (ErrTransient),
	// Code its reason code (rawerr.Code; "": none).
	Err  []byte `json:",omitempty"`
	Kind string `json:",omitempty"`
	Code string `json:",omitempty"`
	// PeakRSS is the worker's peak resident memory in bytes while it
	// converted this file (VmHWM, reset before the file by
	// /proc/self/clear_refs; 0: unknown); RSS is its resident memory once
	// the file is done (VmRSS, after returning freed Go memory to the
	// system when above workerRecycleRSS), by which the parent recycles
	// the worker.
	PeakRSS, RSS int64 `json:",omitempty"`
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
		rep.Err, rep.Kind, rep.Code = []byte(err.Error()), rawerr.Kind(err), rawerr.Code(err)
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
	return res, replyError(string(rep.Err), rep.Kind, rep.Code)
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

// WorkerMain is the body of `rawbatch worker`: it reads requests from r,
// one per line, converts each file and writes its reply line to w, until r
// ends; it returns the exit status (0, or 2 for a request it cannot read
// or of another wire version, with the reason on stderr).
func WorkerMain(r io.Reader, w io.Writer) int { return workerMain(r, w, os.Stderr) }

// workerMain is WorkerMain with its messages written to errw.
func workerMain(r io.Reader, w io.Writer, errw io.Writer) int {
	br := bufio.NewReaderSize(r, 64<<10)
	line, err := readFrame(br)
	if err != nil && len(line) == 0 {
		fmt.Fprint(errw, failedLine("error", fmt.Sprintf("bad request: %v", err)))
		return 2
	}
	req, err := parseRequest(line)
	if err != nil {
		fmt.Fprint(errw, failedLine("error", fmt.Sprintf("bad request: %v", err)))
		return 2
	}
	if req.Identify != nil {
		// A header helper (HeaderReader): one LibRaw header read per
		// request until its stdin closes.
		return identifyLoop(json.NewDecoder(br), req, w, errw)
	}
	s := &workerSession{procs: runtime.GOMAXPROCS(0), enc: json.NewEncoder(w), errw: errw}
	// lensfun's database, loaded by the first file with a lens and kept
	// for the next ones, is destroyed as the worker ends.
	defer pipeline.CloseLensDB()
	reqs := make(chan []byte)
	go s.readFrames(br, reqs)
	for {
		if code := s.serve(req); code != 0 {
			return code
		}
		line, ok := <-reqs
		if !ok {
			return 0
		}
		if req, err = parseRequest(line); err == nil && req.Identify != nil {
			err = errors.New("a header read sent to a converting worker")
		}
		if err != nil {
			fmt.Fprint(errw, failedLine("error", fmt.Sprintf("bad request: %v", err)))
			return 2
		}
	}
}

// readFrame returns the next line of br without its newline; a last line
// without one is returned with io.EOF.
func readFrame(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadBytes('\n')
	return bytes.TrimSuffix(line, []byte("\n")), err
}

// workerSession is a converting worker's state across its requests.
type workerSession struct {
	// procs is the process's GOMAXPROCS at start, restored for a request
	// without Threads.
	procs int
	enc   *json.Encoder
	errw  io.Writer
	// live is the thread count of the file converting now, raised by
	// "threads N" lines (nil between files: such a line, late for a file
	// already replied to, is dropped).
	live atomic.Pointer[workerThreads]
}

// readFrames reads the worker's input after its first request: request
// lines go to reqs, "threads N" lines raise the file converting now, and
// other lines are skipped (messages of a newer parent). It closes reqs
// when the input ends.
func (s *workerSession) readFrames(br *bufio.Reader, reqs chan<- []byte) {
	defer close(reqs)
	for {
		line, err := readFrame(br)
		if len(line) > 0 && line[0] == '{' {
			reqs <- line
		} else if n, ok := parseThreadsLine(string(line)); ok {
			if live := s.live.Load(); live != nil {
				live.raise(n, true)
			}
		}
		if err != nil {
			return
		}
	}
}

// serve converts req's file and writes its reply; it returns 0, or 2 when
// the reply could not be written (the reason on stderr).
func (s *workerSession) serve(req workerRequest) int {
	in := string(req.Input)
	resetPeakRSS()
	// The conversion's share of the CPUs, decided at its admission, as for
	// LibRaw's OpenMP threads: the Go stages' row loops (par.Rows) use as
	// many, so that the workers running at once do not oversubscribe the
	// machine and one running alone uses all.
	runtime.GOMAXPROCS(cmp.Or(max(req.Threads, 0), s.procs))
	// The parent may raise the threads while the file converts: "threads
	// N" lines after the request (workerthreads.go).
	live := &workerThreads{n: req.Threads, max: req.Threads}
	var liveNow func() int
	if req.Threads > 0 {
		s.live.Store(live)
		liveNow = live.now
	}
	fault.At(fault.Decode, in)
	// The Go memory limit keeps the worker near its file's estimate (the
	// budget holds the estimate plus WorkerRSS for it), with at least
	// workerGCSlack of room: with pipeline.LimitMemory's 4 MiB, a small
	// file's heap sits at the limit, so the GC runs and returns pages to
	// the system (which the next stage faults in again) all through the
	// file, a sixth of a tiny file's CPU time.
	limit := int64(math.MaxInt64) // none, whatever the file before set
	if req.Estimate > 0 {
		limit = req.Estimate + max(req.Estimate/8, workerGCSlack)
	}
	debug.SetMemoryLimit(limit)
	res, err := convertJob(context.Background(), req.job(), liveNow)
	s.live.Store(nil)
	// The Go stages' row loops read GOMAXPROCS at each loop: the largest
	// count set counts as used.
	res.ThreadsMax = max(res.ThreadsMax, live.peak())
	fault.At(fault.Converted, in)
	rep := newReply(res, err)
	rep.PeakRSS, rep.RSS = procStatus("VmHWM:"), procStatus("VmRSS:")
	if rep.RSS > workerRecycleRSS {
		// The freed image buffers of a large file: give them back before
		// the parent weighs this worker's memory.
		debug.FreeOSMemory()
		rep.RSS = procStatus("VmRSS:")
	}
	if encErr := s.enc.Encode(rep); encErr != nil {
		// No reply: the parent fails the file and removes the outputs
		// this worker committed (Outcome.NoReply), with the kind said
		// here.
		kind := rawerr.Kind(err)
		if err == nil {
			kind = rawerr.Kind(encErr)
		}
		fmt.Fprint(s.errw, failedLine(kind, fmt.Sprintf("its reply could not be sent: %v", encErr)))
		return 2
	}
	return 0
}

// workerGCSlack is the least room in bytes a worker's Go memory limit
// leaves above its file's estimate (part of the worker's own WorkerRSS).
const workerGCSlack = 16 << 20

// resetPeakRSS resets this process's resident-memory high-water mark
// (VmHWM) to its current RSS (/proc/self/clear_refs, Linux 4.0), so that
// the peak read after a file is that file's; where it cannot, the peak
// read is the process's since it started (an upper bound).
func resetPeakRSS() {
	if f, err := os.OpenFile("/proc/self/clear_refs", os.O_WRONLY, 0); err == nil {
		f.WriteString("5")
		f.Close()
	}
}

// procStatus returns the value in bytes of the kB field key ("VmHWM:",
// "VmRSS:") of /proc/self/status, 0 when it cannot be read.
func procStatus(key string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+len(key) : i+len(key)+min(32, len(b)-i-len(key))]))
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.ParseInt(f[0], 10, 64)
	return n << 10
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

// job is the Job a request asks to convert (no header, timeout or
// thread channel: those stay with the parent).
func (req workerRequest) job() Job {
	j := Job{Input: req.Input, OutDir: req.OutDir, Settings: req.Settings, Threads: req.Threads, Cache: req.Cache, Estimate: req.Estimate, Whole: req.Whole}
	for _, o := range req.Outputs {
		j.Outputs = append(j.Outputs, JobOutput{Variant: o.Variant, Path: o.Path})
	}
	return j
}

// newWorkerRequest is the request that asks a worker to convert j.
func newWorkerRequest(j Job) workerRequest {
	req := workerRequest{Version: wireVersion, Input: j.Input, OutDir: j.OutDir, Settings: j.Settings, Threads: j.Threads, Cache: j.Cache, Estimate: j.Estimate, Whole: j.Whole}
	for _, o := range j.Outputs {
		req.Outputs = append(req.Outputs, workerOutput{Variant: o.Variant, Path: o.Path})
	}
	return req
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
// bytes of RSS, the cgroup having counted oomBefore OOM kills before its
// file started: ctx's cause while the run is being interrupted (not a
// crash), else ErrCrashed saying by what.
func signalled(ctx context.Context, sig syscall.Signal, peak, oomBefore int64) error {
	switch {
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case sig == syscall.SIGKILL && oomKills() > oomBefore:
		return fmt.Errorf("%w: killed by the kernel OOM killer (peak %d MiB)", ErrCrashed, peak>>20)
	case sig == syscall.SIGKILL || sig == syscall.SIGTERM || sig == syscall.SIGINT:
		// A signal a process sends, not a fault of the decoder's: not
		// remembered (known.go).
		return outsideError{fmt.Errorf("%w: its worker was killed by signal %d (%s), which rawbatch did not send", ErrCrashed, int(sig), sig)}
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

// replyError rebuilds a worker's error from its text msg, rawerr kind
// name and reason code (see workerReply.Kind and Code), so callers can
// still test it with errors.Is and rawerr.Code.
func replyError(msg, kindName, code string) error {
	if msg == "" {
		return nil
	}
	return &remoteError{msg: msg, kind: rawerr.FromKind(kindName), code: code}
}

// remoteError is an error reported by a worker process.
type remoteError struct {
	msg  string
	kind error
	code string
}

func (e *remoteError) Error() string      { return e.msg }
func (e *remoteError) Unwrap() error      { return e.kind }
func (e *remoteError) ReasonCode() string { return e.code }

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
