package batch

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The worker pool: Subprocess converts each file in a worker process
// `Exe worker` that serves many files in sequence (worker.go's wire
// format), so that the process start, the Go runtime's and LibRaw's
// set-up and lensfun's database are paid once per worker, not per file.
// A worker converts one file at a time; the runner runs at most Jobs files
// at once, so at most Jobs workers are busy, and a worker done with a file
// waits idle for the next one (workerIdle at most, then it exits).
//
// A worker is never reused after anything went wrong: a crash, a hang
// killed at the file's timeout, a kill, an interrupt or a reply that is
// not well-formed fail that file only, and the worker is discarded
// (killed and reaped); the next file starts a fresh one. A worker is
// also retired (its stdin closed, so it exits) after workerMaxFiles files,
// when its resident memory after a file stays above workerRecycleRSS (the
// Go heap and C allocations a long-lived process keeps: the budget counts
// WorkerRSS per worker), or when its stderr file holds more than
// workerMaxStderr bytes.
//
// Workers are pooled by executable and environment (a worker inherits
// the environment of the moment it starts: the fault hooks of tests read
// it), process-wide, so that successive runs of one process (a queue
// worker's deliveries) share them.

// workerMaxFiles is the number of files a worker converts before it is
// retired (a variable for tests).
var workerMaxFiles = 500

// workerRecycleRSS is the resident memory in bytes above which a worker
// is retired after a file (once it has returned its freed Go memory):
// WorkerRSS, what the budget counts for a worker's own memory, plus room
// for what a worker that has converted keeps (LibRaw's and lensfun's
// tables, the Go runtime's caches). A variable for tests.
var workerRecycleRSS int64 = WorkerRSS + 12<<20

// workerMaxStderr bounds a worker's stderr file in bytes (the messages of
// all the files it converted).
const workerMaxStderr = 1 << 20

// workerIdle is how long an idle worker waits for another file before it
// is retired.
var workerIdle = 2 * time.Second

// workerRun is the outcome of one file in a worker.
type workerRun struct {
	reply workerReply
	// peak is the worker's peak RSS in bytes while it converted the file
	// (the reply's PeakRSS; a dead worker's wait4 ru_maxrss).
	peak   int64
	stderr string
	err    error // crash, timeout, or failure to run the worker
	// noReply: the worker exited by itself (not by a signal), or replied
	// something that is not a well-formed reply; err says why.
	noReply bool
}

// maxStderr bounds the stderr kept from one file.
const maxStderr = 16 << 10

// workerPool is the idle workers of one executable and environment.
type workerPool struct {
	exe  string
	mu   sync.Mutex
	idle []*poolWorker
	// started counts the worker processes started (tests).
	started int
}

var pools struct {
	mu sync.Mutex
	m  map[string]*workerPool
}

// poolFor returns the pool of exe for this process's environment now.
func poolFor(exe string) *workerPool {
	key := exe + "\x00" + strings.Join(os.Environ(), "\x00")
	pools.mu.Lock()
	defer pools.mu.Unlock()
	if pools.m == nil {
		pools.m = map[string]*workerPool{}
	}
	p := pools.m[key]
	if p == nil {
		p = &workerPool{exe: exe}
		pools.m[key] = p
	}
	return p
}

// CloseWorkers retires every idle worker of this process and waits until
// they have exited; the workers busy with a file are left to their runs.
func CloseWorkers() {
	pools.mu.Lock()
	var all []*workerPool
	for _, p := range pools.m {
		all = append(all, p)
	}
	pools.mu.Unlock()
	for _, p := range all {
		p.mu.Lock()
		idle := p.idle
		p.idle = nil
		p.mu.Unlock()
		for _, w := range idle {
			w.retire()
			<-w.exited
		}
	}
}

// poolWorker is one worker process of a pool.
type poolWorker struct {
	cmd *exec.Cmd
	// stdin carries the requests and "threads N" lines, written under
	// inMu (the thread raises come from another goroutine).
	stdin *os.File
	inMu  sync.Mutex
	// replies delivers the lines of its stdout; closed at its end.
	replies chan []byte
	// exited is closed once the process is reaped.
	exited chan struct{}
	// stderr is the worker's stderr file (stderrFile), shared with it.
	stderr *os.File
	files  int
	idle   *time.Timer
}

// spawn runs its functions on one goroutine locked to its OS thread for
// the life of the process: a worker's Pdeathsig fires when the thread
// that started it ends, and that thread never does.
var spawn = sync.OnceValue(func() chan func() {
	c := make(chan func())
	go func() {
		runtime.LockOSThread()
		for f := range c {
			f()
		}
	}()
	return c
})

// startPoolWorker starts a worker "exe worker" in its own process group,
// killed if rawbatch dies (Pdeathsig), its stderr a file of its own.
// Errors: the pipes, the stderr file or the start failed (the caller
// names it).
func startPoolWorker(exe string) (*poolWorker, error) {
	// The child's stderr is a file it can read back itself: libjpeg's
	// corrupt-data warnings appear only there, and the worker must see
	// them before it writes any output (libraw.Handle.Unpack).
	errf, err := stderrFile()
	if err != nil {
		return nil, err
	}
	cmd, inW, outR, err := startChild(exe, errf)
	if err != nil {
		errf.Close()
		return nil, err
	}
	w := &poolWorker{cmd: cmd, stdin: inW, replies: make(chan []byte), exited: make(chan struct{}), stderr: errf}
	go func() {
		defer close(w.replies)
		defer outR.Close()
		br := bufio.NewReaderSize(outR, 64<<10)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				w.replies <- line
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		cmd.Wait()
		close(w.exited)
	}()
	return w, nil
}

// get returns an idle worker that is still alive, or starts one.
func (p *workerPool) get() (*poolWorker, error) {
	for {
		p.mu.Lock()
		n := len(p.idle)
		if n == 0 {
			p.started++
			p.mu.Unlock()
			return startPoolWorker(p.exe)
		}
		w := p.idle[n-1]
		p.idle = p.idle[:n-1]
		w.idle.Stop()
		p.mu.Unlock()
		select {
		case <-w.exited: // died while idle (killed from outside)
			w.discard()
		default:
			return w, nil
		}
	}
}

// put makes w idle, or retires it when it has served enough files or
// grown (rss: its resident memory after its last file).
func (p *workerPool) put(w *poolWorker, rss int64) {
	w.files++
	if w.files >= workerMaxFiles || rss > workerRecycleRSS || w.stderrSize() > workerMaxStderr {
		w.retire()
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	w.idle = time.AfterFunc(workerIdle, func() { p.expire(w) })
	p.idle = append(p.idle, w)
}

// expire retires w if it is still idle.
func (p *workerPool) expire(w *poolWorker) {
	p.mu.Lock()
	for i, x := range p.idle {
		if x == w {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			p.mu.Unlock()
			w.retire()
			return
		}
	}
	p.mu.Unlock()
}

// retire ends an idle worker: its stdin closes and it exits by itself
// (reaped by its own goroutine).
func (w *poolWorker) retire() {
	w.inMu.Lock()
	w.stdin.Close()
	w.inMu.Unlock()
	w.stderr.Close()
}

// discard kills w and waits until it is reaped and its stdout drained.
func (w *poolWorker) discard() {
	w.cmd.Process.Kill()
	<-w.exited
	for range w.replies {
	}
	w.inMu.Lock()
	w.stdin.Close()
	w.inMu.Unlock()
	w.stderr.Close()
}

// write writes b to w's stdin.
func (w *poolWorker) write(b []byte) error {
	w.inMu.Lock()
	defer w.inMu.Unlock()
	_, err := w.stdin.Write(b)
	return err
}

// stderrSize is the size of w's stderr file (0 when it cannot be read).
func (w *poolWorker) stderrSize() int64 {
	fi, err := w.stderr.Stat()
	if err != nil {
		return 0
	}
	return fi.Size()
}

// stderrSince returns the first maxStderr bytes written to w's stderr
// from mark on, trimmed.
func (w *poolWorker) stderrSince(mark int64) string {
	b := make([]byte, maxStderr)
	n, _ := w.stderr.ReadAt(b, mark)
	return strings.TrimSpace(string(b[:max(n, 0)]))
}

// run converts j in a worker of p, killing the worker after j.Timeout (0:
// no timeout) or when ctx ends (after j.Grace, or at once when j.Abort is
// closed; it may be nil). The worker goes back to the pool only after a
// well-formed reply.
func (p *workerPool) run(ctx context.Context, j Job) workerRun {
	req, err := json.Marshal(newWorkerRequest(j))
	if err != nil {
		return workerRun{err: err}
	}
	req = append(req, '\n')
	var w *poolWorker
	var mark, oomBefore int64
	for attempt := 0; ; attempt++ {
		if w, err = p.get(); err != nil {
			return workerRun{err: fmt.Errorf("starting worker: %w", err)}
		}
		mark, oomBefore = w.stderrSize(), oomKills()
		if err = w.write(req); err == nil {
			break
		}
		// The worker ended before it took the request (it died while
		// idle): the file has not started; a fresh worker takes it.
		w.discard()
		if attempt > 0 {
			return workerRun{err: fmt.Errorf("starting worker: %w", err)}
		}
	}
	// The thread raises go to this worker while it converts this file
	// only: the forwarder has ended before the worker goes back to the
	// pool, so a late raise cannot reach the worker's next file.
	stop, forwarded := make(chan struct{}), make(chan struct{})
	endForward := sync.OnceFunc(func() {
		close(stop)
		<-forwarded
	})
	defer endForward()
	if j.MoreThreads == nil {
		close(forwarded)
	} else {
		go func() {
			defer close(forwarded)
			for {
				select {
				case n, ok := <-j.MoreThreads:
					if !ok {
						return
					}
					if w.write([]byte(threadsLine(n))) != nil {
						return
					}
				case <-stop:
					return
				}
			}
		}()
	}
	line, killedFor := w.await(ctx, j.Timeout, j.Grace, j.Abort)
	if line != nil {
		run := workerRun{stderr: w.stderrSince(mark)}
		err := json.Unmarshal(line, &run.reply)
		if err == nil && run.reply.Version != wireVersion {
			err = fmt.Errorf("wire format version %d, want %d", run.reply.Version, wireVersion)
		}
		if err == nil {
			run.peak = run.reply.PeakRSS
			endForward()
			p.put(w, run.reply.RSS)
			return run
		}
		// Not a reply this parent can read: the file fails as one whose
		// worker exited without a reply, and the worker is not reused.
		w.discard()
		run.err, run.noReply = fmt.Errorf("%w: its worker replied something that is not a reply (%v)", ErrCrashed, err), true
		return run
	}
	// The worker is gone (it died, or was killed for killedFor).
	defer w.stderr.Close()
	run := workerRun{stderr: w.stderrSince(mark)}
	ps := w.cmd.ProcessState
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		run.peak = ru.Maxrss * 1024
	}
	if killedFor != nil {
		run.err = killedFor
		return run
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		run.err = signalled(ctx, ws.Signal(), run.peak, oomBefore)
		return run
	}
	run.err, run.noReply = failedWorker(ps.ExitCode(), run.stderr), true
	return run
}

// await waits for w's reply to the request just sent, killing w after
// timeout (0: none), or once ctx ends after grace (at once when abort is
// closed). It returns the reply line, or nil when w is gone: it exited or
// was killed (then killedFor says why: ErrTimeout, or ctx's cause); w is
// then reaped and its stdout drained.
func (w *poolWorker) await(ctx context.Context, timeout, grace time.Duration, abort <-chan struct{}) (line []byte, killedFor error) {
	var timer <-chan time.Time
	if timeout > 0 {
		tm := time.NewTimer(timeout)
		defer tm.Stop()
		timer = tm.C
	}
	var graceC <-chan time.Time
	ctxDone := ctx.Done()
	aborted := false
	gone := func() ([]byte, error) {
		<-w.exited
		for range w.replies {
		}
		w.inMu.Lock()
		w.stdin.Close()
		w.inMu.Unlock()
		return nil, killedFor
	}
	kill := func(why error) {
		if killedFor == nil {
			killedFor = why
			w.cmd.Process.Kill()
		}
	}
	for {
		select {
		case line, ok := <-w.replies:
			if !ok {
				return gone()
			}
			if killedFor == nil {
				return line, nil
			}
		case <-w.exited:
			return gone()
		case <-timer:
			kill(fmt.Errorf("%w after %s s (raise --timeout if the file is just very large)", ErrTimeout, secondsText(timeout)))
			timer = nil
		case <-ctxDone:
			// Give the file a grace period to finish, then abort it.
			ctxDone = nil
			if aborted {
				kill(context.Cause(ctx))
				continue
			}
			g := time.NewTimer(grace)
			defer g.Stop()
			graceC = g.C
		case <-graceC:
			graceC = nil
			kill(context.Cause(ctx))
		case <-abort:
			abort, aborted = nil, true
			if ctxDone == nil {
				kill(context.Cause(ctx))
			}
		}
	}
}

// startChild starts "exe worker" with its stdin and stdout on new pipes
// (returned: the ends rawbatch keeps) and its stderr on stderr (nil:
// dropped), in its own process group, so that a Ctrl-C in the terminal
// (sent to the whole foreground group) reaches only rawbatch, which gives
// files in flight their grace period and then kills their workers itself;
// killed if rawbatch dies (Pdeathsig, started from spawn's thread). A
// crash prints the signal and no goroutine dumps (crashSignal parses it).
func startChild(exe string, stderr *os.File) (cmd *exec.Cmd, stdin, stdout *os.File, err error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, nil, nil, err
	}
	cmd = exec.Command(exe, "worker")
	cmd.Env = workerEnv(os.Environ())
	cmd.Stdin, cmd.Stdout = inR, outW
	if stderr != nil {
		cmd.Stderr = stderr
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	done := make(chan struct{})
	spawn() <- func() {
		err = cmd.Start()
		close(done)
	}
	<-done
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, nil, nil, err
	}
	return cmd, inW, outR, nil
}

// workerMalloc is the tuning of glibc's malloc in a worker
// (GLIBC_TUNABLES): C blocks below 1 MiB (LibRaw's handle of 380 KiB,
// made twice a file, and what LibRaw, libjpeg and lensfun allocate for a
// small file) come from the heap, and up to 8 MiB freed at its top stay
// there, so that a worker converting small files one after another reuses
// its pages instead of mapping fresh ones (a page fault per 4 KiB) for
// each file, as glibc's defaults do here (blocks from 128 KiB mapped on
// their own until one is freed, then the heap's top trimmed above twice
// the largest). Larger blocks (a large file's raw and image buffers) are
// still mapped and unmapped on their own, and the 8 MiB fit in the room
// workerRecycleRSS leaves above WorkerRSS.
const workerMalloc = "glibc.malloc.mmap_threshold=1048576:glibc.malloc.trim_threshold=8388608"

// workerEnv is a worker's environment from rawbatch's env: no goroutine
// dumps on a crash (crashSignal reads the signal), and workerMalloc before
// any GLIBC_TUNABLES of the user's (glibc takes the last of a name, so
// theirs win).
func workerEnv(env []string) []string {
	out := make([]string, 0, len(env)+2)
	tunables := "GLIBC_TUNABLES=" + workerMalloc
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "GLIBC_TUNABLES="); ok {
			if v != "" {
				tunables += ":" + v
			}
			continue
		}
		out = append(out, e)
	}
	return append(out, tunables, "GOTRACEBACK=none")
}
