package queue

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// counts counts a Convert's calls per attempt and result.
type counts struct {
	mu    sync.Mutex
	calls []string // "input#attempt:result"
}

func (c *counts) add(d Delivery, r string) {
	c.mu.Lock()
	c.calls = append(c.calls, d.Job.Input+"#"+string(rune('0'+d.Attempt))+":"+r)
	c.mu.Unlock()
}

func (c *counts) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}

func (c *counts) n(sub string) int {
	k := 0
	for _, s := range c.get() {
		if strings.Contains(s, sub) {
			k++
		}
	}
	return k
}

func streamMsgs(t *testing.T, c *Client) uint64 {
	t.Helper()
	si, err := c.jobs.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return si.State.Msgs
}

// TestVanishedWorker: a worker whose Convert never returns loses its
// connection (it vanished without acking): the job is redelivered after
// the ack deadline to another worker and done once; the vanished one is
// fenced (Lost closed) and commits nothing.
func TestVanishedWorker(t *testing.T) {
	b, _ := startTestBroker(t)
	o := testOptions(b.URL())
	sub := connectT(t, o)
	oa := o
	oa.Name = "a"
	ca := connectT(t, oa)
	var cs counts
	taken := make(chan struct{})
	startWorker(t, ca, 1, func(ctx context.Context, d Delivery) Outcome {
		close(taken)
		select { // hangs until fenced (or the test's end)
		case <-d.Lost:
			cs.add(d, "lost")
			if err := d.Fence(); !errors.Is(err, ErrFenced) {
				t.Errorf("Fence after Lost: %v, want ErrFenced", err)
			}
			return Outcome{Result: Fenced}
		case <-ctx.Done():
			cs.add(d, "stopped")
			return Outcome{Result: Stopped}
		}
	})
	j := testJob("hang.dng", 1<<20)
	publishT(t, sub, j)
	<-taken
	ca.nc.Close() // the worker's host vanishes: no ack, no renewal
	waitFor(t, "the vanished worker fenced", func() bool { return cs.n("#1:lost") == 1 })

	ob := o
	ob.Name = "b"
	cb := connectT(t, ob)
	startWorker(t, cb, 1, func(ctx context.Context, d Delivery) Outcome {
		cs.add(d, "done")
		return Outcome{Result: Done, Converted: true}
	})
	waitFor(t, "the job done by the other worker", func() bool { return statusOf(t, sub, j.ID).State == Processed })
	st := statusOf(t, sub, j.ID)
	if st.Worker != "b" || st.Attempt < 2 {
		t.Errorf("status = %+v, want processed by b on a redelivery", st)
	}
	if got := cs.n(":done"); got != 1 {
		t.Errorf("done %d times, want once (%v)", got, cs.get())
	}
	if n := streamMsgs(t, sub); n != 0 {
		t.Errorf("%d jobs left in the stream, want 0", n)
	}
}

// TestMaxDeliver: a job handed back on every delivery (here: the worker
// stops each time) reaches the dead letters on its delivery after
// MaxDeliver, without another Convert.
func TestMaxDeliver(t *testing.T) {
	b, _ := startTestBroker(t)
	o := testOptions(b.URL())
	o.MaxDeliver = 2
	c := connectT(t, o)
	var cs counts
	startWorker(t, c, 1, func(ctx context.Context, d Delivery) Outcome {
		cs.add(d, "stopped")
		return Outcome{Result: Stopped} // handed back: redelivered at once
	})
	j := testJob("killer.dng", 1<<20)
	publishT(t, c, j)
	waitFor(t, "the job in the dead letters", func() bool { return statusOf(t, c, j.ID).State == Failed })
	dl, err := c.DeadLetterOf(context.Background(), j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if dl.Kind != "redelivered" || !strings.Contains(dl.Reason, "delivered 2 times") || dl.Attempts != 3 {
		t.Errorf("dead letter = %+v, want redelivered after 2 deliveries, on the third", dl)
	}
	if got := strings.Join(cs.get(), " "); got != "/in/killer.dng#1:stopped /in/killer.dng#2:stopped" {
		t.Errorf("converted %s, want attempts 1 and 2 only", got)
	}
	if n := streamMsgs(t, c); n != 0 {
		t.Errorf("%d jobs left in the stream, want 0 (acked)", n)
	}
}

// electingKV is a lease bucket whose first fails creations answer as a
// cluster electing the bucket's leader does (no responders).
type electingKV struct {
	jetstream.KeyValue
	fails atomic.Int32
}

func (kv *electingKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	if kv.fails.Add(-1) >= 0 {
		return 0, nats.ErrNoResponders
	}
	return kv.KeyValue.Create(ctx, key, value, opts...)
}

// TestLeaseBucketElection: while the lease bucket does not answer for
// longer than MaxDeliver beats, a delivered job is held, not handed back
// once a beat, so that it is converted once and not dead-lettered as a
// job that killed its workers.
func TestLeaseBucketElection(t *testing.T) {
	b, _ := startTestBroker(t)
	o := testOptions(b.URL())
	o.MaxDeliver = 2
	c := connectT(t, o)
	kv := &electingKV{KeyValue: c.leases}
	kv.fails.Store(3) // 100 + 200 + 400 ms of backoff: over two beats, under the ack wait
	c.leases = kv
	var cs counts
	startWorker(t, c, 1, func(ctx context.Context, d Delivery) Outcome {
		cs.add(d, "done")
		return Outcome{Result: Done}
	})
	j := testJob("election.dng", 1<<20)
	publishT(t, c, j)
	waitFor(t, "the job finished", func() bool { st := statusOf(t, c, j.ID).State; return st == Processed || st == Failed })
	if st := statusOf(t, c, j.ID); st.State != Processed {
		t.Errorf("status %+v, want processed", st)
	}
	if got := strings.Join(cs.get(), " "); got != "/in/election.dng#1:done" {
		t.Errorf("converted %s, want once, on its first delivery", got)
	}
}

// TestFencing: the lease of a running job taken over (its key
// overwritten) closes Lost, makes Fence fail, and nothing is acked: the
// job is redelivered and done once, by the next delivery.
func TestFencing(t *testing.T) {
	b, _ := startTestBroker(t)
	o := testOptions(b.URL())
	c := connectT(t, o)
	var cs counts
	taken := make(chan struct{}, 1)
	fenceErr := make(chan error, 1)
	var thief atomic.Bool // the thief holds the lease
	tw := startWorker(t, c, 1, func(ctx context.Context, d Delivery) Outcome {
		if d.Attempt > 1 {
			if thief.Load() {
				t.Error("a delivery converted while another worker held the job's lease")
			}
			if err := d.Fence(); err != nil {
				t.Errorf("Fence of a delivery holding its lease: %v", err)
			}
			cs.add(d, "done")
			return Outcome{Result: Done, Converted: true}
		}
		if err := d.Fence(); err != nil {
			t.Errorf("Fence of a fresh lease: %v", err)
		}
		taken <- struct{}{}
		select {
		case <-d.Lost:
		case <-time.After(20 * time.Second):
			t.Error("Lost not closed after the lease was taken over")
		}
		fenceErr <- d.Fence()
		cs.add(d, "fenced")
		return Outcome{Result: Done} // even a Done after Lost: the worker must not ack it as done
	})
	j := testJob("stolen.dng", 1<<20)
	publishT(t, c, j)
	<-taken
	// The thief takes the lease over and keeps it until a redelivery was
	// handed back for it.
	thief.Store(true)
	stole := make(chan struct{})
	go func() {
		defer thief.Store(false)
		for first := true; first || !tw.logged("leased by another worker"); first = false {
			if _, err := c.leases.Put(context.Background(), leaseKey(j), []byte(`{"worker":"thief"}`)); err != nil {
				t.Error(err)
				return
			}
			if first {
				close(stole)
			}
			time.Sleep(o.Beat)
		}
		// Let the thief's lease go as a dead thief's would: by its TTL.
	}()
	<-stole
	if err := <-fenceErr; !errors.Is(err, ErrFenced) {
		t.Errorf("Fence after the take-over: %v, want ErrFenced", err)
	}
	waitFor(t, "the fenced attempt ended", func() bool { return cs.n("#1:fenced") == 1 })
	if st := statusOf(t, c, j.ID); st.State == Processed {
		t.Errorf("status after the fenced attempt = %+v, want not processed", st)
	}
	if n := streamMsgs(t, c); n != 1 {
		t.Errorf("%d jobs in the stream after the fenced attempt, want 1 (not acked)", n)
	}
	// The thief's lease expires (TTL); the redelivery does it.
	waitFor(t, "the job done on a redelivery", func() bool { return statusOf(t, c, j.ID).State == Processed })
	if got := cs.n(":done"); got != 1 {
		t.Errorf("done %d times, want once (%v)", got, cs.get())
	}
	var text bytes.Buffer
	if err := tw.w.Metrics.WriteText(context.Background(), &text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"rawbatch_leases_lost_total 1\n", `rawbatch_files_total{result="fenced"} 1` + "\n", "rawbatch_redeliveries_total "} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, text.String())
		}
	}
	if strings.Contains(text.String(), "rawbatch_redeliveries_total 0\n") {
		t.Error("a redelivery not counted")
	}
}

// TestBrokerRestart: jobs queued survive a restart of the broker on its
// store; the clients and the worker reconnect by themselves; a job in
// flight during the restart is done once.
func TestBrokerRestart(t *testing.T) {
	store := t.TempDir()
	b, err := StartBroker(BrokerOptions{Store: store, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	url := b.URL()
	addr := strings.TrimPrefix(url, "nats://")
	restart := func() {
		t.Helper()
		b.Shutdown()
		if b, err = StartBroker(BrokerOptions{Store: store, Listen: addr}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { b.Shutdown() })
	o := testOptions(url)
	sub := connectT(t, o)
	wc := connectT(t, o)
	j1, j2, j3 := testJob("one.dng", 1<<20), testJob("two.dng", 1<<20), testJob("three.dng", 1<<20)
	publishT(t, sub, j1)
	publishT(t, sub, j2)
	restart()
	waitFor(t, "the submitter reconnected", func() bool { return sub.nc.IsConnected() })
	// A restarted broker answers JetStream requests only once it has
	// recovered its streams from the store: ask until it does.
	var qi QueueInfo
	waitFor(t, "the restarted broker's queue info", func() bool {
		qi, err = sub.Info(context.Background())
		return err == nil
	})
	if qi.Depth["le256m"] != 2 {
		t.Fatalf("depth after the restart = %v, want the 2 jobs queued before it", qi.Depth)
	}
	var cs counts
	gate := make(chan struct{})
	inThree := make(chan struct{}, 1)
	tw := startWorker(t, wc, 1, func(ctx context.Context, d Delivery) Outcome {
		if d.Job.ID == j3.ID {
			select {
			case inThree <- struct{}{}:
			default:
			}
			<-gate
			if d.Fence() != nil {
				cs.add(d, "fenced")
				return Outcome{Result: Fenced}
			}
		}
		cs.add(d, "done")
		return Outcome{Result: Done, Converted: true}
	})
	waitFor(t, "the kept jobs done", func() bool {
		return statusOf(t, sub, j1.ID).State == Processed && statusOf(t, sub, j2.ID).State == Processed
	})
	publishT(t, sub, j3)
	<-inThree
	restart() // with a job in flight
	close(gate)
	waitFor(t, "the job in flight done", func() bool {
		st := statusOf(t, sub, j3.ID)
		return st.State == Processed
	})
	if n := cs.n("three.dng#") - cs.n(":fenced"); n != 1 {
		t.Errorf("the job in flight was done %d times, want once (%v)", n, cs.get())
	}
	// The status is written before the ack: the message leaves the
	// stream a moment after the job reads as processed.
	waitFor(t, "the stream empty", func() bool { return streamMsgs(t, sub) == 0 })
	waitFor(t, "the worker's reconnect logged", func() bool { return tw.logged("reconnected") })
}

// TestShutdownHandsBack: when Run's context ends, a job still running
// after Grace is stopped and handed back (status queued), Run returns, and
// the next worker takes it at once.
func TestShutdownHandsBack(t *testing.T) {
	b, _ := startTestBroker(t)
	c := connectT(t, testOptions(b.URL()))
	var cs counts
	taken := make(chan struct{}, 1)
	tw := startWorker(t, c, 1, func(ctx context.Context, d Delivery) Outcome {
		taken <- struct{}{}
		<-ctx.Done() // ends Grace after Run's context
		cs.add(d, "stopped")
		return Outcome{Result: Stopped}
	})
	j := testJob("long.dng", 1<<20)
	publishT(t, c, j)
	<-taken
	tw.stop(t)
	if st := statusOf(t, c, j.ID); st.State != Queued {
		t.Errorf("status after the shutdown = %+v, want queued", st)
	}
	if cs.n("#1:stopped") != 1 {
		t.Errorf("calls %v, want attempt 1 stopped", cs.get())
	}
	startWorker(t, c, 1, func(ctx context.Context, d Delivery) Outcome {
		cs.add(d, "done")
		return Outcome{Result: Done, Converted: true}
	})
	waitFor(t, "the job done by the next worker", func() bool { return statusOf(t, c, j.ID).State == Processed })
	if cs.n("#2:done") != 1 {
		t.Errorf("calls %v, want attempt 2 done", cs.get())
	}
}

// TestClassesAndBudget: a worker takes only jobs whose class fits its
// budget while a bigger worker is alive; the bigger one takes the rest.
func TestClassesAndBudget(t *testing.T) {
	b, _ := startTestBroker(t)
	o := testOptions(b.URL())
	sub := connectT(t, o)
	small, big := testJob("small.dng", 200<<20), testJob("big.dng", 3<<30)
	publishT(t, sub, big)
	publishT(t, sub, small)
	// A bigger worker is alive (its registry entry, kept fresh).
	stopBig := make(chan struct{})
	bigAlive := make(chan struct{})
	go func() {
		defer close(bigAlive)
		for {
			wi, _ := json.Marshal(WorkerInfo{Name: "elsewhere", Budget: 8 << 30, Seen: time.Now()})
			if _, err := sub.workers.Put(context.Background(), "elsewhere", wi); err != nil {
				t.Error(err)
				return
			}
			select {
			case <-stopBig:
				return
			case <-time.After(o.Beat):
			}
		}
	}()
	var cs counts
	convert := func(ctx context.Context, d Delivery) Outcome {
		cs.add(d, "done")
		return Outcome{Result: Done, Converted: true}
	}
	oa := o
	oa.Name = "small-worker"
	ca := connectT(t, oa)
	tw := startWorkerBudget(t, ca, 2, 1<<30, convert)
	waitFor(t, "the small job done", func() bool { return statusOf(t, sub, small.ID).State == Processed })
	waitFor(t, "the small worker leaving the big job to a bigger worker", func() bool { return tw.logged("for a bigger worker") })
	if st := statusOf(t, sub, big.ID); st.State != Queued {
		t.Fatalf("the big job on a 1 GiB worker: %+v, want still queued", st)
	}
	ob := o
	ob.Name = "big-worker"
	cb := connectT(t, ob)
	startWorkerBudget(t, cb, 2, 8<<30, convert)
	waitFor(t, "the big job done", func() bool { return statusOf(t, sub, big.ID).State == Processed })
	close(stopBig)
	<-bigAlive
	if st := statusOf(t, sub, big.ID); st.Worker != "big-worker" || st.Attempt != 1 {
		t.Errorf("the big job: %+v, want done by the big worker on its first delivery", st)
	}
	if st := statusOf(t, sub, small.ID); st.Worker != "small-worker" {
		t.Errorf("the small job: %+v, want done by the small worker", st)
	}
}

// TestOverEveryBudget: with no bigger worker alive, the largest worker
// runs a job of a class over its budget whose own estimate fits, and sends
// one over its budget to the dead letters (over-budget), without a
// conversion.
func TestOverEveryBudget(t *testing.T) {
	b, _ := startTestBroker(t)
	o := testOptions(b.URL())
	c := connectT(t, o)
	fits, over := testJob("fits.dng", 1200<<20), testJob("over.dng", 3<<30) // classes le2g and le4g
	publishT(t, c, fits)
	publishT(t, c, over)
	var cs counts
	startWorkerBudget(t, c, 2, 1500<<20, func(ctx context.Context, d Delivery) Outcome {
		cs.add(d, "done")
		return Outcome{Result: Done, Converted: true}
	})
	waitFor(t, "both jobs ended", func() bool {
		return statusOf(t, c, fits.ID).State == Processed && statusOf(t, c, over.ID).State == Failed
	})
	if got := strings.Join(cs.get(), " "); got != "/in/fits.dng#1:done" {
		t.Errorf("converted %s, want fits.dng only", got)
	}
	dl, err := c.DeadLetterOf(context.Background(), over.ID)
	if err != nil {
		t.Fatal(err)
	}
	if dl.Kind != "over-budget" || !strings.Contains(dl.Reason, "every worker") {
		t.Errorf("dead letter %+v, want over-budget, over every worker's budget", dl)
	}
}

var metricLine = regexp.MustCompile(`^([a-z_]+)(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? ([-+0-9.e]+|[-+]Inf|NaN)$`)

// TestMetricsText: the metrics parse as Prometheus' text format and have
// every name docs/distributed.md lists, with the queue's gauges from the broker.
func TestMetricsText(t *testing.T) {
	b, _ := startTestBroker(t)
	c := connectT(t, testOptions(b.URL()))
	publishT(t, c, testJob("waiting.dng", 600<<20))
	m := NewMetrics(c, nil)
	m.done(Outcome{Result: Done, Converted: true, Stages: map[string]float64{"decode": 0.3, "encode": 70}})
	m.file("failed")
	var text bytes.Buffer
	if err := m.WriteText(context.Background(), &text); err != nil {
		t.Fatal(err)
	}
	typed := map[string]string{}
	samples := map[string]string{}
	sc := bufio.NewScanner(&text)
	for sc.Scan() {
		l := sc.Text()
		if f := strings.Fields(l); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			typed[f[2]] = f[3]
			continue
		}
		if strings.HasPrefix(l, "# HELP ") {
			continue
		}
		mm := metricLine.FindStringSubmatch(l)
		if mm == nil {
			t.Errorf("not a sample line: %q", l)
			continue
		}
		samples[mm[1]+mm[2]] = mm[4]
	}
	for name, typ := range map[string]string{
		"rawbatch_queue_depth": "gauge", "rawbatch_jobs_inflight": "gauge", "rawbatch_oldest_job_age_seconds": "gauge",
		"rawbatch_dead_jobs": "gauge", "rawbatch_files_total": "counter", "rawbatch_stage_seconds": "histogram",
		"rawbatch_redeliveries_total": "counter", "rawbatch_leases_lost_total": "counter",
		"rawbatch_memory_budget_bytes": "gauge", "rawbatch_memory_in_use_bytes": "gauge",
	} {
		if typed[name] != typ {
			t.Errorf("%s: type %q, want %s", name, typed[name], typ)
		}
	}
	for k, want := range map[string]string{
		`rawbatch_queue_depth{class="le1g"}`:                      "1",
		`rawbatch_queue_depth{class="le256m"}`:                    "0",
		`rawbatch_files_total{result="converted"}`:                "1",
		`rawbatch_files_total{result="failed"}`:                   "1",
		`rawbatch_stage_seconds_bucket{stage="decode",le="0.25"}`: "0",
		`rawbatch_stage_seconds_bucket{stage="decode",le="0.5"}`:  "1",
		`rawbatch_stage_seconds_bucket{stage="encode",le="60"}`:   "0",
		`rawbatch_stage_seconds_bucket{stage="encode",le="+Inf"}`: "1",
		`rawbatch_stage_seconds_count{stage="encode"}`:            "1",
		`rawbatch_dead_jobs`:                                      "0",
	} {
		if samples[k] != want {
			t.Errorf("%s = %q, want %s", k, samples[k], want)
		}
	}
	// The process's metrics, from the client library's collector.
	for _, name := range []string{"process_cpu_seconds_total", "process_resident_memory_bytes", "go_goroutines"} {
		if samples[name] == "" {
			t.Errorf("%s: no sample", name)
		}
	}
	if samples["rawbatch_oldest_job_age_seconds"] == "0" || samples["rawbatch_oldest_job_age_seconds"] == "" {
		t.Errorf("oldest job's age = %q, want > 0", samples["rawbatch_oldest_job_age_seconds"])
	}
}

// TestDoneRemovesOldDeadLetter: a job queued again while a dead letter of
// it remains (a re-submit after the de-duplication window) and then
// converted leaves no dead letter: never both.
func TestDoneRemovesOldDeadLetter(t *testing.T) {
	b, _ := startTestBroker(t)
	c := connectT(t, testOptions(b.URL()))
	j := testJob("again.dng", 1<<20)
	if err := c.deadLetter(DeadLetter{Job: j, Kind: "corrupt", Reason: "an earlier attempt", Attempts: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.publish(context.Background(), j, true, j.ID+"/"+nonce()); err != nil {
		t.Fatal(err)
	}
	startWorker(t, c, 1, func(ctx context.Context, d Delivery) Outcome { return Outcome{Result: Done, Converted: true} })
	// The status is written before the old dead letter is removed and the
	// job acked: wait for the ack (the job out of the stream).
	waitFor(t, "the job done and acked", func() bool { return statusOf(t, c, j.ID).State == Processed && streamMsgs(t, c) == 0 })
	if _, err := c.DeadLetterOf(context.Background(), j.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("dead letter of a job converted since: %v, want ErrNotFound", err)
	}
}

// TestLongJob: a job running for longer than the ack deadline (the beat
// renews its lease and extends the deadline with InProgress) is neither
// redelivered nor fenced.
func TestLongJob(t *testing.T) {
	b, _ := startTestBroker(t)
	o := testOptions(b.URL())
	c := connectT(t, o)
	var cs counts
	tw := startWorker(t, c, 2, func(ctx context.Context, d Delivery) Outcome {
		end := time.Now().Add(2*o.AckWait + o.AckWait/2) // the job's own work: longer than the deadline
		for time.Now().Before(end) {
			select {
			case <-d.Lost:
				cs.add(d, "lost")
				return Outcome{Result: Fenced}
			case <-time.After(50 * time.Millisecond):
			}
		}
		if err := d.Fence(); err != nil {
			cs.add(d, "fenced")
			return Outcome{Result: Fenced}
		}
		cs.add(d, "done")
		return Outcome{Result: Done, Converted: true}
	})
	j := testJob("long.dng", 1<<20)
	publishT(t, c, j)
	waitFor(t, "the long job done", func() bool { return statusOf(t, c, j.ID).State == Processed })
	if got := strings.Join(cs.get(), " "); got != "/in/long.dng#1:done" {
		t.Errorf("calls %s, want attempt 1 done only", got)
	}
	var text bytes.Buffer
	if err := tw.w.Metrics.WriteText(context.Background(), &text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "rawbatch_redeliveries_total 0\n") || !strings.Contains(text.String(), "rawbatch_leases_lost_total 0\n") {
		t.Errorf("a long job was redelivered or fenced:\n%s", text.String())
	}
}

// TestManyWorkers: three workers and 60 jobs: each job done once, every
// worker took some, nothing dead, nothing left; publishing some again
// queues them again (a re-submit: the broker's de-duplication absorbs
// only a resend of the same Publish call).
func TestManyWorkers(t *testing.T) {
	b, _ := startTestBroker(t)
	o := testOptions(b.URL())
	sub := connectT(t, o)
	const n = 60
	var jobs []Job
	for i := range n {
		j := testJob(fmt.Sprintf("many%02d.dng", i), int64(i%3)*300<<20)
		jobs = append(jobs, j)
		if !publishT(t, sub, j) {
			t.Fatalf("job %d not queued", i)
		}
	}
	var mu sync.Mutex
	done := map[string]int{}
	byWorker := map[string]int{}
	var barrier sync.WaitGroup // the first three jobs run at once, one per worker
	barrier.Add(3)
	var first atomic.Int32
	for w := range 3 {
		ow := o
		ow.Name = fmt.Sprintf("w%d", w)
		cw := connectT(t, ow)
		name := ow.Name
		startWorker(t, cw, 1, func(ctx context.Context, d Delivery) Outcome {
			if first.Add(1) <= 3 {
				barrier.Done()
				barrier.Wait()
			}
			if err := d.Fence(); err != nil {
				return Outcome{Result: Fenced}
			}
			mu.Lock()
			done[d.Job.ID]++
			byWorker[name]++
			mu.Unlock()
			return Outcome{Result: Done, Converted: true}
		})
	}
	waitFor(t, "every job processed", func() bool {
		sts, err := sub.Statuses(context.Background(), "b1")
		if err != nil {
			return false
		}
		k := 0
		for _, s := range sts {
			if s.State == Processed {
				k++
			}
		}
		return k == n
	})
	mu.Lock()
	for _, j := range jobs {
		if done[j.ID] != 1 {
			t.Errorf("%s done %d times, want once", j.Input, done[j.ID])
		}
	}
	if len(byWorker) != 3 {
		t.Errorf("jobs by worker %v, want every worker some", byWorker)
	}
	mu.Unlock()
	// A job's status is written before its ack: wait for the acks.
	waitFor(t, "every job acked", func() bool { return streamMsgs(t, sub) == 0 })
	qi, err := sub.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if qi.Dead != 0 || qi.InFlight != 0 || streamMsgs(t, sub) != 0 {
		t.Errorf("info %+v, %d left: want nothing dead, in flight or left", qi, streamMsgs(t, sub))
	}
	for _, j := range jobs[:5] {
		if !publishT(t, sub, j) {
			t.Errorf("%s not queued again right after it was done (taken for a duplicate within the de-duplication window)", j.Input)
		}
	}
}

// TestPublishWhileBrokerAway: a Publish made while the broker is down
// asks again until it is back (whileUnavailable) and queues the job once,
// and a status read then works too; a broker that stays away makes it
// fail with ErrUnavailable (checked with a short ctx).
func TestPublishWhileBrokerAway(t *testing.T) {
	store := t.TempDir()
	b, err := StartBroker(BrokerOptions{Store: store, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	url := b.URL()
	addr := strings.TrimPrefix(url, "nats://")
	c := connectT(t, testOptions(url))
	b.Shutdown()
	j := testJob("away.dng", 1<<20)
	type res struct {
		queued bool
		err    error
	}
	done := make(chan res, 1)
	go func() {
		q, err := c.Publish(context.Background(), j)
		done <- res{q, err}
	}()
	time.Sleep(1500 * time.Millisecond) // the broker away for longer than a call's answer takes
	b2, err := StartBroker(BrokerOptions{Store: store, Listen: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b2.Shutdown)
	var r res
	select {
	case r = <-done:
	case <-time.After(2 * unavailableWait):
		t.Fatal("Publish did not return after the broker came back")
	}
	if r.err != nil || !r.queued {
		t.Fatalf("Publish across a broker restart = %v, %v; want queued", r.queued, r.err)
	}
	if q, err := c.Publish(context.Background(), j); err != nil || q {
		t.Fatalf("a second Publish = %v, %v; want already queued", q, err)
	}
	sts, err := c.Statuses(context.Background(), "")
	if err != nil || len(sts) != 1 || sts[0].State != Queued {
		t.Fatalf("statuses after the restart = %+v, %v; want the one job queued", sts, err)
	}
	b2.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := c.Publish(ctx, testJob("never.dng", 1<<20)); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Publish with the broker gone = %v; want ErrUnavailable", err)
	}
}

// TestLeasePerNamespace: two submitters' jobs with the same id (one
// submitter queuing another's id) run at once on a worker, each under
// its own namespace's lease: neither is handed back as leased by
// another worker.
func TestLeasePerNamespace(t *testing.T) {
	b, _ := startTestBroker(t)
	c := connectT(t, testOptions(b.URL()))
	started := make(chan string, 4)
	release := make(chan struct{})
	tw := startWorker(t, c, 2, func(ctx context.Context, d Delivery) Outcome {
		started <- d.Job.Owner
		select {
		case <-release:
		case <-ctx.Done():
		}
		return Outcome{Result: Done}
	})
	for _, owner := range []string{"alice", "bob"} {
		j := testJob("same.dng", 1<<20)
		j.Owner = owner
		publishT(t, c, j)
	}
	got := map[string]bool{}
	timeout := time.After(20 * time.Second)
	for len(got) < 2 {
		select {
		case o := <-started:
			got[o] = true
		case <-timeout:
			t.Fatalf("only %v started together (leased by another worker: %v)", got, tw.logged("leased by another worker"))
		}
	}
	close(release)
	if tw.logged("leased by another worker") {
		t.Error("a job was handed back as leased by another worker")
	}
}
