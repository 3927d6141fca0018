package queue

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// lines collects the lines given to an Options.Log.
type lines struct {
	mu sync.Mutex
	l  []string
}

func (ls *lines) log(s string) {
	ls.mu.Lock()
	ls.l = append(ls.l, s)
	ls.mu.Unlock()
}

// count returns how many lines contain sub.
func (ls *lines) count(sub string) int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	n := 0
	for _, s := range ls.l {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

// TestRepublishAfterProcessed: a job converted and then published again
// at once (a deleted output, re-submitted within the broker's 2 min
// de-duplication window) is queued and converted again, not taken for a
// duplicate of the first publish.
func TestRepublishAfterProcessed(t *testing.T) {
	b, _ := startTestBroker(t)
	testRepublishAfterProcessed(t, b.URL())
}

func testRepublishAfterProcessed(t *testing.T, url string) {
	c := connectT(t, testOptions(url))
	j := testJob("again.dng", 1<<20)
	var converted atomic.Int32
	startWorker(t, c, 1, func(ctx context.Context, d Delivery) Outcome {
		converted.Add(1)
		return Outcome{Result: Done, Converted: true}
	})
	if !publishT(t, c, j) {
		t.Fatal("a new job was not queued")
	}
	// Processed and acked (out of the stream: no longer "already queued").
	waitFor(t, "the first conversion", func() bool {
		return converted.Load() == 1 && statusOf(t, c, j.ID).State == Processed && streamMsgs(t, c) == 0
	})
	if !publishT(t, c, j) {
		t.Fatal("a processed job published again within the de-duplication window was not queued")
	}
	waitFor(t, "the second conversion", func() bool { return converted.Load() == 2 })
	waitFor(t, "processed again", func() bool { return statusOf(t, c, j.ID).State == Processed })
}

// TestRepublishDeadAndPurged: Publish refuses a job with a dead letter
// (ErrDead, with the kind and reason and how to queue it again) and
// queues it once its dead letter is purged, within the de-duplication
// window.
func TestRepublishDeadAndPurged(t *testing.T) {
	b, _ := startTestBroker(t)
	c := connectT(t, testOptions(b.URL()))
	j := testJob("bad.dng", 1<<20)
	var converted atomic.Int32
	startWorker(t, c, 1, func(ctx context.Context, d Delivery) Outcome {
		if converted.Add(1) == 1 {
			return Outcome{Result: Permanent, Kind: "corrupt", Reason: "truncated at byte 12"}
		}
		return Outcome{Result: Done, Converted: true}
	})
	publishT(t, c, j)
	waitFor(t, "the dead letter", func() bool { return statusOf(t, c, j.ID).State == Failed })
	q, err := c.Publish(context.Background(), j)
	if !errors.Is(err, ErrDead) || q {
		t.Fatalf("publish of a dead job: queued %v, %v; want ErrDead", q, err)
	}
	for _, want := range []string{"corrupt", "truncated at byte 12", "rawbatch dead retry " + j.ID, j.Input} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if n := converted.Load(); n != 1 {
		t.Errorf("converted %d times after the refused publish, want 1", n)
	}
	waitFor(t, "the dead job out of the stream", func() bool { return streamMsgs(t, c) == 0 })
	if err := c.Purge(context.Background(), j.ID); err != nil {
		t.Fatal(err)
	}
	if !publishT(t, c, j) {
		t.Fatal("a purged job published again within the de-duplication window was not queued")
	}
	waitFor(t, "the purged job converted", func() bool { return converted.Load() == 2 && statusOf(t, c, j.ID).State == Processed })
}

// TestQueueMaxTriState: the bound stays on the broker for later clients
// (QueueMax 0 leaves it), QueueMax < 0 removes it; a publisher waiting for
// room says so once per wait through Options.Log.
func TestQueueMaxTriState(t *testing.T) {
	b, _ := startTestBroker(t)
	o := testOptions(b.URL())
	maxMsgs := func(c *Client) int64 {
		t.Helper()
		si, err := c.jobs.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return si.Config.MaxMsgs
	}
	o.QueueMax = 2
	c := connectT(t, o)
	if got := maxMsgs(c); got != 2 {
		t.Fatalf("MaxMsgs = %d after QueueMax 2, want 2", got)
	}
	var ls lines
	o.QueueMax, o.Log = 0, ls.log
	c0 := connectT(t, o)
	if got := maxMsgs(c0); got != 2 {
		t.Fatalf("MaxMsgs = %d after QueueMax 0, want 2 (left)", got)
	}
	publishT(t, c0, testJob("a.dng", 1<<20))
	publishT(t, c0, testJob("b.dng", 1<<20))
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	_, err := c0.Publish(ctx, testJob("c.dng", 1<<20))
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("publish into a full queue: %v, want the deadline", err)
	}
	if n := ls.count("the queue is full (2 jobs waiting): waiting for room"); n != 1 {
		t.Errorf("logged the full queue %d times, want once: %q", n, ls.l)
	}
	o.QueueMax, o.Log = -1, nil
	cu := connectT(t, o)
	if got := maxMsgs(cu); got != -1 {
		t.Fatalf("MaxMsgs = %d after QueueMax -1, want -1 (unbounded)", got)
	}
	if !publishT(t, cu, testJob("c.dng", 1<<20)) {
		t.Error("publish after removing the bound: not queued")
	}
}

// TestOverBudgetGrace: a job over the budget of the only worker alive is
// left queued (for a bigger worker) during the grace of 2 × AckWait from
// its publish, and dead-lettered (over-budget) after it.
func TestOverBudgetGrace(t *testing.T) {
	b, _ := startTestBroker(t)
	testOverBudgetGrace(t, b.URL())
}

func testOverBudgetGrace(t *testing.T, url string) {
	o := testOptions(url)
	c := connectT(t, o)
	over := testJob("over.dng", 3<<30)
	over.Submitted = time.Now()
	publishT(t, c, over)
	tw := startWorkerBudget(t, c, 1, 1500<<20, func(ctx context.Context, d Delivery) Outcome {
		t.Errorf("converted %s, over the budget", d.Job.Input)
		return Outcome{Result: Done}
	})
	waitFor(t, "the worker leaving the job within the grace", func() bool { return tw.logged("for a bigger worker (none alive: over-budget") })
	if st := statusOf(t, c, over.ID).State; st != Queued && time.Since(over.Submitted) < o.overBudgetGrace() {
		t.Fatalf("within the grace the job is %s, want queued", st)
	}
	waitFor(t, "the dead letter after the grace", func() bool { return statusOf(t, c, over.ID).State == Failed })
	dl, err := c.DeadLetterOf(context.Background(), over.ID)
	if err != nil {
		t.Fatal(err)
	}
	if dl.Kind != "over-budget" {
		t.Errorf("dead letter %+v, want over-budget", dl)
	}
	if waited := dl.Time.Sub(over.Submitted); waited < o.overBudgetGrace() {
		t.Errorf("dead-lettered %v after its publish, before the grace of %v", waited, o.overBudgetGrace())
	}
}

// freeAddr returns a local TCP address nothing listens on (now).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestConnectRetry: with Retry, Connect to a broker not started yet logs
// once that it retries and succeeds when the broker starts; without it,
// Connect fails at once with ErrUnavailable.
func TestConnectRetry(t *testing.T) {
	addr := freeAddr(t)
	o := testOptions("nats://" + addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := Connect(ctx, o); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Connect without Retry to nothing: %v, want ErrUnavailable", err)
	}
	var ls lines
	o.Retry, o.Log = true, ls.log
	type result struct {
		c   *Client
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := Connect(ctx, o)
		done <- result{c, err}
	}()
	waitFor(t, "the retrying line", func() bool { return ls.count("broker unreachable at nats://"+addr+": retrying") == 1 })
	select {
	case r := <-done:
		t.Fatalf("Connect with Retry returned before the broker started: %v", r.err)
	default:
	}
	br, err := StartBroker(BrokerOptions{Store: t.TempDir(), Listen: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(br.Shutdown)
	r := <-done
	if r.err != nil {
		t.Fatalf("Connect with Retry after the broker started: %v", r.err)
	}
	t.Cleanup(r.c.Close)
	if n := ls.count("broker unreachable"); n != 1 {
		t.Errorf("logged unreachable %d times, want once: %q", n, ls.l)
	}
	if ls.count("connected to the broker at") != 1 {
		t.Errorf("no connected line: %q", ls.l)
	}
	if !publishT(t, r.c, testJob("late.dng", 1<<20)) {
		t.Error("publish after a late connect: not queued")
	}
	// Retry ends with ctx.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel2()
	o.URL, o.Log = "nats://"+freeAddr(t), nil
	if _, err := Connect(ctx2, o); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Connect with Retry when ctx ends: %v, want ErrUnavailable", err)
	}
}

// stderrCapture is os.Stderr redirected to a pipe, read as it comes.
type stderrCapture struct {
	old  *os.File
	w    *os.File
	done chan struct{}
	mu   sync.Mutex
	b    strings.Builder
}

// captureStderr redirects os.Stderr until stop.
func captureStderr(t *testing.T) *stderrCapture {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	sc := &stderrCapture{old: os.Stderr, w: w, done: make(chan struct{})}
	os.Stderr = w
	go func() {
		defer close(sc.done)
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			sc.mu.Lock()
			sc.b.Write(buf[:n])
			sc.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { sc.stop() })
	return sc
}

// text returns what was written so far.
func (sc *stderrCapture) text() string {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.b.String()
}

// stop restores os.Stderr and returns everything written.
func (sc *stderrCapture) stop() string {
	if os.Stderr == sc.w {
		os.Stderr = sc.old
		sc.w.Close()
		<-sc.done
	}
	return sc.text()
}

// TestLibraryPrintsNothing: the NATS library's asynchronous errors (here
// a slow consumer; during a broker stop, "consumer not active") and the
// connection's events go to Options.Log, never to stderr.
func TestLibraryPrintsNothing(t *testing.T) {
	b, _ := startTestBroker(t)
	var ls lines
	o := testOptions(b.URL())
	o.Log = ls.log
	sc := captureStderr(t)
	c := connectT(t, o)
	block := make(chan struct{})
	sub, err := c.nc.Subscribe("rawbatch.test.slow", func(*nats.Msg) { <-block })
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.SetPendingLimits(1, 1<<20); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := c.nc.Publish("rawbatch.test.slow", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	_ = c.nc.Flush()
	slow := nats.ErrSlowConsumer.Error()
	waitFor(t, "the slow consumer error", func() bool { return ls.count(slow) > 0 || strings.Contains(sc.text(), slow) })
	close(block)
	// A broker stop: the disconnection goes to the log too.
	b.Shutdown()
	waitFor(t, "the disconnection", func() bool { return ls.count("broker unreachable") > 0 || sc.text() != "" })
	if printed := sc.stop(); printed != "" {
		t.Errorf("the library printed on stderr: %q", printed)
	}
	if ls.count(slow) == 0 || ls.count("broker unreachable") == 0 {
		t.Errorf("the log lacks the slow consumer or the disconnection: %q", ls.l)
	}
}

// TestCloseIsNoOutage: a client's own Close logs no "broker unreachable"
// (it would be the last line of every submit and worker).
func TestCloseIsNoOutage(t *testing.T) {
	b, _ := startTestBroker(t)
	var mu sync.Mutex
	var events []string
	o := testOptions(b.URL())
	o.Log = func(s string) { mu.Lock(); events = append(events, s); mu.Unlock() }
	c, err := Connect(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	// The library calls its handlers on a goroutine of its own, at once.
	time.Sleep(500 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	for _, e := range events {
		if strings.Contains(e, "unreachable") {
			t.Fatalf("Close logged %q", e)
		}
	}
}
