package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ignoreSIGPIPE makes a write to a closed pipe (`rawbatch convert ... 2>&1 |
// head`, a log collector that restarts) fail with EPIPE instead of killing
// rawbatch: the batch goes on, its records, report and locks are finished,
// and only the lines nobody reads are lost.
func ignoreSIGPIPE() { signal.Ignore(syscall.SIGPIPE) }

// earlySignals receives SIGINT, SIGTERM and SIGHUP from the very start of
// main (installSignals, before cobra parses anything) until convert takes
// them (watchInterrupts) or release gives them back: a signal a few
// milliseconds after the start is never lost, nor does it kill a run
// without its summary. run makes one and hands it to the commands in
// their context (withEarlySignals); its methods are called from the main
// goroutine only, and do nothing on nil.
type earlySignals struct {
	ch chan os.Signal
}

// installSignals ignores SIGPIPE and catches SIGINT, SIGTERM and SIGHUP
// into the earlySignals it returns; main calls it first.
func installSignals() *earlySignals {
	ignoreSIGPIPE()
	e := &earlySignals{ch: make(chan os.Signal, 4)}
	signal.Notify(e.ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	return e
}

// release gives SIGINT, SIGTERM and SIGHUP back their default action, for
// the commands that do not handle them (inspect, cache, ...); one that
// arrived meanwhile takes effect now. After take it does nothing.
func (e *earlySignals) release() {
	if e == nil || e.ch == nil {
		return
	}
	signal.Reset(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	select {
	case sig := <-e.ch:
		if s, ok := sig.(syscall.Signal); ok && !signal.Ignored(s) { // nohup leaves SIGHUP ignored
			// Its default action ends the process, as if no handler had
			// been installed: wait for it (the kernel delivers it to a
			// thread of its choice), exit as a shell reports it otherwise.
			syscall.Kill(os.Getpid(), s)
			time.Sleep(time.Second)
			os.Exit(128 + int(s))
		}
	default:
	}
	e.ch = nil
}

// take hands the channel, with any signal that came already, to its new
// owner (watchInterrupts); nil when there is none (released, taken, or no
// earlySignals).
func (e *earlySignals) take() chan os.Signal {
	if e == nil {
		return nil
	}
	ch := e.ch
	e.ch = nil
	return ch
}

type earlySignalsKey struct{}

// withEarlySignals returns ctx carrying e, for the commands.
func withEarlySignals(ctx context.Context, e *earlySignals) context.Context {
	return context.WithValue(ctx, earlySignalsKey{}, e)
}

// earlySignalsOf returns the earlySignals of ctx, or nil.
func earlySignalsOf(ctx context.Context) *earlySignals {
	if ctx == nil {
		return nil
	}
	e, _ := ctx.Value(earlySignalsKey{}).(*earlySignals)
	return e
}

// interrupts turns SIGINT, SIGTERM and SIGHUP into a cancelled context.
// It is installed before anything else the run does (planning included),
// so a signal never kills a run without its summary and report. The first
// signal cancels Ctx (no more files start; planning stops); a second one
// closes Abort (the files in flight are stopped now).
type interrupts struct {
	Ctx   context.Context
	Abort chan struct{}

	cancel   context.CancelFunc
	sigs     chan os.Signal
	finished chan struct{}
	once     sync.Once
	got      atomic.Bool  // a signal arrived
	note     func(string) // where the messages go
}

// signalEcho is how soon after the first signal another one counts as
// the same request: coreutils' timeout sends its signal to rawbatch and
// then to its whole process group, rawbatch again, microseconds apart,
// and a terminal's Ctrl-C reaches the process group at once; a person
// pressing Ctrl-C twice takes longer.
const signalEcho = 100 * time.Millisecond

// signalClock is the clock signalEcho is measured on (a test's own).
var signalClock = time.Now

// watchInterrupts installs the handlers, taking those main installed
// (the earlySignals of parent); Ctx is a child of parent. grace
// is --grace, named in the message of the first signal. note receives the
// messages said on a signal; stop removes the handlers.
func watchInterrupts(parent context.Context, grace time.Duration, note func(string)) *interrupts {
	return watchSignals(parent, func(sig os.Signal) string {
		return fmt.Sprintf("%s: starting no more files; the ones in progress get up to %s to finish (--grace); send it again (Ctrl-C) to stop them now", sig, grace)
	}, "stopping the files in progress now", note)
}

// watchSignals is watchInterrupts with its messages: first(sig) on the
// first signal, second on the second (the other commands that handle
// signals: broker, work, submit).
func watchSignals(parent context.Context, first func(os.Signal) string, second string, note func(string)) *interrupts {
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	in := &interrupts{Ctx: ctx, Abort: make(chan struct{}), cancel: cancel,
		sigs: earlySignalsOf(parent).take(), finished: make(chan struct{}), note: note}
	if in.sigs == nil { // else installed by main: a signal that came before is handled now
		in.sigs = make(chan os.Signal, 2)
		signal.Notify(in.sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	}
	// A signal that came before (caught by main) is taken here, before the
	// caller starts planning: the walk then stops before its first file.
	var early os.Signal
	select {
	case early = <-in.sigs:
		in.got.Store(true)
		in.say(first(early))
		cancel()
	default:
	}
	firstAt := signalClock()
	go func() {
		if early == nil {
			select {
			case sig := <-in.sigs:
				firstAt = signalClock()
				in.got.Store(true)
				in.say(first(sig))
				cancel()
			case <-in.finished:
				return
			}
		}
		for {
			select {
			case <-in.sigs:
				if signalClock().Sub(firstAt) < signalEcho {
					continue // the first signal's echo, not a second request
				}
				in.say(second)
				close(in.Abort)
			case <-in.finished:
			}
			return
		}
	}()
	return in
}

func (in *interrupts) say(msg string) { in.note(msg) }

// stop removes the handlers and ends the watcher.
func (in *interrupts) stop() {
	in.once.Do(func() {
		signal.Stop(in.sigs)
		close(in.finished)
		in.cancel()
	})
}

// interrupted reports whether a signal arrived.
func (in *interrupts) interrupted() bool { return in.got.Load() }

// planHook, set only by the tests, runs while the run is planning (after
// the walk, before the records and headers are read), to deliver a signal
// at that moment.
var planHook func(ctx context.Context)

// startHook, set only by the tests, runs right after installSignals, to
// deliver a signal before cobra has parsed anything.
var startHook func(*earlySignals)
