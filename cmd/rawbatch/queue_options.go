package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rawbatch/rawbatch/queue"
)

// QueueOptions are the settings of the multi-host mode's commands
// (submit, work, status, dead; docs/distributed.md) that reach the broker:
// its URL and the queue's timings. The timings are advanced settings (the
// defaults suit files that take minutes; the tests shorten them); every
// host should use the same ones.
type QueueOptions struct {
	// NATS is the broker's URL (--nats; several separated by commas).
	NATS string
	// Creds is the NATS credentials file this client presents (the
	// broker's <role>.creds); CA the PEM file of the CA that signed the
	// broker's TLS certificate; Cert and Key this client's certificate
	// and key for a broker that asks for one (--tls-ca). Empty: none.
	Creds, CA, Cert, Key string
	// AckWait, LeaseTTL and Beat are queue.Options' timings; MaxDeliver
	// its most deliveries; Backoff the delays before each redelivery
	// after a transient failure.
	AckWait, LeaseTTL, Beat time.Duration
	MaxDeliver              int
	Backoff                 []time.Duration
}

// settings declares the queue settings into o, once (setting.go).
func (o *QueueOptions) settings() []setting {
	return []setting{
		{Name: "nats", Default: "nats://127.0.0.1:4222", Help: "URL of the NATS JetStream broker (several separated by commas): an existing NATS server or cluster, or 'rawbatch broker'",
			Apply: func(v value) error {
				if o.NATS = strings.TrimSpace(v.String()); o.NATS == "" {
					return fmt.Errorf("--nats: want the broker's URL (nats://host:4222)")
				}
				return checkNATSURLs(o.NATS)
			}},
		{Name: "nats-creds", Default: "", Help: "NATS credentials file to present to the broker (submit.creds, work.creds or admin.creds from 'rawbatch broker --init-auth'); give the file, never its contents",
			Apply: func(v value) (err error) {
				// Never echo a value that looks like the file's contents
				// (the message does not start with the flag: withSource
				// would append an environment variable's value).
				if s := v.String(); strings.ContainsAny(s, "\n\r") || strings.Contains(s, "-----BEGIN") || strings.HasPrefix(strings.TrimSpace(s), "eyJ") {
					return fmt.Errorf("want the path of a credentials file for --nats-creds (RAWBATCH_NATS_CREDS, nats-creds), not its contents (not shown)")
				}
				o.Creds, err = pathSetting(v)
				return err
			}},
		{Name: "nats-ca", Default: "", Help: "PEM file of the CA that signed the broker's TLS certificate (with a tls:// --nats URL)",
			Apply: func(v value) (err error) { o.CA, err = pathSetting(v); return err }},
		{Name: "nats-cert", Default: "", Help: "PEM file of this client's TLS certificate, for a broker that asks for one (broker --tls-ca); with --nats-key",
			Apply: func(v value) (err error) { o.Cert, err = pathSetting(v); return err }},
		{Name: "nats-key", Default: "", Help: "PEM file of the key of --nats-cert",
			Apply: func(v value) (err error) {
				if o.Key, err = pathSetting(v); err == nil && (o.Key == "") != (o.Cert == "") {
					err = fmt.Errorf("--nats-cert and --nats-key: give both or neither")
				}
				return err
			}},
		{Name: "ack-wait", Default: queue.DefaultAckWait, Help: "advanced: how long a job taken by a worker may go without news (a beat) before the broker hands it to another worker; longer than --lease-ttl",
			Apply: durationInto(&o.AckWait)},
		{Name: "lease-ttl", Default: queue.DefaultLeaseTTL, Help: "advanced: how long a running job's lease lives without renewal; a worker that cannot renew it stops the conversion and commits nothing (fenced)",
			Apply: durationInto(&o.LeaseTTL)},
		{Name: "beat", Default: queue.DefaultBeat, Help: "advanced: period of a running job's lease renewal and ack-deadline extension, and of the worker registry; shorter than --lease-ttl",
			Apply: func(v value) (err error) {
				if o.Beat, err = duration(v); err != nil {
					return err
				}
				switch {
				case o.Beat <= 0 || o.LeaseTTL <= o.Beat:
					return fmt.Errorf("--beat %s: want more than 0 and less than --lease-ttl %s", o.Beat, o.LeaseTTL)
				case o.AckWait <= o.LeaseTTL:
					return fmt.Errorf("--ack-wait %s: want more than --lease-ttl %s", o.AckWait, o.LeaseTTL)
				}
				return nil
			}},
		{Name: "max-deliver", Default: queue.DefaultMaxDeliver, Help: "advanced: a job delivered this many times without finishing (it kills or stalls its workers) goes to the dead letters on its next delivery, without another conversion",
			Apply: func(v value) (err error) {
				if o.MaxDeliver, err = wholeNumber(v); err == nil && o.MaxDeliver < 1 {
					err = fmt.Errorf("--max-deliver %d: want 1 or more", o.MaxDeliver)
				}
				return err
			}},
		{Name: "retry-backoff", Default: backoffText(queue.DefaultBackoff), Help: "advanced: delays before each redelivery of a job that failed transiently (no space, I/O interrupted, stale NFS handle), comma-separated; a transient failure after the last is permanent",
			Apply: func(v value) error {
				o.Backoff = nil
				for _, f := range strings.Split(v.String(), ",") {
					d, err := time.ParseDuration(strings.TrimSpace(f))
					if err != nil || d < 0 {
						return fmt.Errorf("--retry-backoff %q: want durations separated by commas (15s,2m,10m)", v.String())
					}
					o.Backoff = append(o.Backoff, d)
				}
				return nil
			}},
	}
}

// natsSchemes are the URL schemes of a NATS server's client ports.
var natsSchemes = []string{"nats", "tls", "ws", "wss"}

// checkNATSURLs checks urls (separated by commas): each a nats://, tls://,
// ws:// or wss:// URL with a host, or host:port. The error names the
// first bad one and what is wanted.
func checkNATSURLs(urls string) error {
	for _, u := range strings.Split(urls, ",") {
		u = strings.TrimSpace(u)
		bad := fmt.Errorf("--nats %q: want nats://host:port (or tls://, ws://, wss://), or host:port", u)
		if scheme, _, ok := strings.Cut(u, "://"); ok {
			if !slices.Contains(natsSchemes, strings.ToLower(scheme)) {
				return bad
			}
			pu, err := url.Parse(u)
			if err != nil || pu.Hostname() == "" {
				return bad
			}
			continue
		}
		host, port, err := net.SplitHostPort(u)
		if err != nil || host == "" || port == "" {
			return bad
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return bad
		}
	}
	return nil
}

// backoffText is ds as --retry-backoff writes it: "15s,2m0s,10m0s".
func backoffText(ds []time.Duration) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, d.String())
	}
	return strings.Join(parts, ",")
}

// options are o as queue.Options for a client named name; queueMax is
// queue.Options.QueueMax (0: leave the broker's bound, < 0: remove it).
func (o QueueOptions) options(name string, queueMax int) queue.Options {
	return queue.Options{URL: o.NATS, AckWait: o.AckWait, LeaseTTL: o.LeaseTTL, Beat: o.Beat,
		MaxDeliver: o.MaxDeliver, Backoff: o.Backoff, QueueMax: queueMax, Name: name,
		Creds: o.Creds, CA: o.CA, Cert: o.Cert, Key: o.Key}
}

// connect connects to the broker as role (submit, work, ...); log, when
// not nil, receives the client's events (queue.Options.Log: the
// connection's, the NATS library's errors, "the queue is full"). work
// applies its timings to the queue's consumers and buckets
// (queue.Options.SetTimings), the others adopt those in place; work keeps
// trying to reach the broker until ctx ends (queue.Options.Retry), the
// others give up within 30 s. The error names the URL.
func (o QueueOptions) connect(ctx context.Context, role string, queueMax int, log func(string)) (*queue.Client, error) {
	qo := o.options(clientName(role), queueMax)
	qo.SetTimings = role == "work"
	qo.Retry = role == "work"
	qo.Log = log
	if !qo.Retry {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	c, err := queue.Connect(ctx, qo)
	if err != nil {
		return nil, refusedError(o.NATS, err)
	}
	return c, nil
}

// clientName names this process on the broker: "role host:pid".
func clientName(role string) string {
	return role + " " + hostPID()
}

// hostPID is "host:pid", as jobs name their submitter and workers.
func hostPID() string {
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// batchSetting declares --batch into dst, with help saying what it names.
func batchSetting(dst *string, help string) setting {
	return setting{Name: "batch", Default: "", Help: help,
		Apply: func(v value) error { *dst = strings.TrimSpace(v.String()); return nil }}
}

// defaultBatchName is the batch name of a submit into outDir without
// --batch: its base name and a short hash of its absolute path
// ("export-1a2b3c4d"), the same for every submit into that directory.
func defaultBatchName(outDir string) string {
	abs, err := filepath.Abs(outDir)
	if err != nil {
		abs = outDir
	}
	sum := sha256.Sum256([]byte(abs))
	base := strings.Map(func(r rune) rune {
		if r == '.' || r == '*' || r == '>' || r <= ' ' {
			return '_'
		}
		return r
	}, filepath.Base(abs))
	return base + "-" + hex.EncodeToString(sum[:4])
}

// queueCommandKeys are the config file keys of the multi-host mode's
// commands that convert does not have: convert's strict config check and
// its RAWBATCH_* typo warnings accept them, as one config file serves
// every command.
func queueCommandKeys() []string {
	var q QueueOptions
	var s SubmitOptions
	var w WorkOptions
	var b BrokerOptions
	keys := settingKeys(q.settings())
	keys = append(keys, settingKeys(s.ownSettings())...)
	keys = append(keys, settingKeys(w.ownSettings())...)
	return append(keys, settingKeys(b.settings())...)
}

// refusedError is err, of a client of the broker at url: when the broker
// refused an operation of the client's role, one line that says so and
// which credentials may; when it refused the client (credentials or
// certificate), one line that says what to check; otherwise err naming
// the broker.
func refusedError(url string, err error) error {
	if queue.IsRoleRefusal(err) {
		return fmt.Errorf("%w (the role of these credentials may not do this: submit takes a submitter's creds, work work.creds, dead retry|purge admin.creds; docs/distributed.md, Security model)", err)
	}
	if errors.Is(err, queue.ErrRefused) {
		return fmt.Errorf("%w (check --nats-creds and, for TLS, --nats-ca)", err)
	}
	return fmt.Errorf("broker %s: %w", url, err)
}
