package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/rawbatch/rawbatch/budget"
)

// Short timings: every wait in these tests is on one of them.
func testOptions(url string) Options {
	return Options{
		URL:        url,
		AckWait:    2 * time.Second,
		LeaseTTL:   1200 * time.Millisecond,
		Beat:       300 * time.Millisecond,
		MaxDeliver: 5,
		Backoff:    []time.Duration{300 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond},
		Name:       "test",
	}
}

// startTestBroker starts an embedded broker on a random port with its
// store in a temporary directory.
func startTestBroker(t *testing.T) (*Broker, string) {
	t.Helper()
	store := t.TempDir()
	b, err := StartBroker(BrokerOptions{Store: store, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Shutdown)
	return b, store
}

func connectT(t *testing.T, o Options) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Connect(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// waitFor polls cond until it holds, failing the test after a generous
// deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func testJob(name string, estimate int64) Job {
	return Job{
		ID:       JobID("/in/"+name, 1234, time.Unix(1700000000, 0), "settings"),
		Batch:    "b1",
		Input:    "/in/" + name,
		OutDir:   "/out",
		Estimate: estimate,
		Payload:  json.RawMessage(fmt.Sprintf(`{"name":%q}`, name)),
	}
}

func publishT(t *testing.T, c *Client, j Job) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	q, err := c.Publish(ctx, j)
	if err != nil {
		t.Fatalf("publish %s: %v", j.Input, err)
	}
	return q
}

func statusOf(t *testing.T, c *Client, id string) Status {
	t.Helper()
	sts, err := c.Statuses(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sts {
		if s.ID == id {
			return s
		}
	}
	return Status{}
}

// worker runs a Worker until the test ends (or stop is called); stop
// returns when Run has returned.
type testWorker struct {
	w      *Worker
	cancel context.CancelFunc
	done   chan error
	mu     sync.Mutex
	logs   []string
}

func startWorker(t *testing.T, c *Client, jobs int, convert func(ctx context.Context, d Delivery) Outcome) *testWorker {
	t.Helper()
	return startWorkerBudget(t, c, jobs, 4<<30, convert)
}

// startWorkerBudget starts a worker with a budget of budget bytes.
func startWorkerBudget(t *testing.T, c *Client, jobs int, budgetBytes int64, convert func(ctx context.Context, d Delivery) Outcome) *testWorker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tw := &testWorker{cancel: cancel, done: make(chan error, 1)}
	tw.w = &Worker{
		Client: c, Sched: budget.NewScheduler(budgetBytes), Jobs: jobs, Convert: convert,
		Grace: 200 * time.Millisecond,
		Log: func(s string) {
			tw.mu.Lock()
			tw.logs = append(tw.logs, s)
			tw.mu.Unlock()
			t.Log(s)
		},
	}
	tw.w.Metrics = NewMetrics(c, tw.w.Sched)
	go func() { tw.done <- tw.w.Run(ctx) }()
	t.Cleanup(func() { tw.stop(t) })
	return tw
}

func (tw *testWorker) stop(t *testing.T) {
	tw.cancel()
	select {
	case err := <-tw.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		tw.done <- nil
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

func (tw *testWorker) logged(sub string) bool {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	for _, l := range tw.logs {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

func TestJobIDAndClasses(t *testing.T) {
	mt := time.Unix(1700000000, 5)
	id := JobID("/a/b.dng", 10, mt, "h")
	if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
		t.Fatalf("JobID = %q, want 32 hex digits", id)
	}
	if JobID("/a/b.dng", 10, mt, "h") != id {
		t.Fatal("JobID is not stable")
	}
	for _, other := range []string{
		JobID("/a/c.dng", 10, mt, "h"), JobID("/a/b.dng", 11, mt, "h"),
		JobID("/a/b.dng", 10, mt.Add(time.Nanosecond), "h"), JobID("/a/b.dng", 10, mt, "g"),
	} {
		if other == id {
			t.Fatal("JobID ignores one of its inputs")
		}
	}
	cases := []struct {
		est  int64
		want string
	}{
		{0, "le256m"}, {256 << 20, "le256m"}, {256<<20 + 1, "le512m"}, {1 << 30, "le1g"},
		{3 << 30, "le4g"}, {16 << 30, "le16g"}, {16<<30 + 1, "huge"}, {1 << 40, "huge"},
	}
	for _, c := range cases {
		if got := ClassOf(c.est); got != c.want {
			t.Errorf("ClassOf(%d) = %s, want %s", c.est, got, c.want)
		}
	}
}

func TestPublishDedupeClasses(t *testing.T) {
	b, _ := startTestBroker(t)
	testPublishDedupe(t, b.URL())
}

func testPublishDedupe(t *testing.T, url string) {
	c := connectT(t, testOptions(url))
	small, big := testJob("small.dng", 100<<20), testJob("big.dng", 900<<20)
	if !publishT(t, c, small) || !publishT(t, c, big) {
		t.Fatal("a new job was not queued")
	}
	if publishT(t, c, small) {
		t.Error("a job published twice was queued twice")
	}
	// A second client (another submit) is refused too.
	c2 := connectT(t, testOptions(url))
	if publishT(t, c2, big) {
		t.Error("a job published again by another client was queued twice")
	}
	qi, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if qi.Depth["le256m"] != 1 || qi.Depth["le1g"] != 1 || qi.Depth["le512m"] != 0 {
		t.Errorf("depth = %v, want le256m 1, le1g 1", qi.Depth)
	}
	if qi.Oldest <= 0 {
		t.Errorf("oldest job's age = %v, want > 0", qi.Oldest)
	}
	if st := statusOf(t, c, small.ID); st.State != Queued || st.Input != small.Input || st.Batch != "b1" {
		t.Errorf("status of %s = %+v, want queued", small.Input, st)
	}
}

func TestBackpressure(t *testing.T) {
	b, _ := startTestBroker(t)
	testBackpressure(t, b.URL())
}

func testBackpressure(t *testing.T, url string) {
	o := testOptions(url)
	o.QueueMax = 3
	c := connectT(t, o)
	const n = 8
	var published atomic.Int32
	pubErr := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for i := range n {
			q, err := c.Publish(ctx, testJob(fmt.Sprintf("f%d.dng", i), 1<<20))
			if err == nil && !q {
				err = fmt.Errorf("job %d not queued", i)
			}
			if err != nil {
				pubErr <- err
				return
			}
			published.Add(1)
		}
		pubErr <- nil
	}()
	// The queue fills up and the publisher waits.
	waitFor(t, "3 jobs in the queue", func() bool { return published.Load() == 3 })
	qi, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if qi.Depth["le256m"] != 3 {
		t.Fatalf("depth = %v, want 3 in le256m", qi.Depth)
	}
	select {
	case err := <-pubErr:
		t.Fatalf("publishing into a full queue returned (%v) instead of waiting", err)
	default:
	}
	// A short deadline ends the wait with an error, not a lost job.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err = c.Publish(ctx, testJob("extra.dng", 1<<20))
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("publish into a full queue with a short deadline: %v, want the deadline", err)
	}
	var converted atomic.Int32
	startWorker(t, c, 2, func(ctx context.Context, d Delivery) Outcome {
		converted.Add(1)
		return Outcome{Result: Done, Converted: true}
	})
	if err := <-pubErr; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every job converted", func() bool { return converted.Load() == n })
}

// outcomes: ok is done, bad fails for good, flaky fails transiently twice
// and succeeds on its third delivery.
func TestWorkerOutcomes(t *testing.T) {
	b, _ := startTestBroker(t)
	testWorkerOutcomes(t, b.URL())
}

func testWorkerOutcomes(t *testing.T, url string) {
	c := connectT(t, testOptions(url))
	ok, bad, flaky := testJob("ok.dng", 1<<20), testJob("bad.dng", 1<<20), testJob("flaky.dng", 1<<20)
	var mu sync.Mutex
	calls := map[string][]int{} // input → attempts converted
	tw := startWorker(t, c, 2, func(ctx context.Context, d Delivery) Outcome {
		mu.Lock()
		calls[d.Job.Input] = append(calls[d.Job.Input], d.Attempt)
		mu.Unlock()
		if err := d.Fence(); err != nil {
			return Outcome{Result: Fenced, Reason: err.Error()}
		}
		switch d.Job.Input {
		case bad.Input:
			return Outcome{Result: Permanent, Kind: "corrupt", Reason: "truncated DNG: strip 3 ends at byte 900 of 512"}
		case flaky.Input:
			if d.Attempt < 3 {
				return Outcome{Result: Transient, Kind: "transient", Reason: "no space left on device"}
			}
		}
		return Outcome{Result: Done, Converted: true, Report: json.RawMessage(`{"result":"converted"}`),
			Stages: map[string]float64{"decode": 0.02, "encode": 0.5}}
	})
	for _, j := range []Job{ok, bad, flaky} {
		publishT(t, c, j)
	}
	waitFor(t, "every job ended", func() bool {
		return statusOf(t, c, ok.ID).State == Processed && statusOf(t, c, bad.ID).State == Failed &&
			statusOf(t, c, flaky.ID).State == Processed
	})
	mu.Lock()
	if got := fmt.Sprint(calls[ok.Input], calls[bad.Input], calls[flaky.Input]); got != "[1] [1] [1 2 3]" {
		t.Errorf("attempts converted (ok, bad, flaky) = %s, want [1] [1] [1 2 3]", got)
	}
	mu.Unlock()
	if st := statusOf(t, c, flaky.ID); st.Attempt != 3 || string(st.Result) != `{"result":"converted"}` || st.Stages["encode"] != 0.5 || st.Ended.IsZero() {
		t.Errorf("status of the flaky job = %+v, want processed on attempt 3 with its report and stages", st)
	}
	st := statusOf(t, c, bad.ID)
	if st.Kind != "corrupt" || !strings.Contains(st.Reason, "truncated") {
		t.Errorf("status of the bad job = %+v, want failed, corrupt, with the reason", st)
	}
	dl, err := c.DeadLetterOf(context.Background(), bad.ID)
	if err != nil {
		t.Fatal(err)
	}
	if dl.Kind != "corrupt" || !strings.Contains(dl.Reason, "truncated") || dl.Attempts != 1 || dl.Job.Input != bad.Input || string(dl.Job.Payload) != string(bad.Payload) {
		t.Errorf("dead letter = %+v, want corrupt with the reason and the job", dl)
	}
	if _, err := c.DeadLetterOf(context.Background(), ok.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("dead letter of a converted job: %v, want ErrNotFound", err)
	}
	dead, err := c.Dead(context.Background(), "b1")
	if err != nil || len(dead) != 1 || dead[0].Job.ID != bad.ID {
		t.Errorf("Dead = %v, %v; want the bad job only", dead, err)
	}
	if dead, err := c.Dead(context.Background(), "other"); err != nil || len(dead) != 0 {
		t.Errorf("Dead of another batch = %v, %v; want none", dead, err)
	}
	// A job's status is written before its ack: wait for the acks.
	waitFor(t, "every job acked", func() bool { return streamMsgs(t, c) == 0 })
	qi, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if qi.Dead != 1 || qi.Depth["le256m"] != 0 || qi.InFlight != 0 {
		t.Errorf("info = %+v, want 1 dead, nothing waiting or in flight", qi)
	}
	waitFor(t, "the worker in the registry", func() bool {
		qi, err := c.Info(context.Background())
		return err == nil && len(qi.Workers) == 1 && qi.Workers[0].Name == "test" && qi.Workers[0].Budget == 4<<30
	})

	// Retry: the dead job is queued again, from attempt 1, and its dead
	// letter is gone; here it fails again, for good.
	if err := c.Retry(context.Background(), bad.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the retried job converted again", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(calls[bad.Input]) == 2
	})
	mu.Lock()
	if calls[bad.Input][1] != 1 {
		t.Errorf("a retried job's attempt = %d, want 1", calls[bad.Input][1])
	}
	mu.Unlock()
	waitFor(t, "the retried job dead again", func() bool {
		_, err := c.DeadLetterOf(context.Background(), bad.ID)
		return err == nil && statusOf(t, c, bad.ID).State == Failed
	})
	if err := c.Purge(context.Background(), bad.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeadLetterOf(context.Background(), bad.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("dead letter after Purge: %v, want ErrNotFound", err)
	}
	if st := statusOf(t, c, bad.ID); st.ID != "" {
		t.Errorf("status after Purge = %+v, want none", st)
	}
	if err := c.Retry(context.Background(), ok.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Retry of a job not dead: %v, want ErrNotFound", err)
	}
	tw.stop(t)
	if !tw.logged("attempt 3: done") {
		t.Error("the worker did not log the flaky job's success")
	}
}

// TestRefusals: the server's answers to a publish onto a queued job's
// subject and into a full queue are told apart (the race that Publish's
// look-up before publishing does not cover).
func TestRefusals(t *testing.T) {
	b, _ := startTestBroker(t)
	testRefusals(t, b.URL())
}

func testRefusals(t *testing.T, url string) {
	o := testOptions(url)
	o.QueueMax = 2
	c := connectT(t, o)
	ctx := context.Background()
	pub := func(subj, msgID string) error {
		_, err := c.js.PublishMsg(ctx, &nats.Msg{Subject: subj, Data: []byte("{}")}, jetstream.WithMsgID(msgID))
		return err
	}
	s1, s2, s3 := jobSubject("le256m", DefaultSubmitter, "a1"), jobSubject("le256m", DefaultSubmitter, "a2"), jobSubject("le1g", DefaultSubmitter, "a3")
	if err := pub(s1, "m1"); err != nil {
		t.Fatal(err)
	}
	err := pub(s1, "m2")
	if refusal(err) != refusedQueued {
		t.Errorf("a second message on a job's subject: %v (%d), want refused as already queued", err, refusal(err))
	}
	if err := pub(s2, "m3"); err != nil {
		t.Fatal(err)
	}
	err = pub(s3, "m4")
	if refusal(err) != refusedFull {
		t.Errorf("a message into a full queue: %v (%d), want refused as full", err, refusal(err))
	}
	// The de-duplication id: the same id again is a duplicate, not stored.
	ack, err := c.js.PublishMsg(ctx, &nats.Msg{Subject: s3, Data: []byte("{}")}, jetstream.WithMsgID("m1"))
	if err != nil || !ack.Duplicate {
		t.Errorf("a message with a known id: %+v, %v; want a duplicate", ack, err)
	}
}

// TestWatchStatuses: the current statuses, then each change, including
// after a restart of the broker (the watch starts again, without
// repeating what it gave).
func TestWatchStatuses(t *testing.T) {
	store := t.TempDir()
	b, err := StartBroker(BrokerOptions{Store: store, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Shutdown() })
	c := connectT(t, testOptions(b.URL()))
	j1, j2 := testJob("w1.dng", 1<<20), testJob("w2.dng", 1<<20)
	publishT(t, c, j1)
	other := testJob("other.dng", 1<<20)
	other.Batch = "b2"
	publishT(t, c, other)
	var mu sync.Mutex
	var got []string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- c.WatchStatuses(ctx, "b1", func(s Status) bool {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, strings.TrimPrefix(s.Input, "/in/")+":"+string(s.State))
			return s.ID != j2.ID || s.State != Processed
		})
	}()
	seen := func(want string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return slices.Contains(got, want)
		}
	}
	waitFor(t, "the current status", seen("w1.dng:queued"))
	b.Shutdown()
	if b, err = StartBroker(BrokerOptions{Store: store, Listen: strings.TrimPrefix(c.o.URL, "nats://")}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the client reconnected", c.nc.IsConnected)
	publishT(t, c, j2)
	waitFor(t, "a new status after the restart", seen("w2.dng:queued"))
	st := statusOf(t, c, j2.ID)
	st.State = Processed
	if err := c.putStatus(st); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("WatchStatuses did not return when fn returned false")
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(got, " ") != "w1.dng:queued w2.dng:queued w2.dng:processed" {
		t.Errorf("watched %v, want w1 queued, w2 queued, w2 processed, once each, not the other batch", got)
	}
}

// TestConnectErrors: no broker is ErrUnavailable; a server without
// JetStream is named; inconsistent timings are refused.
func TestConnectErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := Connect(ctx, testOptions("nats://"+addr)); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Connect with no broker: %v, want ErrUnavailable", err)
	}
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("plain NATS server not ready")
	}
	if _, err := Connect(ctx, testOptions(srv.ClientURL())); err == nil || !strings.Contains(err.Error(), "no JetStream") {
		t.Errorf("Connect to a server without JetStream: %v, want it named", err)
	}
	o := testOptions(srv.ClientURL())
	o.AckWait = o.LeaseTTL
	if _, err := Connect(ctx, o); err == nil || !strings.Contains(err.Error(), "must be longer") {
		t.Errorf("Connect with AckWait = LeaseTTL: %v, want refused", err)
	}
}

// TestServeMetrics: Serve answers /metrics until its context ends.
func TestServeMetrics(t *testing.T) {
	b, _ := startTestBroker(t)
	c := connectT(t, testOptions(b.URL()))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- NewMetrics(c, budget.NewScheduler(1<<30)).Serve(ctx, addr) }()
	var body string
	waitFor(t, "/metrics answering", func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		bb, _ := io.ReadAll(resp.Body)
		body = string(bb)
		return resp.StatusCode == 200
	})
	// The client library's exposition: its float format, and the
	// process's and Go runtime's metrics next to rawbatch's.
	for _, want := range []string{"rawbatch_memory_budget_bytes 1.073741824e+09\n", `rawbatch_queue_depth{class="huge"} 0`,
		"# TYPE process_resident_memory_bytes gauge\n", "\nprocess_cpu_seconds_total ", "\ngo_goroutines "} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
}

// TestWorkerReady: a worker is ready once its first beat reached the
// broker; with the broker gone it is not (not connected), and /readyz
// says so with 503 while /healthz answers 200.
func TestWorkerReady(t *testing.T) {
	b, _ := startTestBroker(t)
	c := connectT(t, testOptions(b.URL()))
	idle := &Worker{Client: c, Sched: budget.NewScheduler(1 << 30), Convert: func(context.Context, Delivery) Outcome { return Outcome{} }}
	if err := idle.Ready(); err == nil || !strings.Contains(err.Error(), "not taking jobs") {
		t.Errorf("Ready before Run = %v, want not taking jobs", err)
	}
	// Running and connected, but no beat has reached the broker for
	// LeaseTTL − Beat: fenced.
	idle.running.Store(true)
	idle.beatOK.Store(time.Now().Add(-c.o.LeaseTTL).UnixNano())
	if err := idle.Ready(); err == nil || !strings.Contains(err.Error(), "fenced") {
		t.Errorf("Ready without a beat for the lease TTL = %v, want fenced", err)
	}
	idle.beatOK.Store(time.Now().UnixNano())
	if err := idle.Ready(); err != nil {
		t.Errorf("Ready after a beat = %v", err)
	}
	tw := startWorker(t, c, 1, func(ctx context.Context, d Delivery) Outcome { return Outcome{Result: Done} })
	waitFor(t, "the worker ready", func() bool { return tw.w.Ready() == nil })

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = ServeHealth(ctx, addr, tw.w.Ready) }()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	waitFor(t, "/readyz 200", func() bool { code, _ := get("/readyz"); return code == 200 })

	b.Shutdown()
	waitFor(t, "not ready without the broker", func() bool {
		err := tw.w.Ready()
		return err != nil && strings.Contains(err.Error(), "not connected to the broker")
	})
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "not connected to the broker") {
		t.Errorf("/readyz without the broker: %d %q, want 503 naming it", code, body)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz without the broker: %d, want 200", code)
	}
}

// TestTimingsOwnedByWorkers: a client without SetTimings (submit, status)
// adopts the broker's timings; one with it (a worker) sets them.
func TestTimingsOwnedByWorkers(t *testing.T) {
	b, _ := startTestBroker(t)
	o := testOptions(b.URL())
	o.SetTimings = true
	connectT(t, o) // a worker with the short timings
	def := Options{URL: b.URL(), Name: "status"}
	c := connectT(t, def) // the default timings: adopted, not applied
	if c.o.AckWait != o.AckWait || c.o.LeaseTTL != o.LeaseTTL || c.o.Beat != o.Beat || c.o.MaxDeliver != o.MaxDeliver {
		t.Errorf("adopted timings %v %v %v %d, want the worker's %v %v %v %d", c.o.AckWait, c.o.LeaseTTL, c.o.Beat, c.o.MaxDeliver, o.AckWait, o.LeaseTTL, o.Beat, o.MaxDeliver)
	}
	ci, err := c.cons["le1g"].Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ci.Config.AckWait != o.AckWait || ci.Config.MaxDeliver != o.MaxDeliver+2 {
		t.Errorf("consumer's ack wait %v, max deliver %d after a default client: want %v, %d", ci.Config.AckWait, ci.Config.MaxDeliver, o.AckWait, o.MaxDeliver+2)
	}
	o2 := o
	o2.AckWait = 3 * time.Second
	connectT(t, o2) // another worker changes them
	ci, err = c.cons["le1g"].Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ci.Config.AckWait != o2.AckWait {
		t.Errorf("consumer's ack wait %v after a worker set %v", ci.Config.AckWait, o2.AckWait)
	}
}

// TestBrokerOptions: the listen and monitor addresses, a store is
// required, and the broker syncs every write (its /jsz says so).
func TestBrokerOptions(t *testing.T) {
	for _, c := range []struct {
		in   string
		host string
		port int
	}{{"", "127.0.0.1", 4222}, {":5000", "127.0.0.1", 5000}, {"0.0.0.0:4333", "0.0.0.0", 4333}, {"10.0.0.2", "10.0.0.2", 4222}, {"127.0.0.1:0", "127.0.0.1", server.RANDOM_PORT}} {
		h, p, err := hostPort(c.in, "127.0.0.1", 4222)
		if err != nil || h != c.host || p != c.port {
			t.Errorf("hostPort(%q) = %s %d %v, want %s %d", c.in, h, p, err, c.host, c.port)
		}
	}
	if _, _, err := hostPort("h:port", "127.0.0.1", 4222); err == nil {
		t.Error("hostPort of a port that is no number: no error")
	}
	if _, err := StartBroker(BrokerOptions{Listen: "127.0.0.1:0"}); err == nil {
		t.Error("StartBroker without a store: no error")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mon := ln.Addr().String()
	ln.Close()
	b, err := StartBroker(BrokerOptions{Store: t.TempDir(), Listen: "127.0.0.1:0", Monitor: mon})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Shutdown()
	resp, err := http.Get("http://" + mon + "/jsz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var jsz struct {
		Config struct {
			SyncAlways bool   `json:"sync_always"`
			StoreDir   string `json:"store_dir"`
		} `json:"config"`
	}
	if err := json.Unmarshal(body, &jsz); resp.StatusCode != 200 || err != nil || !jsz.Config.SyncAlways {
		t.Errorf("monitor /jsz: %d %v, want JetStream with sync always: %s", resp.StatusCode, err, body)
	}
	if !strings.HasPrefix(b.URL(), "nats://127.0.0.1:") {
		t.Errorf("URL = %s", b.URL())
	}
}
