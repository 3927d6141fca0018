// Package queue is rawbatch's multi-host mode: jobs (one per
// input file) in a NATS JetStream work-queue stream, taken by `rawbatch
// work` processes on many hosts, with a lease per running job in a KV
// bucket (its revision is the fencing token), bounded delayed redelivery
// of transient failures, a dead-letter stream for permanent ones, a status
// per job in a KV bucket, and Prometheus metrics. It moves jobs; what a
// job converts and how (the task, its settings, the records in OUTDIR) is
// the caller's: a Job's Payload is opaque here (batch's
// QueuedTask), and Worker runs each job through its Convert function.
//
// Names on the broker (all created by Connect when missing; see
// docs/distributed.md):
//
//   - stream RAWBATCH_JOBS (work-queue retention, file storage, subjects
//     rawbatch.job.<class>.<owner>.<id>, owner the submitter's namespace
//     (Job.Owner), at most one message per subject with
//     discard-new per subject, so a job queued twice is refused while
//     its message is in the stream, and Nats-Msg-Id de-duplication with
//     one id per Publish call (job id "/" nonce: only a resend after a
//     lost ack is absorbed); MaxMsgs = the queue's bound, kept until a
//     client changes it, with discard new: a full queue refuses, Publish
//     waits);
//   - one durable pull consumer per size class, "class-<class>", shared
//     by every worker (explicit ack, AckWait, MaxDeliver);
//   - stream RAWBATCH_DEAD (limits retention, subjects
//     rawbatch.dead.<owner>.<id>,
//     one message per subject): the dead letters, each a DeadLetter;
//   - KV bucket rawbatch_leases (history 1, TTL = the lease TTL): key <id>
//     while a worker runs the job;
//   - KV bucket rawbatch_status (history 1): key <owner>.<id>, a Status;
//   - KV bucket rawbatch_workers (TTL = 3 beats): key <worker name>, a
//     WorkerInfo, refreshed every beat.
//
// Who may use which of them: a broker with an authorisation (InitAuth,
// BrokerSecurity) takes only clients with its credentials (Options.Creds),
// each user's JWT carrying its role's publish and subscribe permissions
// (rolePermissions in auth.go: submit, work, admin); a refused client or
// operation fails with ErrRefused. A submitter's credentials confine it
// to its namespace (AddSubmitter): it reads and writes only its own
// jobs' statuses and dead letters; workers and admins see every one.
package queue

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/rawbatch/rawbatch/budget"
)

// Defaults of Options.
const (
	DefaultAckWait    = 60 * time.Second
	DefaultLeaseTTL   = 45 * time.Second
	DefaultBeat       = 15 * time.Second
	DefaultMaxDeliver = 5
)

// DefaultBackoff is the delay before each redelivery of a job whose
// conversion failed transiently (no space, interrupted I/O, stale NFS
// handle, broker timeout): 15 s, 2 min, 10 min; a transient failure after
// the last one is a permanent one.
var DefaultBackoff = []time.Duration{15 * time.Second, 2 * time.Minute, 10 * time.Minute}

// Options are how to reach the broker and the queue's timings. The zero
// value of each field means its default.
type Options struct {
	// URL is the NATS server URL (nats://host:4222; several separated by
	// commas). Empty: nats://127.0.0.1:4222.
	URL string
	// AckWait is how long a delivered job may go without an ack or an
	// InProgress before the broker redelivers it (DefaultAckWait).
	AckWait time.Duration
	// LeaseTTL is how long a lease lives without renewal
	// (DefaultLeaseTTL); Beat is the period of lease renewal, InProgress
	// and the worker registry's refresh (DefaultBeat). A worker that has
	// not renewed its lease for LeaseTTL − Beat is fenced (it stops the
	// conversion before the broker lets the lease expire). AckWait must
	// be longer than LeaseTTL.
	LeaseTTL, Beat time.Duration
	// MaxDeliver: a job delivered this many times without finishing goes
	// to the dead letters on its next delivery, without a conversion
	// (DefaultMaxDeliver).
	MaxDeliver int
	// Backoff is the delay before each redelivery after a transient
	// failure (DefaultBackoff).
	Backoff []time.Duration
	// QueueMax is the bound on the jobs in the queue (waiting or in
	// flight), the broker's: kept on the stream (MaxMsgs, discard new)
	// for every later client until changed. > 0: Connect sets it to
	// QueueMax; 0: Connect leaves it as it is; < 0: Connect removes it
	// (unbounded).
	QueueMax int
	// Log, when set, receives the client's events, one line each: the
	// connection's (unreachable, retrying, reconnected, and the NATS
	// library's asynchronous errors, which it never prints) and
	// Publish's "the queue is full (N jobs waiting): waiting for room"
	// (once per wait). While a Worker runs on the client, the
	// connection's events go to Worker.Log instead. Nil: they are
	// dropped.
	Log func(string)
	// Retry (rawbatch work): Connect keeps trying to reach the broker
	// (backoff up to 5 s, logging "broker unreachable at URL: retrying"
	// once, then "connected to the broker at URL") until it answers or
	// ctx ends. Otherwise Connect fails at once with ErrUnavailable.
	Retry bool
	// Name identifies this client (a worker: host:pid) on the broker.
	Name string
	// Creds is a NATS credentials file (InitAuth's <role>.creds) the
	// client presents; CA a PEM file of the CA that signed the broker's
	// TLS certificate (with a tls:// URL). Empty: none.
	Creds, CA string
	// Cert and Key are this client's TLS certificate and key (PEM
	// files), for a broker that asks for one. Empty: none.
	Cert, Key string
	// inProcess, userJWT and userSeed are the embedded broker's own
	// connection (it creates the queue's streams).
	inProcess nats.InProcessConnProvider
	userJWT   string
	userSeed  []byte
	// SetTimings (rawbatch work): Connect applies AckWait, LeaseTTL,
	// Beat and MaxDeliver to the consumers and buckets that exist
	// already. Otherwise (submit, status, dead) it creates what is missing
	// with them but adopts the timings of what exists (the workers'), so
	// that a command run with the default timings does not change those
	// the workers run with.
	SetTimings bool
}

// Client is a connection to the broker with the queue's streams, consumers
// and buckets ensured. Safe for concurrent use.
type Client struct {
	o       Options
	nc      *nats.Conn
	js      jetstream.JetStream
	jobs    jetstream.Stream
	deadS   jetstream.Stream
	leases  jetstream.KeyValue
	status  jetstream.KeyValue
	workers jetstream.KeyValue
	cons    map[string]jetstream.Consumer // by class
	timeout time.Duration                 // of each broker call
	// owner is the namespace of the jobs this client queues (its
	// credentials' submitter, else DefaultSubmitter); scope, when not
	// empty, confines what it reads to that namespace (a submitter's
	// credentials: the broker lets it read no other); role is its
	// credentials' role ("" without rawbatch's credentials).
	owner, scope, role string
	// logf, when set (by a running Worker), receives the connection's
	// events (disconnected, reconnected).
	logf atomic.Pointer[func(string)]
	// denied ends (its cause wrapping ErrRefused) at the next
	// permission violation the broker reports, ending the calls in
	// flight (refuse); refused is that violation and when.
	denyMu  sync.Mutex
	denied  context.Context
	deny    context.CancelCauseFunc
	refused atomic.Pointer[refusalNote]
}

// Connect connects to the broker at o.URL and creates the streams,
// consumers and buckets that are missing (setting or removing the queue's
// bound as o.QueueMax says). It fails with an error wrapping
// ErrUnavailable when the broker cannot be reached (at once, or, with
// o.Retry, when ctx ends first), and naming what it lacks (no JetStream,
// a server older than 2.9).
func Connect(ctx context.Context, o Options) (*Client, error) {
	return connect(ctx, o)
}

// Close closes the connection (pending acks are flushed first).
func (c *Client) Close() { c.close() }

// ErrUnavailable: the broker cannot be reached (or timed out).
var ErrUnavailable = errors.New("NATS broker unavailable")

// ErrDead: Publish of a job that has a dead letter (the error's text
// gives its kind and reason and says how to queue it again).
var ErrDead = errors.New("job in the dead letters")

// Job is one input file to convert, as published by submit.
type Job struct {
	// ID is JobID of the input and settings.
	ID string `json:"id"`
	// Batch names the submit the job belongs to (--batch).
	Batch string `json:"batch"`
	// Input is the input's path as submitted (for messages and status);
	// OutDir the output directory.
	Input  string `json:"input"`
	OutDir string `json:"outdir"`
	// Estimate is the conversion's memory estimate in bytes on a worker
	// (its estimate plus a worker process's overhead); Class is
	// ClassOf(Estimate).
	Estimate int64  `json:"estimate"`
	Class    string `json:"class"`
	// Submitted is when it was published, by Submitter (host:pid).
	Submitted time.Time `json:"submitted"`
	Submitter string    `json:"submitter"`
	// Owner is the namespace the job is in: the submitter identity (its
	// credentials' name, DefaultSubmitter without one) that queued it.
	// Publish sets it from the client's credentials; a worker takes it
	// from the job's subject (which the broker let only that submitter
	// publish on), never from the message's body.
	Owner string `json:"owner,omitempty"`
	// Payload is what the worker converts (batch.QueuedTask as
	// JSON): opaque to this package.
	Payload json.RawMessage `json:"payload"`
}

// JobID returns the id of the job converting input (its path as
// submitted), of size bytes and modification time mtime, with the
// settings whose hash is settingsHash: 32 hex digits of a hash of the
// four. A re-submit of an unchanged file with the same settings has the
// same id.
func JobID(input string, size int64, mtime time.Time, settingsHash string) string {
	return jobID(input, size, mtime, settingsHash)
}

// Classes are the size classes' upper bounds in bytes, smallest first: a
// job is in the first class whose bound is at least its Estimate, the
// last class ("huge") taking the rest. A worker takes jobs only from
// classes whose bound fits its budget's free bytes (the huge class: when
// the job at its head fits).
var Classes = []int64{256 << 20, 512 << 20, 1 << 30, 2 << 30, 4 << 30, 8 << 30, 16 << 30}

// ClassOf returns the class name of a job of estimate bytes: "le256m",
// "le512m", "le1g", "le2g", "le4g", "le8g", "le16g" or "huge".
func ClassOf(estimate int64) string { return classOf(estimate) }

// Publish queues j and sets its status to queued. It returns queued false
// and no error when the job is already in the queue (the same ID, its
// message still in the stream: waiting or in flight). A job that was
// processed, or whose dead letter was purged, is queued again (each call
// has its own de-duplication id: the broker's de-duplication window only
// absorbs a resend of this call's message after a lost ack). A job that
// has a dead letter is not queued: the error wraps ErrDead and gives the
// dead letter's kind and reason (`rawbatch dead retry ID` queues it
// again: Retry). When the queue is full (Options.QueueMax) it waits,
// retrying with backoff, until there is room or ctx ends (backpressure),
// logging "the queue is full (N jobs waiting): waiting for room" once per
// wait to Options.Log. Errors wrap ErrUnavailable when the broker is gone.
//
// A broker that does not answer for a moment (restarting, recovering its
// streams, a loaded machine) is asked again, with backoff, for up to
// unavailableWait; the same call's message id keeps a retry from
// queuing the job twice.
func (c *Client) Publish(ctx context.Context, j Job) (queued bool, err error) {
	msgID := j.ID + "/" + nonce()
	err = c.whileUnavailable(ctx, func() (err error) {
		queued, err = c.publish(ctx, j, false, msgID)
		return err
	})
	return queued, err
}

// State is a job's state in its Status.
type State string

const (
	Queued     State = "queued"
	Processing State = "processing"
	Retrying   State = "retrying"
	Processed  State = "processed"
	Failed     State = "failed" // in the dead letters
)

// Status is a job's status (KV bucket rawbatch_status, key the job's ID).
type Status struct {
	ID string `json:"id"`
	// Owner is the job's namespace (Job.Owner): its status's key is
	// <owner>.<id>.
	Owner  string `json:"owner,omitempty"`
	Batch  string `json:"batch"`
	Input  string `json:"input"`
	OutDir string `json:"outdir"`
	State  State  `json:"state"`
	// Attempt is the delivery being run or last run (1 for the first);
	// Worker the worker running it or that ran it last.
	Attempt int    `json:"attempt,omitempty"`
	Worker  string `json:"worker,omitempty"`
	// Queued, Started and Ended are when the job was published, when its
	// last attempt started and when it ended (processed or failed).
	Queued  time.Time `json:"queued"`
	Started time.Time `json:"started,omitzero"`
	Ended   time.Time `json:"ended,omitzero"`
	// Kind and Reason say why it failed or is retrying (Kind: the
	// Outcome's kind, rawerr's names (corrupt, unsupported, crashed,
	// timeout, over-budget, transient, ...), or the queue's own
	// redelivered); Result is the Convert result
	// of its last attempt (what a report shows: the caller's JSON).
	Kind   string          `json:"kind,omitempty"`
	Reason string          `json:"reason,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	// Stages are the seconds the last attempt spent in each stage.
	Stages map[string]float64 `json:"stages,omitempty"`
}

// Statuses returns the status of every job (of batch, when not empty).
//
// A broker that does not answer for a moment is asked again for up to
// unavailableWait, as by Publish.
func (c *Client) Statuses(ctx context.Context, batch string) (sts []Status, err error) {
	err = c.whileUnavailable(ctx, func() (err error) {
		sts, err = c.statuses(ctx, batch)
		return err
	})
	return sts, err
}

// WatchStatuses calls fn with each status as it is set (after the current
// ones), until ctx ends or fn returns false.
func (c *Client) WatchStatuses(ctx context.Context, batch string, fn func(Status) bool) error {
	return c.refusal(c.watchStatuses(ctx, batch, fn))
}

// DeadLetter is a job in the dead letters, with why.
type DeadLetter struct {
	Job      Job       `json:"job"`
	Kind     string    `json:"kind"`
	Reason   string    `json:"reason"`
	Attempts int       `json:"attempts"`
	Worker   string    `json:"worker"`
	Time     time.Time `json:"time"`
}

// Dead returns the dead letters (of batch, when not empty), oldest first.
func (c *Client) Dead(ctx context.Context, batch string) ([]DeadLetter, error) {
	dls, err := c.dead(ctx, batch)
	return dls, c.refusal(err)
}

// DeadLetterOf returns the dead letter of job id (an error wrapping
// ErrNotFound when there is none).
func (c *Client) DeadLetterOf(ctx context.Context, id string) (DeadLetter, error) {
	dl, err := c.deadLetterOf(ctx, id)
	return dl, c.refusal(err)
}

// Retry publishes the dead job id again (status queued, attempts from 1)
// and removes its dead letter: the way to run a dead job again (Publish
// refuses it with ErrDead); Purge removes its dead letter and sets its
// status aside (deleted).
func (c *Client) Retry(ctx context.Context, id string) error { return c.refusal(c.retry(ctx, id)) }
func (c *Client) Purge(ctx context.Context, id string) error { return c.refusal(c.purge(ctx, id)) }

// ErrNotFound: no such job or dead letter.
var ErrNotFound = errors.New("not found")

// QueueInfo is the queue's state for status and metrics.
type QueueInfo struct {
	// Depth is the number of jobs waiting, per class (not delivered,
	// or redelivery due); InFlight the jobs delivered and not acked.
	Depth    map[string]int `json:"depth"`
	InFlight int            `json:"in_flight"`
	// Oldest is the age in seconds of the oldest job in the queue (0:
	// none): the first message of the jobs stream, waiting, waiting for
	// a retry or running (a work queue keeps a job until it is acked).
	Oldest float64 `json:"oldest_seconds"`
	// Dead is the number of dead letters.
	Dead int `json:"dead"`
	// Workers are the workers alive (registry), with what they run.
	Workers []WorkerInfo `json:"workers"`
	// Submitter, when set, is the namespace the client is confined to
	// (a submitter's credentials): Dead counts its own dead letters and
	// Workers is not read (the registry names every namespace's inputs).
	Submitter string `json:"submitter,omitempty"`
}

// WorkerInfo is a worker's entry in the registry (bucket rawbatch_workers).
type WorkerInfo struct {
	Name    string    `json:"name"`
	Budget  int64     `json:"budget"`
	InUse   int64     `json:"in_use"`
	Jobs    int       `json:"jobs"`
	Running []string  `json:"running"` // job IDs
	Inputs  []string  `json:"inputs"`  // their inputs
	Seen    time.Time `json:"seen"`
}

// Info returns the queue's state.
func (c *Client) Info(ctx context.Context) (QueueInfo, error) {
	qi, err := c.info(ctx)
	return qi, c.refusal(err)
}

// Delivery is one delivery of a job to a worker, as Worker gives it to
// Convert.
type Delivery struct {
	Job Job
	// Attempt is the delivery's number (1 for the first).
	Attempt int
	// Lost is closed when the job's lease is lost (not renewed within
	// LeaseTTL − Beat, or taken over): the conversion must stop at once
	// and commit nothing (fenced).
	Lost <-chan struct{}
	// Fence renews the lease now and returns nil when it is still this
	// delivery's (its revision unchanged since the last renewal): the
	// caller calls it after the outputs are in place and before writing
	// their records; an error (wrapping ErrFenced) means another worker
	// may own the job: write no record.
	Fence func() error
}

// ErrFenced: the lease of the job was lost; the worker must not commit.
var ErrFenced = errors.New("lease lost (fenced)")

// Outcome is how Convert ended a delivery.
type Outcome struct {
	// Result: Done (outputs and records committed, or already up to
	// date), Permanent (to the dead letters with Kind and Reason),
	// Transient (redelivered after the next Backoff delay), Fenced (lease
	// lost: nothing committed, nothing acked), Stopped (worker shutting
	// down: handed back for immediate redelivery).
	Result Result
	Kind   string
	Reason string
	// Report is what status keeps of the attempt (the caller's JSON).
	Report json.RawMessage
	// Stages are the seconds spent in each stage (metrics histogram).
	Stages map[string]float64
	// Converted: Done by converting (not found up to date).
	Converted bool
}

// Result is the kind of an Outcome.
type Result int

const (
	Done Result = iota
	Permanent
	Transient
	Fenced
	Stopped
)

// Worker takes jobs from the queue and runs them through Convert, at most
// Jobs at once and only while its memory budget (Sched) has room for the
// job's class. A job over its budget is left to a bigger worker alive;
// when none is, the worker with the largest budget runs it if its own
// estimate fits, else dead-letters it as over-budget, but only once no
// bigger worker has been seen for 2 × AckWait since the job was
// published (the stream message's time): a bigger worker restarting
// meanwhile takes it.
type Worker struct {
	Client *Client
	// Sched is the worker's memory budget, shared with the conversions
	// (the same scheduler admits them: batch Runner.Shared);
	// Jobs the most jobs at once.
	Sched *budget.Scheduler
	Jobs  int
	// Convert converts one delivery; it must return when ctx ends (after
	// its grace) or d.Lost is closed.
	Convert func(ctx context.Context, d Delivery) Outcome
	// Grace is how long running jobs may finish after Run's ctx ends;
	// then their ctx ends and they are handed back (Stopped).
	Grace time.Duration
	// Metrics, when set, is updated as jobs run.
	Metrics *Metrics
	// Log, when set, receives one line per event (job taken, done,
	// failed, fenced, reconnected).
	Log func(string)

	// running is set while Run takes jobs; beatOK is when the worker's
	// last beat reached the broker (its registry entry written), in
	// Unix nanoseconds (Ready).
	running atomic.Bool
	beatOK  atomic.Int64
}

// Run takes and runs jobs until ctx ends: then it takes no more, lets the
// running ones finish within Grace, hands the rest back for immediate
// redelivery (Nak) and returns. It survives broker restarts (reconnecting).
func (w *Worker) Run(ctx context.Context) error { return w.run(ctx) }

// Ready returns nil when w is ready for jobs: Run is taking them, the
// connection to the broker is up, and the worker is not fenced (its last
// beat reached the broker less than LeaseTTL − Beat ago: a worker that
// cannot write to the broker for that long loses its leases). Otherwise
// the error says why.
func (w *Worker) Ready() error { return w.ready() }

// ServeHealth serves, at addr until ctx ends, /healthz (200 while the
// process answers) and /readyz (200 when ready returns nil, else 503 with
// its error's text).
func ServeHealth(ctx context.Context, addr string, ready func() error) error {
	return serveHealth(ctx, addr, ready)
}

// Metrics are a worker's metrics for Prometheus (client_golang, a
// registry of their own; see docs/distributed.md for each name).
type Metrics struct {
	m *metrics
}

// NewMetrics returns metrics for a worker with the queue c and budget s.
func NewMetrics(c *Client, s *budget.Scheduler) *Metrics { return newMetrics(c, s) }

// Serve serves the metrics at addr under /metrics until ctx ends.
func (m *Metrics) Serve(ctx context.Context, addr string) error { return m.serve(ctx, addr) }

// BrokerOptions configure an embedded JetStream server (rawbatch broker).
type BrokerOptions struct {
	// Store is its storage directory (on local disk; fsync on every
	// write); Listen the client address (host:port, default
	// 127.0.0.1:4222); Monitor, when set, the HTTP monitoring address.
	Store, Listen, Monitor string
	// Cluster makes the broker one node of a cluster of brokers (the
	// zero value: a single broker).
	Cluster ClusterOptions
	// Security is who may connect and how (BrokerSecurity).
	Security BrokerSecurity
}

// BrokerSecurity is a broker's authorisation and TLS.
type BrokerSecurity struct {
	// Auth is an authorisation directory (InitAuth): only clients with
	// its credentials connect, each allowed its role's operations.
	Auth string
	// Insecure accepts a broker listening beyond the loopback interface
	// without Auth; otherwise StartBroker refuses (ErrOpenListen).
	Insecure bool
	// TLSCert and TLSKey (PEM files) make every client connection TLS;
	// TLSCA, when set, is the CA whose certificates clients must present.
	TLSCert, TLSKey, TLSCA string
}

// Broker is an embedded JetStream server.
type Broker struct {
	srv *server.Server
	// stopProvision ends a cluster node's creating the queue's streams
	// (provisionAndListen); nil when none runs.
	stopProvision context.CancelFunc
}

// StartBroker starts an embedded server and waits until it is ready.
func StartBroker(o BrokerOptions) (*Broker, error) { return startBroker(o) }

// URL returns the client URL of the broker.
func (b *Broker) URL() string { return b.srv.ClientURL() }

// Shutdown stops the broker (flushing its store).
func (b *Broker) Shutdown() { b.shutdown() }
