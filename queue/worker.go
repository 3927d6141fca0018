package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	rbudget "github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/internal/rawerr"
)

// kindOverBudget is the failure kind of a job over every live worker's
// memory budget: rawerr's name, which the report and convert give a file
// over its budget.
var kindOverBudget = rawerr.Kind(rbudget.ErrOverBudget)

// kindRedelivered is the failure kind of a job delivered MaxDeliver times
// without finishing (the queue's own: rawerr has no such kind).
const kindRedelivered = "redelivered"

// idleWait is how long the worker waits before asking again when no class
// it can take had a job.
const idleWait = 250 * time.Millisecond

// maxIdleWait is how long a worker that found no job for a while waits
// between looks (a new job waits at most this long for an idle worker).
const maxIdleWait = time.Second

// running is a job a worker runs.
type running struct {
	job     Job
	attempt int
}

// workerState is what one Run keeps.
type workerState struct {
	w    *Worker
	c    *Client
	name string

	mu       sync.Mutex
	run      map[string]running
	reserved int64         // the estimates of the running jobs, bytes
	freed    chan struct{} // a job ended (buffered 1)
	wg       sync.WaitGroup

	started   time.Time // when Run started
	lastLarge time.Time // the last look at the classes over the budget
	told      string    // the last "waiting for a bigger worker" logged
	// largestSince is since when takeLarge has seen no bigger worker
	// alive (zero: one was seen at its last look).
	largestSince time.Time
}

// overBudgetGrace is how long a job over every live worker's budget waits,
// from when it was published (and from when no bigger worker was seen),
// before it is dead-lettered as over-budget: a bigger worker restarting
// (away for less) takes it meanwhile.
func (o Options) overBudgetGrace() time.Duration { return 2 * o.AckWait }

func (w *Worker) logf(format string, args ...any) {
	if w.Log != nil {
		w.Log(fmt.Sprintf(format, args...))
	}
}

func (w *Worker) run(ctx context.Context) error {
	if w.Client == nil || w.Sched == nil || w.Convert == nil {
		return errors.New("queue: Worker needs Client, Sched and Convert")
	}
	c := w.Client
	ws := &workerState{w: w, c: c, name: c.o.Name, run: map[string]running{}, freed: make(chan struct{}, 1), started: time.Now()}
	jobs := max(w.Jobs, 1)
	if w.Log != nil {
		c.logf.Store(&w.Log)
		defer c.logf.CompareAndSwap(&w.Log, nil)
	}

	// The jobs' context outlives ctx by Grace.
	jobCtx, jobCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer jobCancel()
	stopGrace := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(w.Grace, jobCancel)
		context.AfterFunc(jobCtx, func() { t.Stop() })
	})
	defer stopGrace()

	defer ws.registerEveryBeat()()
	w.running.Store(true)
	defer w.running.Store(false)

	away := false     // the broker is unreachable
	delay := idleWait // before the next try after an error
	idle := idleWait  // before the next look when there was no job
	for ctx.Err() == nil {
		ws.mu.Lock()
		n := len(ws.run)
		ws.mu.Unlock()
		if n >= jobs {
			select {
			case <-ctx.Done():
			case <-ws.freed:
			}
			continue
		}
		took, err := ws.takeOne(jobCtx)
		if err != nil {
			if !away && c.nc.IsConnected() { // (a disconnect is logged by the connection's handler)
				w.logf("taking jobs failed, retrying: %v", err)
			}
			away = true
			select {
			case <-ctx.Done():
			case <-time.After(delay):
			}
			delay = min(2*delay, 2*time.Second)
			continue
		}
		away = false
		delay = idleWait
		if !took && ws.idleFor() {
			took = ws.takeLarge(jobCtx)
		}
		if !took {
			select {
			case <-ctx.Done():
			case <-ws.freed:
			case <-time.After(idle):
			}
			idle = min(2*idle, maxIdleWait) // an idle worker asks less often
		} else {
			idle = idleWait
		}
	}
	ws.wg.Wait()
	return nil
}

// registerEveryBeat writes the worker's entry in the registry now and
// every beat until the function it returns is called, which removes the
// entry.
func (ws *workerState) registerEveryBeat() (stop func()) {
	c := ws.c
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(c.o.Beat)
		defer t.Stop()
		for {
			ws.register()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
		octx, cancel := c.op(context.Background())
		_ = c.workers.Delete(octx, workerKey(ws.name))
		cancel()
	}
}

// free returns the bytes of the budget a new job may take: the budget
// less what the scheduler holds or the running jobs' estimates, whichever
// is more (a job just taken has not been admitted yet).
func (ws *workerState) free() int64 {
	s := ws.w.Sched
	ws.mu.Lock()
	used := max(s.InUse(), ws.reserved)
	ws.mu.Unlock()
	return s.Budget() - used
}

// takeOne fetches at most one job, from the largest class that fits the
// free budget down to the smallest, and starts it. It returns whether it
// took one; an error means the broker did not answer.
func (ws *workerState) takeOne(jobCtx context.Context) (bool, error) {
	c := ws.c
	if !c.nc.IsConnected() {
		return false, fmt.Errorf("%w: %s", ErrUnavailable, c.nc.Status())
	}
	free := ws.free()
	budget := ws.w.Sched.Budget()
	classes := allClasses()
	var failed error
	for i := len(classes) - 1; i >= 0; i-- {
		class := classes[i]
		// A job of a bounded class fits when its bound does; a job of the
		// huge class is taken only with room for the largest bound and its
		// own estimate. (Fetching a job that does not fit and handing it
		// back would count a delivery against its MaxDeliver.)
		if i < len(Classes) && Classes[i] > min(free, budget) || i == len(Classes) && free < Classes[len(Classes)-1] {
			continue
		}
		mb, err := c.cons[class].FetchNoWait(1)
		if err != nil {
			failed = err
			continue
		}
		var msg jetstream.Msg
		for m := range mb.Messages() {
			msg = m
		}
		if err := mb.Error(); err != nil && msg == nil {
			failed = err
			continue
		}
		if msg == nil {
			continue
		}
		md, err := msg.Metadata()
		if err != nil {
			_ = msg.Term()
			ws.w.logf("job %s: no metadata: %v (dropped)", msg.Subject(), err)
			continue
		}
		j, err := decodeJob(msg.Subject(), msg.Data())
		if err != nil {
			_ = msg.Term()
			ws.w.logf("job %s: not a job: %v (dropped)", msg.Subject(), err)
			continue
		}
		if j.Estimate > free {
			// It does not fit now: hand it back, try a smaller class.
			_ = msg.NakWithDelay(c.o.Beat)
			continue
		}
		ws.start(jobCtx, msg, j, int(md.NumDelivered))
		return true, nil
	}
	if failed != nil {
		return false, unavailable(failed)
	}
	return false, nil
}

func (ws *workerState) start(jobCtx context.Context, msg jetstream.Msg, j Job, attempt int) {
	ws.startWith(jobCtx, msg, j, attempt, nil)
}

// startWith starts the job; with override set, its outcome is override
// instead of a conversion's.
func (ws *workerState) startWith(jobCtx context.Context, msg jetstream.Msg, j Job, attempt int, override *Outcome) {
	ws.mu.Lock()
	ws.run[j.ID] = running{job: j, attempt: attempt}
	ws.reserved += j.Estimate
	ws.mu.Unlock()
	ws.wg.Add(1)
	go func() {
		defer ws.wg.Done()
		ws.handle(jobCtx, msg, j, attempt, override)
		ws.mu.Lock()
		delete(ws.run, j.ID)
		ws.reserved -= j.Estimate
		ws.mu.Unlock()
		select {
		case ws.freed <- struct{}{}:
		default:
		}
	}()
}

// register writes the worker's entry in the registry.
func (ws *workerState) register() {
	wi := WorkerInfo{Name: ws.name, Budget: ws.w.Sched.Budget(), InUse: ws.w.Sched.InUse(), Jobs: max(ws.w.Jobs, 1), Seen: time.Now()}
	ws.mu.Lock()
	for id, r := range ws.run {
		wi.Running = append(wi.Running, id)
		wi.Inputs = append(wi.Inputs, r.job.Input)
	}
	ws.mu.Unlock()
	b, _ := json.Marshal(wi)
	octx, cancel := ws.c.op(context.Background())
	defer cancel()
	if _, err := ws.c.workers.Put(octx, workerKey(ws.name), b); err == nil {
		ws.w.beatOK.Store(time.Now().UnixNano())
	}
}

func (w *Worker) ready() error {
	c := w.Client
	switch {
	case c == nil || !w.running.Load():
		return errors.New("not taking jobs")
	case !c.nc.IsConnected():
		return fmt.Errorf("not connected to the broker at %s", c.o.URL)
	}
	last := w.beatOK.Load()
	if last == 0 {
		return errors.New("no beat has reached the broker yet")
	}
	if since := time.Since(time.Unix(0, last)); since >= c.o.LeaseTTL-c.o.Beat {
		return fmt.Errorf("fenced: no beat has reached the broker for %s", since.Round(time.Millisecond))
	}
	return nil
}

// lease is one delivery's lease: its revision is the fencing token.
type lease struct {
	c      *Client
	id     string
	val    []byte
	mu     sync.Mutex
	rev    uint64
	lost   bool
	ch     chan struct{} // closed when lost
	dead   *time.Timer   // fences when no renewal succeeded for LeaseTTL − Beat
	ok     time.Time     // the last successful renewal (or the creation)
	onLost func()
}

func (l *lease) setLost() {
	if !l.lost {
		l.lost = true
		close(l.ch)
		l.dead.Stop()
		if l.onLost != nil {
			go l.onLost()
		}
	}
}

// renew renews the lease now; nil when it is still this delivery's.
// While the broker does not answer (a cluster electing the bucket's
// leader: a few seconds) it asks again, with backoff (100 ms doubling to
// 1 s), until the lease's deadline (LeaseTTL − Beat after the last
// renewal), when the deadline timer fences the delivery.
func (l *lease) renew() error {
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		deadline, err := l.renewOnce()
		if err == nil || !errors.Is(err, ErrUnavailable) || time.Now().Add(delay).After(deadline) {
			return err
		}
		select {
		case <-l.ch:
			return fmt.Errorf("job %s: %w", l.id, ErrFenced)
		case <-time.After(delay):
		}
	}
}

// ownLater reports whether the lease's key holds this lease's own value
// at a revision after the one it last knew (an update of its own whose
// answer was lost), and that revision.
func (l *lease) ownLater() (uint64, bool) {
	octx, cancel := context.WithTimeout(context.Background(), min(l.c.timeout, l.c.o.Beat))
	defer cancel()
	e, err := l.c.leases.Get(octx, l.id)
	if err != nil || e.Revision() <= l.rev || !bytes.Equal(e.Value(), l.val) {
		return 0, false
	}
	return e.Revision(), true
}

// renewOnce renews the lease once; it returns the lease's deadline
// (LeaseTTL − Beat after the last renewal) and the error.
func (l *lease) renewOnce() (time.Time, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	deadline := l.ok.Add(l.c.o.LeaseTTL - l.c.o.Beat)
	if l.lost {
		return deadline, fmt.Errorf("job %s: %w", l.id, ErrFenced)
	}
	c := l.c
	octx, cancel := context.WithTimeout(context.Background(), min(c.timeout, c.o.Beat))
	defer cancel()
	start := time.Now()
	rev, err := c.leases.Update(octx, l.id, l.val, l.rev)
	if err == nil {
		l.rev, l.ok = rev, start
		l.dead.Reset(c.o.LeaseTTL - c.o.Beat - time.Since(start))
		return deadline, nil
	}
	var apiErr *jetstream.APIError
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyNotFound) ||
		errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		if rev, ok := l.ownLater(); ok {
			// An earlier renewal was applied but its answer lost (the
			// broker restarting, a leader election): the lease is still
			// this one (its value names this worker, attempt and start
			// to the nanosecond), at a later revision.
			l.rev, l.ok = rev, start
			l.dead.Reset(c.o.LeaseTTL - c.o.Beat - time.Since(start))
			return deadline, nil
		}
		l.setLost()
		return deadline, fmt.Errorf("job %s: lease taken over: %w", l.id, ErrFenced)
	}
	// Not renewed (the broker is away): not safe to commit now, but the
	// lease may still be ours until the deadline timer says otherwise.
	return deadline, fmt.Errorf("job %s: lease not renewed: %w: %w", l.id, ErrFenced, unavailable(err))
}

func (l *lease) isLost() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// committed stops the lease's deadline timer: the conversion committed,
// nothing is left to fence while its status and ack wait for the broker
// (a redelivery meanwhile finds the outputs up to date).
func (l *lease) committed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dead.Stop()
}

// release deletes the lease if it is still this delivery's.
func (l *lease) release() {
	l.mu.Lock()
	rev := l.rev
	l.dead.Stop()
	l.mu.Unlock()
	octx, cancel := l.c.op(context.Background())
	defer cancel()
	_ = l.c.leases.Delete(octx, l.id, jetstream.LastRevision(rev))
}

// delivery is one delivery of a job that a worker runs, with the status
// it writes and, once taken, its lease.
type delivery struct {
	ws      *workerState
	msg     jetstream.Msg
	j       Job
	attempt int
	st      Status
	l       *lease
}

// handle runs one delivery to its end: the lease, the dead letter of a job
// past MaxDeliver, the conversion (override's outcome instead when set)
// under the beat, and what its outcome says to do with the message.
func (ws *workerState) handle(jobCtx context.Context, msg jetstream.Msg, j Job, attempt int, override *Outcome) {
	w, c := ws.w, ws.c
	m := w.Metrics
	d := &delivery{ws: ws, msg: msg, j: j, attempt: attempt,
		st: Status{ID: j.ID, Owner: j.Owner, Batch: j.Batch, Input: j.Input, OutDir: j.OutDir, Queued: j.Submitted, Attempt: attempt, Worker: ws.name}}
	if m != nil && attempt > 1 {
		m.redelivered()
	}
	if !d.takeLease() {
		return
	}
	defer d.l.release()

	// Past MaxDeliver: to the dead letters without converting (under the
	// lease, so that no earlier holder still running can commit too).
	if attempt > c.o.MaxDeliver {
		reason := fmt.Sprintf("delivered %d times without finishing (it killed or stalled its workers); not converted again", attempt-1)
		ws.fail(msg, j, d.st, attempt, kindRedelivered, reason, d.ack)
		return
	}

	d.st.State, d.st.Started = Processing, time.Now()
	d.putStatus()
	w.logf("job %s (%s): attempt %d: taken", j.ID, j.Input, attempt)
	if m != nil {
		m.inflight(1)
		defer m.inflight(-1)
	}
	out := d.convert(jobCtx, override)
	switch out.Result {
	case Done:
		d.done(out)
	case Permanent:
		if d.stillOurs(out.Kind) {
			d.st.Result, d.st.Stages = out.Report, out.Stages
			ws.fail(msg, j, d.st, attempt, out.Kind, out.Reason, d.ack)
		}
	case Transient:
		d.transient(out)
	case Fenced:
		if m != nil {
			m.file("fenced")
		}
		w.logf("job %s (%s): attempt %d: fenced: nothing committed, not acked", j.ID, j.Input, attempt)
	case Stopped:
		d.st.State, d.st.Started = Queued, time.Time{}
		d.putStatus()
		_ = msg.Nak()
		w.logf("job %s (%s): attempt %d: stopped (shutting down): handed back", j.ID, j.Input, attempt)
	}
}

// ack acks the message (a double ack: the broker confirms it), asking
// again while the broker does not answer (a cluster electing the jobs
// stream's leader: a few seconds), so that a job done is not delivered
// again for nothing.
func (d *delivery) ack() {
	c := d.ws.c
	err := c.whileUnavailable(context.Background(), func() error {
		octx, cancel := c.op(context.Background())
		defer cancel()
		return unavailable(d.msg.DoubleAck(octx))
	})
	if err != nil {
		d.ws.w.logf("job %s (%s): ack failed: %v (its redelivery will find it done)", d.j.ID, d.j.Input, err)
	}
}

// putStatus writes the delivery's status, logging a failure.
func (d *delivery) putStatus() {
	if err := d.ws.c.putStatus(d.st); err != nil {
		d.ws.w.logf("job %s (%s): status: %v", d.j.ID, d.j.Input, err)
	}
}

// takeLease creates the job's lease (d.l), with its deadline timer that
// fences the delivery when no renewal succeeded for LeaseTTL − Beat. It
// returns false, having handed the message back, when another worker
// holds the lease (back after what is left of its TTL) or the broker
// refused (back after a beat).
func (d *delivery) takeLease() bool {
	ws, j := d.ws, d.j
	w, c := ws.w, ws.c
	val, _ := json.Marshal(struct {
		Worker  string    `json:"worker"`
		Attempt int       `json:"attempt"`
		Since   time.Time `json:"since"`
	}{ws.name, d.attempt, time.Now()})
	rev, err := d.createLease(val)
	if err != nil {
		delay := c.o.Beat
		if errors.Is(err, jetstream.ErrKeyExists) {
			// The holder's lease lives up to its TTL from its last
			// renewal; not knowing when that was, wait the whole TTL
			// (a beat would spend a delivery per beat while it runs).
			delay = c.o.LeaseTTL + 100*time.Millisecond
			octx, cancel := c.op(context.Background())
			if e, gerr := c.leases.Get(octx, leaseKey(j)); gerr == nil {
				if rest := c.o.LeaseTTL - time.Since(e.Created()); rest > 0 {
					delay = rest + 100*time.Millisecond
				}
			}
			cancel()
			w.logf("job %s (%s): attempt %d: leased by another worker; handed back for %v", j.ID, j.Input, d.attempt, delay.Round(time.Millisecond))
		} else {
			w.logf("job %s (%s): attempt %d: no lease: %v; handed back", j.ID, j.Input, d.attempt, err)
		}
		_ = d.msg.NakWithDelay(delay)
		return false
	}
	l := &lease{c: c, id: leaseKey(j), val: val, rev: rev, ch: make(chan struct{}), ok: time.Now()}
	l.onLost = func() {
		if w.Metrics != nil {
			w.Metrics.leaseLost()
		}
		w.logf("job %s (%s): attempt %d: lease lost (fenced): stopping, committing nothing", j.ID, j.Input, d.attempt)
	}
	l.dead = time.AfterFunc(c.o.LeaseTTL-c.o.Beat, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if time.Since(l.ok) >= c.o.LeaseTTL-c.o.Beat { // not renewed meanwhile
			l.setLost()
		}
	})
	d.l = l
	return true
}

// createLease creates the job's lease. While the broker does not answer
// (a cluster electing the lease bucket's leader takes seconds) it asks
// again, keeping the delivery in progress, for up to the ack wait less two
// beats: every delivery handed back counts against MaxDeliver, and an
// election is not a job that kills its workers.
func (d *delivery) createLease(val []byte) (uint64, error) {
	c := d.ws.c
	ctx, cancel := context.WithTimeout(context.Background(), c.o.AckWait-2*c.o.Beat)
	defer cancel()
	var rev uint64
	err := c.whileUnavailable(ctx, func() error {
		octx, cancel := c.op(ctx)
		defer cancel()
		var err error
		if rev, err = c.leases.Create(octx, leaseKey(d.j), val); err != nil {
			_ = d.msg.InProgress()
		}
		return unavailable(err)
	})
	return rev, err
}

// convert runs the worker's Convert on the delivery (or takes override)
// while a beat renews the lease and extends the ack deadline. Whatever
// Convert says, the outcome is Fenced when the lease was lost: another
// worker may own the job now, so no ack, no status, no dead letter (never
// both a commit and a dead letter); a conversion that committed before
// the loss is found up to date by the redelivery.
func (d *delivery) convert(jobCtx context.Context, override *Outcome) Outcome {
	c, l := d.ws.c, d.l
	beatDone := make(chan struct{})
	beatStopped := make(chan struct{})
	go func() {
		defer close(beatStopped)
		t := time.NewTicker(c.o.Beat)
		defer t.Stop()
		for {
			select {
			case <-beatDone:
				return
			case <-l.ch:
				return
			case <-t.C:
			}
			if err := l.renew(); err == nil {
				_ = d.msg.InProgress()
			}
		}
	}()
	var out Outcome
	if override != nil {
		out = *override
	} else {
		out = d.ws.w.Convert(jobCtx, Delivery{Job: d.j, Attempt: d.attempt, Lost: l.ch, Fence: l.renew})
	}
	close(beatDone)
	<-beatStopped
	if l.isLost() {
		out.Result = Fenced
	}
	return out
}

// stillOurs renews the lease before a dead letter, which must not race
// another holder's commit; when it cannot, the job is handed back
// (unacked) and counted fenced.
func (d *delivery) stillOurs(kind string) bool {
	err := d.l.renew()
	if err != nil {
		d.ws.w.logf("job %s (%s): attempt %d: failed (%s) but %v: not dead-lettered, handed back", d.j.ID, d.j.Input, d.attempt, kind, err)
		if d.ws.w.Metrics != nil {
			d.ws.w.Metrics.file("fenced")
		}
	}
	return err == nil
}

// done ends a delivery that committed its outputs (or found them up to
// date): status processed, an older dead letter of the job removed, acked.
func (d *delivery) done(out Outcome) {
	w, c, j := d.ws.w, d.ws.c, d.j
	d.l.committed()
	d.st.State, d.st.Ended = Processed, time.Now()
	d.st.Kind, d.st.Reason = "", ""
	d.st.Result, d.st.Stages = out.Report, out.Stages
	d.putStatus()
	// A dead letter of an earlier submit of the same job (queued
	// again after the de-duplication window) goes: never both.
	if err := c.removeStaleDead(context.Background(), j.Owner, j.ID); err != nil {
		w.logf("job %s (%s): %v", j.ID, j.Input, err)
	}
	d.ack()
	if w.Metrics != nil {
		w.Metrics.done(out)
	}
	w.logf("job %s (%s): attempt %d: done", j.ID, j.Input, d.attempt)
}

// transient ends a delivery that failed transiently: handed back after
// the attempt's Backoff delay (status retrying), or to the dead letters
// once the delays are used up.
func (d *delivery) transient(out Outcome) {
	w, c, j := d.ws.w, d.ws.c, d.j
	kind := out.Kind
	if kind == "" {
		kind = rawerr.KindTransient
	}
	if d.attempt <= len(c.o.Backoff) {
		delay := c.o.Backoff[d.attempt-1]
		d.st.State, d.st.Kind = Retrying, kind
		d.st.Reason = fmt.Sprintf("%s; next attempt in %v", out.Reason, delay)
		d.st.Result, d.st.Stages = out.Report, out.Stages
		d.putStatus()
		_ = d.msg.NakWithDelay(delay)
		if w.Metrics != nil {
			w.Metrics.file("retried")
		}
		w.logf("job %s (%s): attempt %d: transient failure: %s; retry in %v", j.ID, j.Input, d.attempt, out.Reason, delay)
		return
	}
	if !d.stillOurs(kind) {
		return
	}
	d.st.Result, d.st.Stages = out.Report, out.Stages
	d.ws.fail(d.msg, j, d.st, d.attempt, kind, fmt.Sprintf("transient failure persisted after %d attempts: %s", d.attempt, out.Reason), d.ack)
}

// fail dead-letters the job, sets its status failed and acks it, in this
// order: a crash in between leaves it redelivered, never lost.
func (ws *workerState) fail(msg jetstream.Msg, j Job, st Status, attempt int, kind, reason string, ack func()) {
	w, c := ws.w, ws.c
	now := time.Now()
	if err := c.deadLetter(DeadLetter{Job: j, Kind: kind, Reason: reason, Attempts: attempt, Worker: ws.name, Time: now}); err != nil {
		w.logf("job %s (%s): dead letter not written: %v; handed back", j.ID, j.Input, err)
		_ = msg.NakWithDelay(c.o.Beat)
		return
	}
	st.State, st.Kind, st.Reason, st.Ended = Failed, kind, reason, now
	if err := c.putStatus(st); err != nil {
		w.logf("job %s (%s): status: %v", j.ID, j.Input, err)
	}
	ack()
	if w.Metrics != nil {
		w.Metrics.file("failed")
	}
	w.logf("job %s (%s): attempt %d: failed (%s): %s", j.ID, j.Input, attempt, kind, reason)
}

// idleFor says whether the worker runs nothing, has run long enough for
// the registry to list every worker alive (3 beats), and has not looked
// at the classes over its budget for a beat.
func (ws *workerState) idleFor() bool {
	o := ws.c.o
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.run) == 0 && time.Since(ws.started) >= 3*o.Beat && time.Since(ws.lastLarge) >= o.Beat
}

// takeLarge looks at the classes no worker of this budget takes: when jobs
// wait there and no worker alive has a larger budget than this one, a job
// that fits the budget after all (the classes are coarse) is run, and one
// over it goes to the dead letters ("over-budget": over every worker's
// budget), but only once no bigger worker has been seen for the grace
// (2 × AckWait) since the job was published (its message's time in the
// stream): a bigger worker away for less (restarting) takes it. Otherwise
// it logs, once per change, what waits for a bigger worker. It returns
// whether it took a job.
func (ws *workerState) takeLarge(jobCtx context.Context) bool {
	c := ws.c
	ws.mu.Lock()
	ws.lastLarge = time.Now()
	ws.mu.Unlock()
	budget := ws.w.Sched.Budget()
	octx, cancel := c.op(context.Background())
	defer cancel()
	classes, waiting, err := ws.overClasses(octx, budget)
	if err != nil {
		return false
	}
	if len(classes) == 0 {
		ws.told = ""
		return false
	}
	largest := ws.largestAlive(octx, budget)
	inGrace := false
	if largest {
		// Leave the classes whose oldest job is still within the grace.
		if due := ws.dueClasses(octx, classes, budget); len(due) == 0 {
			largest, inGrace = false, true // as if for a bigger worker, until the grace ends
		} else {
			classes = due
		}
	}
	if !largest {
		ws.tellWaiting(waiting, classes, budget, inGrace)
		return false
	}
	return ws.takeOver(jobCtx, classes, budget)
}

// overClasses returns the classes over budget (those takeOne never
// fetches) where jobs wait, largest first, and how many jobs wait there.
func (ws *workerState) overClasses(octx context.Context, budget int64) (classes []string, waiting int, err error) {
	all := allClasses()
	for i := len(all) - 1; i >= 0; i-- {
		if i < len(Classes) && Classes[i] <= budget || i == len(Classes) && budget >= Classes[len(Classes)-1] {
			continue // taken by takeOne
		}
		ci, err := ws.c.cons[all[i]].Info(octx)
		if err != nil {
			return nil, 0, err
		}
		if ci.NumPending > 0 {
			classes = append(classes, all[i])
			waiting += int(ci.NumPending)
		}
	}
	return classes, waiting, nil
}

// largestAlive reports whether no other worker in the registry has a
// larger budget than budget, and keeps since when that has been so
// (largestSince).
func (ws *workerState) largestAlive(octx context.Context, budget int64) bool {
	largest := true
	_ = ws.c.watchKV(octx, ws.c.workers, ">", false, func(e jetstream.KeyValueEntry) bool {
		var wi WorkerInfo
		if json.Unmarshal(e.Value(), &wi) == nil && wi.Name != ws.name && wi.Budget > budget {
			largest = false
		}
		return largest
	})
	if !largest {
		ws.largestSince = time.Time{}
	} else if ws.largestSince.IsZero() {
		ws.largestSince = time.Now()
	}
	return largest
}

// graceLeft is how long a job published at t still waits for a bigger
// worker (> 0: leave it): the grace from t, or from when this worker
// became the largest alive if that was later.
func (ws *workerState) graceLeft(t time.Time) time.Duration {
	if t.Before(ws.largestSince) {
		t = ws.largestSince
	}
	return ws.c.o.overBudgetGrace() - time.Since(t)
}

// dueClasses returns those of classes whose oldest job is due: it fits
// budget after all (run at once), or its grace is over (or it cannot be
// read).
func (ws *workerState) dueClasses(octx context.Context, classes []string, budget int64) []string {
	var due []string
	for _, class := range classes {
		m, err := ws.c.jobs.GetMsg(octx, 1, jetstream.WithGetMsgSubject(jobsPrefix+class+".>"))
		var head Job
		if err != nil || ws.graceLeft(m.Time) <= 0 || json.Unmarshal(m.Data, &head) != nil || head.Estimate <= budget {
			due = append(due, class)
		}
	}
	return due
}

// tellWaiting logs, once per change of the count or the classes, that
// waiting jobs in classes wait for a bigger worker than this one (of
// budget), and, inGrace, when they go to the dead letters if none comes.
func (ws *workerState) tellWaiting(waiting int, classes []string, budget int64, inGrace bool) {
	tell := fmt.Sprint(waiting, classes)
	if tell == ws.told {
		return
	}
	ws.told = tell
	jobs := "1 job waits"
	if waiting != 1 {
		jobs = fmt.Sprintf("%d jobs wait", waiting)
	}
	more := ""
	if inGrace {
		more = fmt.Sprintf(" (none alive: %s %v after its publish unless one comes)", kindOverBudget, ws.c.o.overBudgetGrace())
	}
	ws.w.logf("%s in size class %s, over this worker's memory budget (%s), for a bigger worker%s", jobs, strings.Join(classes, ", "), rbudget.FormatSize(budget), more)
}

// takeOver fetches the first job of classes, largest first, as the
// largest worker alive: one that fits budget is run; one over it is
// dead-lettered (over-budget) once its grace is over, else handed back
// until then. It returns whether it took a job.
func (ws *workerState) takeOver(jobCtx context.Context, classes []string, budget int64) bool {
	for _, class := range classes {
		mb, err := ws.c.cons[class].FetchNoWait(1)
		if err != nil {
			return false
		}
		for msg := range mb.Messages() {
			md, err := msg.Metadata()
			j, jerr := decodeJob(msg.Subject(), msg.Data())
			if err != nil || jerr != nil {
				_ = msg.Term()
				continue
			}
			if j.Estimate <= budget {
				ws.start(jobCtx, msg, j, int(md.NumDelivered))
				return true
			}
			if d := ws.graceLeft(md.Timestamp); d > 0 { // within the grace after all
				_ = msg.NakWithDelay(d)
				continue
			}
			ws.startWith(jobCtx, msg, j, int(md.NumDelivered), &Outcome{Result: Permanent, Kind: kindOverBudget,
				Reason: fmt.Sprintf("needs an estimated %s of memory, more than the memory budget of every worker (the largest: %s, %s)", rbudget.FormatSize(j.Estimate), rbudget.FormatSize(budget), ws.name)})
			return true
		}
	}
	return false
}
