package batch

import (
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/rawbatch/rawbatch/pipeline"

	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/pipeline/header"
)

// HeaderReader reads headers for rawbatch's parent process (Plan.Inspect,
// `rawbatch inspect`) so that no LibRaw call runs in that process: package
// header's own parsers run in process, and LibRaw's open (its fallback and
// size check, header.LibRawIdentify) runs in helper processes `Exe worker`
// that are killed when one read takes longer than Timeout. A helper serves
// one read at a time and many reads in a row (starting a process per file
// would cost more than the read); there are as many helpers as reads at
// once, started when first needed. A file whose read times out fails with
// "corrupt or truncated data: reading its header timed out after 2 s:
// damaged file?" (wrapping rawerr.ErrCorrupt and header.ErrHeaderTimeout)
// and its helper is killed and reaped before the error is returned.
//
// A nil *HeaderReader, or one with Exe empty, reads in process
// (ReadHeader). Its methods may be called from several goroutines at once;
// Close stops the idle helpers.
type HeaderReader struct {
	// Exe is the rawbatch executable.
	Exe string
	// Timeout bounds one LibRaw header read, helper start-up included;
	// 0 means header.IdentifyTimeout (2 s).
	Timeout time.Duration

	mu     sync.Mutex
	idle   []*headerHelper
	killed []int
}

// headerHelper is one helper process.
type headerHelper struct {
	cmd     *exec.Cmd
	stdin   *os.File
	replies chan identifyReply // closed when its stdout ends
	exited  chan struct{}      // closed once the process is reaped
}

// identifyReply is a helper's answer to one request (sent with gob: LibRaw's
// values may be NaN, which JSON cannot carry).
type identifyReply struct {
	Info      header.Identity
	W, H      int
	Err, Kind string
}

// ReadHeader is pipeline.ReadHeader with LibRaw's open in a helper process.
func (r *HeaderReader) ReadHeader(path string) (*header.Header, error) {
	if r == nil || r.Exe == "" {
		return pipeline.ReadHeader(path)
	}
	return pipeline.ReadHeaderWith(path, r.identify)
}

// ReadInfo is pipeline.ReadInfo with LibRaw's open in a helper process.
func (r *HeaderReader) ReadInfo(path string) (pipeline.FileInfo, error) {
	h, err := r.ReadHeader(path)
	if err != nil {
		return pipeline.FileInfo{}, err
	}
	return pipeline.InfoFromHeader(h), nil
}

// Close ends the idle helpers (closing their stdin) and waits for them.
func (r *HeaderReader) Close() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	idle := r.idle
	r.idle = nil
	r.mu.Unlock()
	for _, hp := range idle {
		hp.stdin.Close()
		select {
		case <-hp.exited:
		case <-time.After(time.Second):
			hp.cmd.Process.Kill()
			<-hp.exited
		}
	}
	return nil
}

// killedHelpers returns the process ids of the helpers killed for a
// timeout (tests).
func (r *HeaderReader) killedHelpers() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.killed...)
}

func (r *HeaderReader) timeout() time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return header.IdentifyTimeout
}

// identify is a header.IdentifyFunc that asks a helper.
func (r *HeaderReader) identify(path string) (header.Identity, int, int, error) {
	hp, err := r.get()
	if err != nil {
		return header.Identity{}, 0, 0, fmt.Errorf("starting a header helper process: %w", err)
	}
	req, err := json.Marshal(workerRequest{Version: wireVersion, Identify: []byte(path)})
	if err != nil {
		r.discard(hp, false)
		return header.Identity{}, 0, 0, err
	}
	t := time.NewTimer(r.timeout())
	defer t.Stop()
	if _, err := hp.stdin.Write(append(req, '\n')); err != nil {
		r.discard(hp, false)
		return header.Identity{}, 0, 0, fmt.Errorf("header helper: %w", err)
	}
	select {
	case rep, ok := <-hp.replies:
		if !ok {
			// The helper died during LibRaw's open (a crash in its C code).
			r.discard(hp, false)
			detail := ""
			if ws, ok := hp.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				detail = fmt.Sprintf(" (signal %d, %s)", int(ws.Signal()), ws.Signal())
			}
			return header.Identity{}, 0, 0, fmt.Errorf("%w while reading its header%s", ErrCrashed, detail)
		}
		r.put(hp)
		if rep.Err != "" {
			return rep.Info, rep.W, rep.H, replyError(rep.Err, rep.Kind, "")
		}
		return rep.Info, rep.W, rep.H, nil
	case <-t.C:
		r.discard(hp, true)
		return header.Identity{}, 0, 0, header.HeaderTimeoutError(r.timeout(), "LibRaw's open did not return; its helper process was killed")
	}
}

// get returns an idle helper, or starts one.
func (r *HeaderReader) get() (*headerHelper, error) {
	r.mu.Lock()
	if n := len(r.idle); n > 0 {
		hp := r.idle[n-1]
		r.idle = r.idle[:n-1]
		r.mu.Unlock()
		return hp, nil
	}
	r.mu.Unlock()
	return startHeaderHelper(r.Exe)
}

func (r *HeaderReader) put(hp *headerHelper) {
	r.mu.Lock()
	r.idle = append(r.idle, hp)
	r.mu.Unlock()
}

// discard kills hp and waits until it is reaped; timedOut records it as
// killed for a timeout.
func (r *HeaderReader) discard(hp *headerHelper, timedOut bool) {
	hp.cmd.Process.Kill()
	hp.stdin.Close()
	<-hp.exited
	if timedOut {
		r.mu.Lock()
		r.killed = append(r.killed, hp.cmd.Process.Pid)
		r.mu.Unlock()
	}
}

func startHeaderHelper(exe string) (*headerHelper, error) {
	// LibRaw's messages (stderr) are dropped; its stdin closing ends it.
	cmd, inW, outR, err := startChild(exe, nil)
	if err != nil {
		return nil, err
	}
	hp := &headerHelper{cmd: cmd, stdin: inW, replies: make(chan identifyReply), exited: make(chan struct{})}
	go func() {
		defer close(hp.replies)
		defer outR.Close()
		dec := gob.NewDecoder(outR)
		for {
			var rep identifyReply
			if dec.Decode(&rep) != nil {
				return
			}
			hp.replies <- rep
		}
	}()
	go func() {
		cmd.Wait()
		close(hp.exited)
	}()
	return hp, nil
}

// identifyLoop is the body of a header helper (WorkerMain with an Identify
// request): it answers first and every further request from dec with the
// LibRaw header read of its path, until its input ends.
func identifyLoop(dec *json.Decoder, first workerRequest, w, errw io.Writer) int {
	enc := gob.NewEncoder(w)
	req := first
	for {
		if req.Identify == nil {
			fmt.Fprintln(errw, "rawbatch worker: a conversion request sent to a header helper")
			return 2
		}
		in, ow, oh, err := header.LibRawIdentify(string(req.Identify))
		rep := identifyReply{Info: in, W: ow, H: oh}
		if err != nil {
			rep.Err, rep.Kind = err.Error(), rawerr.Kind(err)
		}
		if err := enc.Encode(rep); err != nil {
			return 2
		}
		if req, err = decodeRequest(dec); err != nil {
			if errors.Is(err, io.EOF) {
				return 0
			}
			fmt.Fprintf(errw, "rawbatch worker: bad request: %v\n", err)
			return 2
		}
	}
}
