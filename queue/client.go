package queue

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/zeebo/xxh3"
)

// Names on the broker.
const (
	jobsStream    = "RAWBATCH_JOBS"
	deadStream    = "RAWBATCH_DEAD"
	jobsPrefix    = "rawbatch.job."
	deadPrefix    = "rawbatch.dead."
	leasesBucket  = "rawbatch_leases"
	statusBucket  = "rawbatch_status"
	workersBucket = "rawbatch_workers"
	consumerPre   = "class-"
	// opTimeout bounds every broker call, so that nothing blocks while the
	// broker is stopped (SIGSTOP) or away.
	opTimeout = 5 * time.Second
	// maxAckPending is how many jobs of a class may be delivered and not
	// acked at once, over all workers.
	maxAckPending = 10000
)

// classNames are the names of Classes' classes, then the huge class.
var classNames = []string{"le256m", "le512m", "le1g", "le2g", "le4g", "le8g", "le16g", "huge"}

func classOf(estimate int64) string {
	for i, b := range Classes {
		if estimate <= b && i < len(classNames)-1 {
			return classNames[i]
		}
	}
	return classNames[len(classNames)-1]
}

// allClasses returns every class name, smallest first (one more than
// Classes: the huge class).
func allClasses() []string { return classNames[:len(Classes)+1] }

func jobID(input string, size int64, mtime time.Time, settingsHash string) string {
	var b strings.Builder
	b.WriteString(input)
	b.WriteByte(0)
	b.WriteString(strconv.FormatInt(size, 10))
	b.WriteByte(0)
	b.WriteString(strconv.FormatInt(mtime.UnixNano(), 10))
	b.WriteByte(0)
	b.WriteString(settingsHash)
	h := xxh3.HashString128(b.String()).Bytes()
	return hex.EncodeToString(h[:])
}

// withDefaults returns o with its zero fields set to their defaults.
func (o Options) withDefaults() Options {
	if o.URL == "" {
		o.URL = "nats://127.0.0.1:4222"
	}
	if o.AckWait <= 0 {
		o.AckWait = DefaultAckWait
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.Beat <= 0 {
		o.Beat = DefaultBeat
	}
	if o.MaxDeliver <= 0 {
		o.MaxDeliver = DefaultMaxDeliver
	}
	if len(o.Backoff) == 0 {
		o.Backoff = DefaultBackoff
	}
	if o.Name == "" {
		host, _ := os.Hostname()
		o.Name = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	return o
}

// unavailable wraps err with ErrUnavailable when it says the broker
// cannot be reached or did not answer in time.
func unavailable(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoServers) || errors.Is(err, nats.ErrConnectionClosed) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrConnectionReconnecting) ||
		errors.Is(err, nats.ErrDisconnected) || errors.Is(err, jetstream.ErrNoHeartbeat) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || noLeader(err) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// noLeader reports whether err is the JetStream API's answer while a
// stream or consumer has no leader (code 503, "JetStream system
// temporarily unavailable": a cluster electing one), not JetStream being
// off for the account or the server (also 503, and lasting).
func noLeader(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && api.Code == 503 &&
		api.ErrorCode != jetstream.JSErrCodeJetStreamNotEnabledForAccount && api.ErrorCode != jetstream.JSErrCodeJetStreamNotEnabled
}

// unavailableWait bounds how long whileUnavailable asks a broker that
// does not answer again.
const unavailableWait = 30 * time.Second

// whileUnavailable runs f again, with backoff (100 ms doubling to 1 s),
// while it fails with ErrUnavailable, for up to unavailableWait or until
// ctx ends; it returns f's last error.
func (c *Client) whileUnavailable(ctx context.Context, f func() error) error {
	end := time.Now().Add(unavailableWait)
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		err := c.refusal(f())
		if err == nil || !errors.Is(err, ErrUnavailable) || ctx.Err() != nil || time.Now().Add(delay).After(end) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
	}
}

// op returns ctx bounded by the client's call timeout.
// A permission violation (ErrRefused) ends it at once: the broker does
// not answer a request it refused.
func (c *Client) op(ctx context.Context) (context.Context, context.CancelFunc) {
	octx, cancel := context.WithTimeout(ctx, c.timeout)
	c.denyMu.Lock()
	denied := c.denied
	c.denyMu.Unlock()
	if denied == nil {
		return octx, cancel
	}
	stop := context.AfterFunc(denied, cancel)
	return octx, func() { stop(); cancel() }
}

func connect(ctx context.Context, o Options) (*Client, error) {
	o = o.withDefaults()
	if o.AckWait <= o.LeaseTTL {
		return nil, fmt.Errorf("queue: ack wait %v must be longer than the lease TTL %v", o.AckWait, o.LeaseTTL)
	}
	if o.Beat >= o.LeaseTTL {
		return nil, fmt.Errorf("queue: beat %v must be shorter than the lease TTL %v", o.Beat, o.LeaseTTL)
	}
	dial := 2 * time.Second
	if d, ok := ctx.Deadline(); ok && time.Until(d) < dial {
		dial = max(time.Until(d), 10*time.Millisecond)
	}
	wait := min(max(o.Beat/2, 250*time.Millisecond), time.Second)
	c := &Client{o: o, timeout: opTimeout, cons: map[string]jetstream.Consumer{}, owner: DefaultSubmitter}
	c.denied, c.deny = context.WithCancelCause(context.Background())
	dialOnce := func() (*nats.Conn, error) { return c.dial(o, dial, wait) }
	nc, err := dialOnce()
	if err != nil && o.Retry && !errors.Is(err, ErrRefused) {
		nc, err = c.retryConnect(ctx, dialOnce, err)
	}
	if err != nil {
		return nil, err
	}
	c.nc = nc
	// A broker just started may not have JetStream ready yet, and a
	// cluster electing a leader does not answer for a few seconds: a
	// connected client asks again for up to unavailableWait (with Retry,
	// until ctx ends).
	end := time.Now().Add(unavailableWait)
	for {
		err := c.refusal(c.setup(ctx))
		if err == nil {
			break
		}
		if !o.Retry && time.Now().After(end) || !errors.Is(err, ErrUnavailable) || ctx.Err() != nil {
			nc.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			nc.Close()
			return nil, err
		case <-time.After(500 * time.Millisecond):
		}
	}
	return c, nil
}

// retryConnect dials again with backoff (up to 5 s) until the broker
// answers or ctx ends, logging once that it is unreachable and then that
// it is connected.
func (c *Client) retryConnect(ctx context.Context, dial func() (*nats.Conn, error), err error) (*nats.Conn, error) {
	c.note(fmt.Sprintf("broker unreachable at %s: retrying", c.o.URL))
	delay := 250 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (gave up: %w)", err, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
		nc, err2 := dial()
		if err2 == nil {
			c.note("connected to the broker at " + nc.ConnectedUrlRedacted())
			return nc, nil
		}
		err = err2
	}
}

// dial connects once; the connection's events and the library's
// asynchronous errors go to event (the library prints nothing).
func (c *Client) dial(o Options, dial, wait time.Duration) (*nats.Conn, error) {
	sec, err := c.securityOptions(o)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(o.URL, append(sec, nats.Name(o.Name), nats.MaxReconnects(-1),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			c.refuse(err)
			if sub != nil {
				c.event(fmt.Sprintf("broker connection: %s: %v", sub.Subject, err))
			} else {
				c.event(fmt.Sprintf("broker connection: %v", err))
			}
		}),
		nats.ReconnectWait(wait), nats.Timeout(dial), nats.PingInterval(max(o.Beat, time.Second)),
		nats.MaxPingsOutstanding(3), nats.ReconnectBufSize(8<<20),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if nc.IsClosed() {
				return // Close: not an outage
			}
			if err != nil {
				c.event(fmt.Sprintf("broker unreachable, retrying (%v)", err))
			} else {
				c.event("broker unreachable, retrying")
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			c.event("reconnected to the broker at " + nc.ConnectedUrlRedacted())
		}))...)
	if err != nil {
		if refused(err) {
			return nil, fmt.Errorf("%w at %s: %w", ErrRefused, o.URL, err)
		}
		return nil, fmt.Errorf("%w at %s: %w", ErrUnavailable, o.URL, err)
	}
	return nc, nil
}

// minServer is the oldest nats-server the queue runs on (Debian 12's).
var minServer = [2]int{2, 9}

// serverVersion parses "2.9.10" into its major and minor numbers.
func serverVersion(v string) ([2]int, bool) {
	f := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(f) < 2 {
		return [2]int{}, false
	}
	maj, err1 := strconv.Atoi(f[0])
	mnr, err2 := strconv.Atoi(f[1])
	return [2]int{maj, mnr}, err1 == nil && err2 == nil
}

// setup checks the server and creates or updates the streams, consumers
// and buckets.
func (c *Client) setup(ctx context.Context) error {
	url := c.nc.ConnectedUrlRedacted()
	octx, cancel := c.op(ctx)
	defer cancel()
	if err := c.checkServer(octx, url); err != nil {
		return err
	}
	if err := c.ensureJobs(octx); err != nil {
		return fmt.Errorf("queue: stream %s at %s: %w", jobsStream, url, unavailable(err))
	}
	if err := c.ensureDead(octx); err != nil {
		return fmt.Errorf("queue: stream %s at %s: %w", deadStream, url, unavailable(err))
	}
	if !c.o.SetTimings {
		// A worker starting at the same moment creates its buckets and
		// consumers one after the other: timings read in between are
		// partly its, partly the defaults. Read again for a while
		// before calling them inconsistent.
		o := c.o
		for try := 0; ; try++ {
			err := c.adoptTimings(octx, url)
			if err == nil {
				break
			}
			if try >= 20 || octx.Err() != nil {
				return err
			}
			c.o = o
			select {
			case <-octx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	if err := c.ensureBuckets(octx, url); err != nil {
		return err
	}
	return c.ensureConsumers(octx, url)
}

// ensureDead opens the dead-letter stream, or creates it when missing
// (only an admin may change it: its configuration is fixed).
func (c *Client) ensureDead(octx context.Context) error {
	s, err := c.js.Stream(octx, deadStream)
	if err == nil {
		c.deadS = s
		if cfg := s.CachedInfo().Config; !cfg.AllowDirect && c.mayChangeStreams() {
			cfg.AllowDirect = true
			c.deadS, err = c.js.UpdateStream(octx, cfg)
		}
		return err
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return err
	}
	c.deadS, err = c.js.CreateStream(octx, jetstream.StreamConfig{
		Name:              deadStream,
		Description:       "rawbatch dead letters: jobs that failed for good, with why",
		Subjects:          []string{deadPrefix + ">"},
		Retention:         jetstream.LimitsPolicy,
		Storage:           jetstream.FileStorage,
		MaxMsgsPerSubject: 1,
		AllowDirect:       true,
		Replicas:          c.replicas(),
	})
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		c.deadS, err = c.js.Stream(octx, deadStream) // created meanwhile
	}
	return err
}

// checkServer checks that the server at url is recent enough and has
// JetStream, and sets c.js.
func (c *Client) checkServer(octx context.Context, url string) error {
	v := c.nc.ConnectedServerVersion()
	if got, ok := serverVersion(v); ok && (got[0] < minServer[0] || got[0] == minServer[0] && got[1] < minServer[1]) {
		return fmt.Errorf("queue: the NATS server at %s is version %s; rawbatch needs %d.%d or newer", url, v, minServer[0], minServer[1])
	}
	js, err := jetstream.New(c.nc)
	if err != nil {
		return fmt.Errorf("queue: %s: %w", url, err)
	}
	c.js = js
	if _, err := js.AccountInfo(octx); err != nil {
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
			return fmt.Errorf("queue: the NATS server at %s has no JetStream (start it with -js): %w", url, err)
		}
		return fmt.Errorf("queue: JetStream at %s: %w", url, unavailable(err))
	}
	return nil
}

// adoptTimings takes the timings of the buckets and consumers that exist
// (the workers'), for a client that does not set them: the lease TTL, the
// beat (a third of the registry's TTL), the ack wait and MaxDeliver. It
// fails when they are inconsistent.
func (c *Client) adoptTimings(octx context.Context, url string) error {
	js := c.js
	if b, err := js.KeyValue(octx, leasesBucket); err == nil {
		if st, err := b.Status(octx); err == nil && st.TTL() > 0 {
			c.o.LeaseTTL = st.TTL()
		}
	}
	if b, err := js.KeyValue(octx, workersBucket); err == nil {
		if st, err := b.Status(octx); err == nil && st.TTL() > 0 {
			c.o.Beat = st.TTL() / 3
		}
	}
	if cons, err := js.Consumer(octx, jobsStream, consumerPre+allClasses()[0]); err == nil {
		if cfg := cons.CachedInfo().Config; cfg.AckWait > 0 && cfg.MaxDeliver > 2 {
			c.o.AckWait, c.o.MaxDeliver = cfg.AckWait, cfg.MaxDeliver-2
		}
	}
	if c.o.AckWait <= c.o.LeaseTTL || c.o.Beat >= c.o.LeaseTTL {
		return fmt.Errorf("queue: the broker at %s has inconsistent timings (ack wait %v, lease TTL %v, beat %v): start a worker with consistent ones", url, c.o.AckWait, c.o.LeaseTTL, c.o.Beat)
	}
	return nil
}

// ensureBuckets opens or creates the leases, status and workers buckets
// (with this client's timings when it sets them).
func (c *Client) ensureBuckets(octx context.Context, url string) error {
	kv := func(name, desc string, ttl time.Duration) (jetstream.KeyValue, error) {
		cfg := jetstream.KeyValueConfig{
			Bucket: name, Description: desc, History: 1, TTL: ttl,
			Storage: jetstream.FileStorage, Replicas: c.replicas(),
		}
		var b jetstream.KeyValue
		var err error
		if c.o.SetTimings {
			// Another client (or a cluster's broker) creating the bucket
			// at the same moment makes the create answer "stream name
			// already in use": asked again, it is found and updated.
			for try := 0; ; try++ {
				b, err = c.js.CreateOrUpdateKeyValue(octx, cfg)
				var api *jetstream.APIError
				if err == nil || try >= 10 || !errors.As(err, &api) || api.ErrorCode != jetstream.JSErrCodeStreamNameInUse || octx.Err() != nil {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
		} else if b, err = c.js.KeyValue(octx, name); errors.Is(err, jetstream.ErrBucketNotFound) {
			// Created, never updated: the submit role may not change a
			// bucket (the workers' timings).
			b, err = c.js.CreateKeyValue(octx, cfg)
			var api *jetstream.APIError
			if errors.Is(err, jetstream.ErrBucketExists) || errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeStreamNameInUse {
				// Created meanwhile by another client; on a cluster it
				// may not answer yet (its stream's leader elected):
				// asked again (connect retries what is unavailable).
				if b, err = c.js.KeyValue(octx, name); errors.Is(err, jetstream.ErrBucketNotFound) {
					err = fmt.Errorf("%w: %w", ErrUnavailable, err)
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("queue: bucket %s at %s: %w", name, url, unavailable(err))
		}
		return b, nil
	}
	var err error
	if c.leases, err = kv(leasesBucket, "rawbatch: the lease of each running job", c.o.LeaseTTL); err != nil {
		return err
	}
	if c.status, err = kv(statusBucket, "rawbatch: each job's status", 0); err != nil {
		return err
	}
	c.workers, err = kv(workersBucket, "rawbatch: the workers alive", 3*c.o.Beat)
	return err
}

// ensureConsumers opens or creates the durable consumer of each class
// (with this client's timings when it sets them).
func (c *Client) ensureConsumers(octx context.Context, url string) error {
	for _, class := range allClasses() {
		if !c.o.SetTimings {
			if cons, err := c.js.Consumer(octx, jobsStream, consumerPre+class); err == nil {
				c.cons[class] = cons
				continue
			}
		}
		cons, err := c.js.CreateOrUpdateConsumer(octx, jobsStream, jetstream.ConsumerConfig{
			Durable:       consumerPre + class,
			Description:   "rawbatch workers taking jobs of class " + class,
			FilterSubject: jobsPrefix + class + ".>",
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       c.o.AckWait,
			MaxDeliver:    c.o.MaxDeliver + 2,
			MaxAckPending: maxAckPending,
			DeliverPolicy: jetstream.DeliverAllPolicy,
		})
		if err != nil {
			return fmt.Errorf("queue: consumer %s%s at %s: %w", consumerPre, class, url, unavailable(err))
		}
		c.cons[class] = cons
	}
	return nil
}

// ensureJobs creates the jobs stream or updates its bound.
func (c *Client) ensureJobs(ctx context.Context) error {
	cfg := jetstream.StreamConfig{
		Name:                 jobsStream,
		Description:          "rawbatch jobs: one per input file to convert",
		Subjects:             []string{jobsPrefix + ">"},
		Retention:            jetstream.WorkQueuePolicy,
		Storage:              jetstream.FileStorage,
		MaxMsgsPerSubject:    1,
		Discard:              jetstream.DiscardNew,
		DiscardNewPerSubject: true,
		MaxMsgs:              -1,
		AllowDirect:          true,
		Replicas:             c.replicas(),
	}
	s, err := c.js.Stream(ctx, jobsStream)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		if c.o.QueueMax > 0 {
			cfg.MaxMsgs = int64(c.o.QueueMax)
		}
		c.jobs, err = c.js.CreateStream(ctx, cfg)
		if !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return err
		}
		// Created meanwhile by another client (with another bound):
		// apply this one's as below.
		if s, err = c.js.Stream(ctx, jobsStream); err != nil {
			return err
		}
	case err != nil:
		return err
	}
	c.jobs = s
	old := s.CachedInfo().Config
	want := old.MaxMsgs
	switch {
	case c.o.QueueMax > 0:
		want = int64(c.o.QueueMax)
	case c.o.QueueMax < 0:
		want = -1
	}
	if want <= 0 {
		want = -1
	}
	// A stream created with one copy on a NATS cluster (by an older
	// rawbatch) gets the cluster's number of copies.
	have := max(old.Replicas, 1)
	r := max(have, c.replicas())
	direct := old.AllowDirect || c.mayChangeStreams()
	if (old.MaxMsgs <= 0 && want == -1 || old.MaxMsgs == want) && have == r && direct == old.AllowDirect {
		return nil
	}
	old.MaxMsgs, old.Replicas, old.AllowDirect = want, r, direct
	c.jobs, err = c.js.UpdateStream(ctx, old)
	return err
}

// event passes a connection event to the running worker's log, else to
// Options.Log.
func (c *Client) event(s string) {
	if f := c.logf.Load(); f != nil {
		(*f)(s)
	} else if c.o.Log != nil {
		c.o.Log(s)
	}
}

// note passes a line to Options.Log.
func (c *Client) note(s string) {
	if c.o.Log != nil {
		c.o.Log(s)
	}
}

func (c *Client) close() {
	if c == nil || c.nc == nil {
		return
	}
	_ = c.nc.FlushTimeout(time.Second)
	c.nc.Close()
}

// nonce returns 16 random hex digits.
func nonce() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// jobSubject is the subject of job id of class in namespace owner;
// deadSubject the subject of its dead letter, statusKey its status's key.
// A submitter's permissions allow only subjects and keys of its own
// namespace (rolePermissions). An empty owner is a dead letter's or
// status's written without a namespace (rawbatch.dead.<id>, key <id>),
// which only workers and admins read and an admin removes.
func jobSubject(class, owner, id string) string { return jobsPrefix + class + "." + owner + "." + id }
func deadSubject(owner, id string) string       { return deadPrefix + withDot(owner) + id }
func statusKey(owner, id string) string         { return withDot(owner) + id }

// leaseKey is the key of job j's lease: in its namespace, as its status's,
// so that a submitter's job never waits on another's lease.
func leaseKey(j Job) string { return statusKey(cmp.Or(j.Owner, DefaultSubmitter), j.ID) }

// withDot is owner followed by a dot, or nothing when owner is empty.
func withDot(owner string) string {
	if owner == "" {
		return ""
	}
	return owner + "."
}

// decodeJob reads the job of a message on subject with body data. Its
// namespace (Owner) is the subject's (rawbatch.job.<class>.<owner>.<id>,
// which only that submitter may publish on), whatever the body says; a
// subject without one (rawbatch.job.<class>.<id>) is DefaultSubmitter's.
// The body's id must be the subject's.
func decodeJob(subject string, data []byte) (Job, error) {
	var j Job
	if err := json.Unmarshal(data, &j); err != nil {
		return j, err
	}
	tok := strings.Split(strings.TrimPrefix(subject, jobsPrefix), ".")
	switch len(tok) {
	case 3:
		j.Owner = tok[1]
	case 2:
		j.Owner = DefaultSubmitter
	default:
		return j, fmt.Errorf("subject %s: not a job's", subject)
	}
	if !validID(j.ID) || j.ID != tok[len(tok)-1] {
		return j, fmt.Errorf("job id %q: not the subject's (%s)", j.ID, subject)
	}
	if !ValidSubmitter(j.Owner) {
		return j, fmt.Errorf("subject %s: not a submitter's namespace", subject)
	}
	return j, nil
}

// mayChangeStreams tells whether the client's role may change the
// queue's streams' configuration (an admin, or no authorisation).
func (c *Client) mayChangeStreams() bool {
	return c.o.inProcess != nil || c.role == "admin" || c.o.Creds == ""
}

// validID: a job id is one subject token and one KV key.
func validID(id string) bool {
	if id == "" {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// Why the jobs stream refused a message.
const (
	refusedOther  = iota
	refusedQueued // the job's subject has its message: already queued
	refusedFull   // the queue is at its bound (QueueMax)
)

// refusal tells a full queue from a job already queued by the error of a
// publish. Both servers (2.9.10, 2.15) answer with the store failure code
// 10077 and the store's message, "maximum messages per subject exceeded"
// or "maximum messages exceeded".
func refusal(err error) int {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return refusedOther
	}
	switch d := strings.ToLower(apiErr.Description); {
	case strings.Contains(d, "maximum messages per subject exceeded"):
		return refusedQueued
	case strings.Contains(d, "maximum messages exceeded"):
		return refusedFull
	}
	return refusedOther
}

// publish queues j with a de-duplication id of its own (j.ID, "/", a
// nonce): a resend of this call's message after a lost ack is absorbed by
// the broker, a later call's is not. Unless retry (dead retry), a job
// with a dead letter is refused with ErrDead.
func (c *Client) publish(ctx context.Context, j Job, retry bool, msgID string) (bool, error) {
	j, err := c.complete(j)
	if err != nil {
		return false, err
	}
	subj := jobSubject(j.Class, j.Owner, j.ID)
	data, err := json.Marshal(j)
	if err != nil {
		return false, fmt.Errorf("queue: job %s of %s: %w", j.ID, j.Input, err)
	}
	// A dead job is queued again only by Retry (dead retry), even while
	// its message is still in the stream (being dead-lettered).
	if !retry {
		if err := c.refuseDead(ctx, j); err != nil {
			return false, err
		}
	}
	// Already queued (or running)? The one message per subject says so;
	// asking first tells it from a full queue on every server version.
	octx, cancel := c.op(ctx)
	last, err := c.jobs.GetLastMsgForSubject(octx, subj)
	cancel()
	if err == nil {
		// This call's own message (stored before a lost answer, then
		// asked again: whileUnavailable) is queued by this call.
		return last.Header.Get(jetstream.MsgIDHeader) == msgID, nil
	} else if !errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, fmt.Errorf("queue: job %s of %s: %w", j.ID, j.Input, unavailable(err))
	}
	// The status's revision before publishing: after it, the status is set
	// to queued only if no worker has written it meanwhile.
	var rev uint64
	octx, cancel = c.op(ctx)
	e, err := c.status.Get(octx, statusKey(j.Owner, j.ID))
	cancel()
	if err == nil {
		rev = e.Revision()
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, fmt.Errorf("queue: status of job %s of %s: %w", j.ID, j.Input, unavailable(err))
	}
	if queued, err := c.publishMsg(ctx, j, &nats.Msg{Subject: subj, Data: data}, msgID); !queued || err != nil {
		return false, err
	}
	return true, c.setQueued(ctx, j, rev)
}

// complete checks j's id and class and fills in its class, time and
// submitter when they are not set.
func (c *Client) complete(j Job) (Job, error) {
	if !validID(j.ID) {
		return j, fmt.Errorf("queue: job id %q of %s: not a valid id (JobID's hex digits)", j.ID, j.Input)
	}
	if j.Class == "" {
		j.Class = classOf(j.Estimate)
	}
	if _, ok := c.cons[j.Class]; !ok {
		return j, fmt.Errorf("queue: job %s of %s: unknown class %q", j.ID, j.Input, j.Class)
	}
	if j.Submitted.IsZero() {
		j.Submitted = time.Now()
	}
	if j.Submitter == "" {
		j.Submitter = c.o.Name
	}
	// A submitter queues only in its own namespace; another client in
	// the job's (a retried dead letter's) or, for a new job, its own.
	if c.scope != "" || j.Owner == "" {
		j.Owner = c.owner
	}
	if !ValidSubmitter(j.Owner) {
		return j, fmt.Errorf("queue: job %s of %s: namespace %q: not a submitter's name", j.ID, j.Input, j.Owner)
	}
	return j, nil
}

// refuseDead returns an error wrapping ErrDead, with the dead letter's
// kind and reason, when j has a dead letter; nil when it has none.
func (c *Client) refuseDead(ctx context.Context, j Job) error {
	dl, err := c.deadLetterAt(ctx, j.Owner, j.ID)
	switch {
	case err == nil:
		return fmt.Errorf("queue: job %s of %s: %w (%s: %s): `rawbatch dead retry %s` queues it again", j.ID, j.Input, ErrDead, dl.Kind, dl.Reason, j.ID)
	case errors.Is(err, ErrNotFound):
		return nil
	}
	return err
}

// publishMsg publishes j's message msg with the de-duplication id msgID,
// waiting with backoff while the queue is full (logging it once) until
// there is room or ctx ends. It returns false when another submit queued
// the job meanwhile.
func (c *Client) publishMsg(ctx context.Context, j Job, msg *nats.Msg, msgID string) (bool, error) {
	delay, told := 100*time.Millisecond, false
	for {
		octx, cancel := c.op(ctx)
		_, err := c.js.PublishMsg(octx, msg, jetstream.WithMsgID(msgID))
		cancel()
		if err == nil {
			// Even when ack.Duplicate: the id is this call's own, so the
			// message in is this call's (a resend by the library's retry).
			return true, nil
		}
		switch refusal(err) {
		case refusedQueued:
			return false, nil // queued meanwhile by another submit
		case refusedOther:
			return false, fmt.Errorf("queue: publishing job %s of %s: %w", j.ID, j.Input, unavailable(err))
		}
		// The queue is full: wait for room (backpressure).
		if !told {
			told = true
			c.note(fmt.Sprintf("the queue is full (%s jobs waiting): waiting for room", c.depth(ctx)))
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("queue: publishing job %s of %s: waiting for room in the queue: %w", j.ID, j.Input, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// depth returns the number of messages in the jobs stream, "?" when the
// broker does not say.
func (c *Client) depth(ctx context.Context) string {
	octx, cancel := c.op(ctx)
	defer cancel()
	if si, err := c.jobs.Info(octx); err == nil {
		return strconv.FormatUint(si.State.Msgs, 10)
	}
	return "?"
}

// setQueued sets the status of j, just published, to queued: created, or
// updated from revision rev (read before publishing), so that a status a
// worker wrote meanwhile stays.
func (c *Client) setQueued(ctx context.Context, j Job, rev uint64) error {
	st := Status{ID: j.ID, Owner: j.Owner, Batch: j.Batch, Input: j.Input, OutDir: j.OutDir, State: Queued, Queued: j.Submitted}
	b, _ := json.Marshal(st)
	octx, cancel := c.op(ctx)
	defer cancel()
	var err error
	if rev == 0 {
		_, err = c.status.Create(octx, statusKey(j.Owner, j.ID), b)
	} else {
		_, err = c.status.Update(octx, statusKey(j.Owner, j.ID), b, rev)
	}
	if err != nil && !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return fmt.Errorf("queue: status of job %s of %s: %w", j.ID, j.Input, unavailable(err))
	}
	return nil
}

// putStatus writes st under its job's namespace (DefaultSubmitter's when
// it has none; each call bounded by the call timeout). The end
// of a job (processed, failed), which submit --wait waits for, is asked
// again while the broker does not answer (whileUnavailable: a cluster
// electing the bucket's leader); another state is written once.
func (c *Client) putStatus(st Status) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	put := func() error {
		octx, cancel := c.op(context.Background())
		defer cancel()
		_, err := c.status.Put(octx, statusKey(cmp.Or(st.Owner, DefaultSubmitter), st.ID), b)
		return unavailable(err)
	}
	if st.State == Processed || st.State == Failed {
		return c.whileUnavailable(context.Background(), put)
	}
	return put()
}

// statuses reads every status (of batch) once.
func (c *Client) statuses(ctx context.Context, batch string) ([]Status, error) {
	var r []Status
	err := c.watchKV(ctx, c.status, c.statusFilter(), false, func(e jetstream.KeyValueEntry) bool {
		var st Status
		if json.Unmarshal(e.Value(), &st) == nil && (batch == "" || st.Batch == batch) {
			r = append(r, st)
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("queue: statuses: %w", err)
	}
	return r, nil
}

func (c *Client) watchStatuses(ctx context.Context, batch string, fn func(Status) bool) error {
	// The watch starts again after each reconnect (a broker restarted on
	// its store), skipping the revisions already seen.
	seen := map[string]uint64{}
	for {
		reconnects := c.nc.Stats().Reconnects
		wctx, cancel := context.WithCancel(ctx)
		stopped := false
		done := make(chan struct{})
		go func() {
			defer close(done)
			t := time.NewTicker(250 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-wctx.Done():
					return
				case <-t.C:
					if c.nc.Stats().Reconnects != reconnects && c.nc.IsConnected() {
						cancel()
						return
					}
				}
			}
		}()
		err := c.watchKV(wctx, c.status, c.statusFilter(), true, func(e jetstream.KeyValueEntry) bool {
			if e.Revision() <= seen[e.Key()] {
				return true
			}
			seen[e.Key()] = e.Revision()
			var st Status
			if json.Unmarshal(e.Value(), &st) != nil || batch != "" && st.Batch != batch {
				return true
			}
			if !fn(st) {
				stopped = true
				return false
			}
			return true
		})
		cancel()
		<-done
		switch {
		case ctx.Err() != nil || stopped:
			return nil
		case err == nil || errors.Is(err, context.Canceled):
			continue // a reconnect: watch again
		case errors.Is(err, ErrUnavailable):
			select { // the broker is away: wait for it
			case <-ctx.Done():
				return nil
			case <-time.After(500 * time.Millisecond):
			}
			continue
		default:
			return fmt.Errorf("queue: watching statuses: %w", err)
		}
	}
}

// statusFilter is the keys of the statuses the client reads: its
// namespace's (<scope>.>) when confined, else all (">").
func (c *Client) statusFilter() string {
	if c.scope != "" {
		return c.scope + ".>"
	}
	return ">"
}

// watchKV calls fn with each value of bucket kv whose key matches keys
// (">": all; not the deleted ones): the current ones, then, when live,
// each new one until ctx ends or fn returns false. Reading the current
// ones fails when the broker is silent for the call timeout.
func (c *Client) watchKV(ctx context.Context, kv jetstream.KeyValue, keys string, live bool, fn func(jetstream.KeyValueEntry) bool) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := kv.Watch(wctx, keys, jetstream.IgnoreDeletes())
	if err != nil {
		return unavailable(err)
	}
	defer w.Stop()
	initial := time.NewTimer(c.timeout)
	defer initial.Stop()
	for {
		var timeout <-chan time.Time
		if !live {
			timeout = initial.C
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout:
			return fmt.Errorf("%w: reading bucket %s: %w", ErrUnavailable, kv.Bucket(), context.DeadlineExceeded)
		case e, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("%w: watch of bucket %s ended", ErrUnavailable, kv.Bucket())
			}
			if e == nil { // the current values are all in
				if !live {
					return nil
				}
				initial.Stop()
				continue
			}
			if !live { // the bound is on silence, not on the whole read
				if !initial.Stop() {
					select {
					case <-initial.C:
					default:
					}
				}
				initial.Reset(c.timeout)
			}
			if !fn(e) {
				return nil
			}
		}
	}
}

// deadLetter publishes dl (replacing an older one of the same job), in
// its job's namespace (DefaultSubmitter's when it has none).
func (c *Client) deadLetter(dl DeadLetter) error {
	b, err := json.Marshal(dl)
	if err != nil {
		return err
	}
	octx, cancel := c.op(context.Background())
	defer cancel()
	_, err = c.js.Publish(octx, deadSubject(cmp.Or(dl.Job.Owner, DefaultSubmitter), dl.Job.ID), b)
	return unavailable(err)
}

func (c *Client) dead(ctx context.Context, batch string) ([]DeadLetter, error) {
	octx, cancel := c.op(ctx)
	defer cancel()
	info, err := c.deadS.Info(octx)
	if err != nil {
		return nil, fmt.Errorf("queue: dead letters: %w", unavailable(err))
	}
	if info.State.Msgs == 0 {
		return nil, nil
	}
	var filter []string
	if c.scope != "" {
		filter = []string{deadPrefix + c.scope + ".>"}
	}
	oc, err := c.js.OrderedConsumer(octx, deadStream, jetstream.OrderedConsumerConfig{FilterSubjects: filter})
	if err != nil {
		return nil, fmt.Errorf("queue: dead letters: %w", unavailable(err))
	}
	var r []DeadLetter
	for {
		mb, err := oc.Fetch(100, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			return nil, fmt.Errorf("queue: dead letters: %w", unavailable(err))
		}
		n, last := 0, false
		for m := range mb.Messages() {
			n++
			var dl DeadLetter
			if json.Unmarshal(m.Data(), &dl) == nil && (batch == "" || dl.Job.Batch == batch) {
				r = append(r, dl)
			}
			if md, err := m.Metadata(); err == nil && md.NumPending == 0 {
				last = true
			}
		}
		if err := mb.Error(); err != nil {
			return nil, fmt.Errorf("queue: dead letters: %w", unavailable(err))
		}
		if last || n == 0 {
			return r, nil
		}
		if octx.Err() != nil {
			return nil, fmt.Errorf("queue: dead letters: %w", unavailable(octx.Err()))
		}
	}
}

// deadLetterOf returns the dead letter of job id in the client's
// namespace when it is confined to one, else in any namespace.
func (c *Client) deadLetterOf(ctx context.Context, id string) (DeadLetter, error) {
	if c.scope != "" {
		return c.deadLetterAt(ctx, c.scope, id)
	}
	return c.findDead(ctx, id)
}

// deadLetterAt returns the dead letter of job id in namespace owner.
func (c *Client) deadLetterAt(ctx context.Context, owner, id string) (DeadLetter, error) {
	if !validID(id) {
		return DeadLetter{}, fmt.Errorf("queue: dead letter %q: %w", id, ErrNotFound)
	}
	octx, cancel := c.op(ctx)
	defer cancel()
	m, err := c.deadS.GetLastMsgForSubject(octx, deadSubject(owner, id))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return DeadLetter{}, fmt.Errorf("queue: dead letter of job %s: %w", id, ErrNotFound)
	} else if err != nil {
		return DeadLetter{}, fmt.Errorf("queue: dead letter of job %s: %w", id, unavailable(err))
	}
	return decodeDead(m.Subject, m.Data, id)
}

// decodeDead reads the dead letter of job id on subject with body
// data; its job's namespace is the subject's (none: empty).
func decodeDead(subject string, data []byte, id string) (DeadLetter, error) {
	var dl DeadLetter
	if err := json.Unmarshal(data, &dl); err != nil {
		return DeadLetter{}, fmt.Errorf("queue: dead letter of job %s: %w", id, err)
	}
	dl.Job.Owner = ""
	if tok := strings.Split(strings.TrimPrefix(subject, deadPrefix), "."); len(tok) == 2 {
		dl.Job.Owner = tok[0]
	}
	return dl, nil
}

// findDead returns the dead letter of job id in any namespace, or
// without one: the last message of the subjects rawbatch.dead.*.<id>,
// else of rawbatch.dead.<id>, asked with the subject in the request's
// body (which the submit role may not send).
func (c *Client) findDead(ctx context.Context, id string) (DeadLetter, error) {
	if !validID(id) {
		return DeadLetter{}, fmt.Errorf("queue: dead letter %q: %w", id, ErrNotFound)
	}
	dl, err := c.lastDead(ctx, deadPrefix+"*."+id, id)
	if errors.Is(err, ErrNotFound) {
		return c.lastDead(ctx, deadSubject("", id), id)
	}
	return dl, err
}

// lastDead returns the dead letter of job id last stored on subjects
// (a wildcard allowed).
func (c *Client) lastDead(ctx context.Context, subjects, id string) (DeadLetter, error) {
	octx, cancel := c.op(ctx)
	defer cancel()
	req, _ := json.Marshal(map[string]string{"last_by_subj": subjects})
	m, err := c.nc.RequestWithContext(octx, "$JS.API.STREAM.MSG.GET."+deadStream, req)
	if err != nil {
		return DeadLetter{}, fmt.Errorf("queue: dead letter of job %s: %w", id, unavailable(err))
	}
	var resp struct {
		Message *struct {
			Subject string `json:"subject"`
			Data    []byte `json:"data"`
		} `json:"message"`
		Error *struct {
			Code        int    `json:"code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return DeadLetter{}, fmt.Errorf("queue: dead letter of job %s: %w", id, err)
	}
	switch {
	case resp.Error != nil && resp.Error.Code == 404:
		return DeadLetter{}, fmt.Errorf("queue: dead letter of job %s: %w", id, ErrNotFound)
	case resp.Error != nil:
		return DeadLetter{}, fmt.Errorf("queue: dead letter of job %s: %s", id, resp.Error.Description)
	case resp.Message == nil:
		return DeadLetter{}, fmt.Errorf("queue: dead letter of job %s: an empty answer", id)
	}
	return decodeDead(resp.Message.Subject, resp.Message.Data, id)
}

func (c *Client) removeDead(ctx context.Context, owner, id string) error {
	err := c.whileUnavailable(ctx, func() error {
		octx, cancel := c.op(ctx)
		defer cancel()
		return unavailable(c.deadS.Purge(octx, jetstream.WithPurgeSubject(deadSubject(owner, id))))
	})
	if err != nil {
		return fmt.Errorf("queue: removing the dead letter of job %s: %w", id, unavailable(err))
	}
	return nil
}

func (c *Client) retry(ctx context.Context, id string) error {
	dl, err := c.deadLetterOf(ctx, id)
	if err != nil {
		return err
	}
	owner := dl.Job.Owner
	if err := c.mayRemoveDead(ctx, owner, id); err != nil {
		return err
	}
	j := dl.Job
	j.Submitted = time.Now()
	if _, err := c.publish(ctx, j, true, j.ID+"/"+nonce()); err != nil {
		return err
	}
	return c.removeDead(ctx, owner, id)
}

func (c *Client) purge(ctx context.Context, id string) error {
	dl, err := c.deadLetterOf(ctx, id)
	if err != nil {
		return err
	}
	if err := c.removeDead(ctx, dl.Job.Owner, id); err != nil {
		return err
	}
	octx, cancel := c.op(ctx)
	defer cancel()
	if err := c.status.Delete(octx, statusKey(dl.Job.Owner, id)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("queue: status of job %s: %w", id, unavailable(err))
	}
	return nil
}

func (c *Client) info(ctx context.Context) (QueueInfo, error) {
	octx, cancel := c.op(ctx)
	defer cancel()
	qi := QueueInfo{Depth: map[string]int{}}
	for _, class := range allClasses() {
		ci, err := c.cons[class].Info(octx)
		if err != nil {
			return QueueInfo{}, fmt.Errorf("queue: consumer %s%s: %w", consumerPre, class, unavailable(err))
		}
		qi.Depth[class] = int(ci.NumPending)
		qi.InFlight += ci.NumAckPending
	}
	si, err := c.jobs.Info(octx)
	if err != nil {
		return QueueInfo{}, fmt.Errorf("queue: stream %s: %w", jobsStream, unavailable(err))
	}
	if si.State.Msgs > 0 && !si.State.FirstTime.IsZero() {
		qi.Oldest = max(time.Since(si.State.FirstTime).Seconds(), 0)
	}
	if c.scope != "" {
		// A submitter counts its own dead letters and may not read the
		// workers' registry (its entries name every namespace's inputs).
		dls, err := c.dead(octx, "")
		if err != nil {
			return QueueInfo{}, err
		}
		qi.Dead, qi.Submitter = len(dls), c.scope
		return qi, nil
	}
	di, err := c.deadS.Info(octx)
	if err != nil {
		return QueueInfo{}, fmt.Errorf("queue: stream %s: %w", deadStream, unavailable(err))
	}
	qi.Dead = int(di.State.Msgs)
	err = c.watchKV(octx, c.workers, ">", false, func(e jetstream.KeyValueEntry) bool {
		var wi WorkerInfo
		if json.Unmarshal(e.Value(), &wi) == nil {
			qi.Workers = append(qi.Workers, wi)
		}
		return true
	})
	if err != nil {
		return QueueInfo{}, fmt.Errorf("queue: workers: %w", err)
	}
	return qi, nil
}

// workerKey is a worker name as a KV key (host:pid has a colon).
func workerKey(name string) string {
	b := []byte(name)
	for i, r := range b {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			b[i] = '_'
		}
	}
	return strings.Trim(string(b), ".")
}
