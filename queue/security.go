package queue

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/conf"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// applySecurity sets the server options opts of the broker o, listening
// on host, from o.Security: the authorisation (operator, accounts), TLS,
// and the refusal of an open broker (or open monitoring endpoints)
// beyond the loopback interface.
func applySecurity(opts *server.Options, o BrokerOptions, host string) error {
	sec := o.Security
	if sec.Auth == "" && !sec.Insecure && !loopback(host) {
		return fmt.Errorf("queue: broker listening on %s: %w: no credentials would be asked of the clients", host, ErrOpenListen)
	}
	if opts.HTTPHost != "" && !sec.Insecure && !loopback(opts.HTTPHost) {
		return fmt.Errorf("queue: broker monitoring on %s: %w: they ask no credentials", opts.HTTPHost, ErrOpenMonitor)
	}
	if sec.Auth != "" {
		if err := applyAuth(opts, sec.Auth); err != nil {
			return err
		}
		// A cluster's node starts its routes only once it takes clients,
		// and it creates the queue's streams only once the cluster has
		// formed: it takes clients at once (provisionAndListen).
		opts.DontListen = !o.Cluster.clustered()
	}
	if (sec.TLSCert == "") != (sec.TLSKey == "") {
		return fmt.Errorf("queue: broker TLS: want both a certificate and its key")
	}
	if sec.TLSCA != "" && sec.TLSCert == "" {
		return fmt.Errorf("queue: broker TLS: a client CA needs the broker's certificate and key")
	}
	if sec.TLSCert != "" {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{
			CertFile: sec.TLSCert, KeyFile: sec.TLSKey, CaFile: sec.TLSCA, Verify: sec.TLSCA != "",
		})
		if err != nil {
			return fmt.Errorf("queue: broker TLS (%s, %s): %w", sec.TLSCert, sec.TLSKey, err)
		}
		opts.TLSConfig = tc
		opts.TLS = true
		opts.TLSVerify = sec.TLSCA != ""
		opts.TLSTimeout = 5
	}
	return applyRouteSecurity(opts, o)
}

// applyRouteSecurity sets the security of a cluster node's routes (o.Cluster):
// with an authorisation, every route presents and asks the routes' user
// and password (its RouteSecret file, never a flag); with a TLS
// certificate, routes are TLS too (with TLSCA, the nodes' certificates
// must be signed by it, both ways). A route address beyond the loopback
// interface without an authorisation is refused unless Insecure.
func applyRouteSecurity(opts *server.Options, o BrokerOptions) error {
	if !o.Cluster.clustered() {
		return nil
	}
	sec := o.Security
	if sec.Auth == "" && !sec.Insecure && !loopback(opts.Cluster.Host) {
		return fmt.Errorf("queue: broker taking cluster routes on %s: %w: no credentials would be asked of the other nodes", opts.Cluster.Host, ErrOpenRoutes)
	}
	if sec.Auth != "" {
		secret, err := routeSecret(sec.Auth)
		if err != nil {
			return err
		}
		opts.Cluster.Username, opts.Cluster.Password = routeUser, secret
		for _, u := range opts.Routes {
			u.User = url.UserPassword(routeUser, secret)
		}
	}
	if sec.TLSCert != "" {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{
			CertFile: sec.TLSCert, KeyFile: sec.TLSKey, CaFile: sec.TLSCA, Verify: sec.TLSCA != "",
		})
		if err != nil {
			return fmt.Errorf("queue: broker route TLS (%s, %s): %w", sec.TLSCert, sec.TLSKey, err)
		}
		// A node dialling another checks its certificate against the
		// same CA it asks of the nodes dialling it.
		tc.RootCAs = tc.ClientCAs
		opts.Cluster.TLSConfig = tc
		opts.Cluster.TLSTimeout = 5
	}
	return nil
}

// applyAuth sets opts' operator, system account and account resolver
// from the authorisation in dir (its auth.conf, as nats-server reads it).
func applyAuth(opts *server.Options, dir string) error {
	ao, err := authOptions(dir)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, AuthConfig)
	m, err := conf.ParseFile(path)
	if err != nil {
		return fmt.Errorf("queue: authorisation %s: %w", path, err)
	}
	pre, _ := m["resolver_preload"].(map[string]any)
	if len(pre) == 0 {
		return fmt.Errorf("queue: authorisation %s: no accounts (resolver_preload)", path)
	}
	res := &server.MemAccResolver{}
	for k, v := range pre {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("queue: authorisation %s: account %s: not a JWT", path, k)
		}
		if err := res.Store(k, s); err != nil {
			return fmt.Errorf("queue: authorisation %s: account %s: %w", path, k, err)
		}
	}
	// Clients are taken once the queue's streams exist (provisionAndListen).
	opts.DontListen = true
	opts.MaxControlLine = maxControlLine
	opts.TrustedOperators = ao.TrustedOperators
	opts.SystemAccount = ao.SystemAccount
	opts.AccountResolver = res
	return nil
}

// provisionAndListen, for a broker b with an authorisation (o.Security.Auth),
// creates the queue's streams, consumers and buckets, then takes clients
// on host:port: a submitter connecting at once finds them (its role may
// not create the workers' consumers).
func (b *Broker) provisionAndListen(o BrokerOptions, host string, port int) error {
	if o.Security.Auth == "" {
		return nil
	}
	if !o.Cluster.clustered() {
		if err := provision(context.Background(), b, o.Security.Auth); err != nil {
			return err
		}
		b.srv.AcceptLoop(make(chan struct{}))
	}
	if b.srv.Addr() == nil {
		return fmt.Errorf("queue: broker: cannot listen on %s:%d", host, port)
	}
	if o.Cluster.clustered() {
		// A node of a cluster creates the queue's streams once the
		// cluster has formed (a quorum of its nodes up), which may wait
		// for nodes started after it: it takes clients meanwhile (the
		// workers create what is missing; a submitter connecting
		// before is refused creating the workers' consumers).
		ctx, cancel := context.WithCancel(context.Background())
		b.stopProvision = cancel
		go func() {
			for ctx.Err() == nil && provision(ctx, b, o.Security.Auth) != nil {
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
		}()
	}
	return nil
}

// provision creates the queue's streams, consumers and buckets on the
// broker b just started with the authorisation in dir (default timings:
// the first worker applies its own), through an in-process connection
// as a short-lived admin user: the submit role may not create the
// workers' consumers.
func provision(ctx context.Context, b *Broker, dir string) error {
	userJWT, seed, err := adminUser(dir)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// The in-process connection is never TLS: its URL's scheme says so.
	c, err := connect(ctx, Options{URL: "nats://in-process:4222", Name: "broker", inProcess: b.srv, userJWT: userJWT, userSeed: seed})
	if err != nil {
		return fmt.Errorf("queue: broker: creating the queue's streams: %w", err)
	}
	c.close()
	return nil
}

// securityOptions are the connection options of o's credentials and CA:
// the credentials file (or the embedded broker's own user), replies on
// the user's own inbox prefix (the only one its role may read), the CA
// that signed the broker's certificate.
func (c *Client) securityOptions(o Options) ([]nats.Option, error) {
	var opts []nats.Option
	switch {
	case o.inProcess != nil:
		seed := o.userSeed
		opts = append(opts, nats.InProcessServer(o.inProcess), nats.UserJWTAndSeed(o.userJWT, string(seed)))
	case o.Creds != "":
		id, err := credsUser(o.Creds)
		if err != nil {
			return nil, fmt.Errorf("queue: %w", err)
		}
		c.role = id.role
		if id.role == "submit" {
			c.owner, c.scope = id.submitter, id.submitter
		}
		opts = append(opts, nats.UserCredentials(o.Creds), nats.CustomInboxPrefix(inboxPrefix(id.pub)))
	}
	if o.CA != "" {
		opts = append(opts, nats.RootCAs(o.CA))
	}
	if o.Cert != "" {
		opts = append(opts, nats.ClientCert(o.Cert, o.Key))
	}
	return opts, nil
}

// refusalNote is a permission violation the broker reported, and when.
type refusalNote struct {
	err error
	at  time.Time
}

// refuse notes a permission violation the broker reported (err, from the
// connection's error handler): the calls in flight end at once (the
// broker does not answer a refused request), later ones are not
// affected.
func (c *Client) refuse(err error) {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return
	}
	e := fmt.Errorf("%w: %w", ErrRefused, err)
	c.refused.Store(&refusalNote{err: e, at: time.Now()})
	c.denyMu.Lock()
	defer c.denyMu.Unlock()
	if c.deny != nil {
		c.deny(e)
		c.denied, c.deny = context.WithCancelCause(context.Background())
	}
}

// MayQueueJobs returns an error wrapping ErrRefused when the client's
// credentials carry the work role, which may not queue jobs
// (rolePermissions), so that a submit stops before it plans (planning
// creates OUTDIR and its records); nil for the submit and admin roles and
// for credentials rawbatch did not write, whose permissions the broker
// alone knows.
func (c *Client) MayQueueJobs() error {
	if c.role != "work" {
		return nil
	}
	return fmt.Errorf("%w: %s is a worker's credentials, which may not queue jobs (submit takes a submitter's: submit.creds or submit-NAME.creds)", ErrRefused, c.o.Creds)
}

// MayRetryDead reports whether the client's role may retry and purge dead
// letters: the admin's, or credentials rawbatch did not write (or none),
// whose permissions the broker alone knows.
func (c *Client) MayRetryDead() bool { return c.role != "submit" && c.role != "work" }

// IsRoleRefusal reports whether err is the broker refusing an operation
// the client's role may not do (a NATS permission violation), as against
// refusing the client itself (bad credentials or certificate).
func IsRoleRefusal(err error) bool { return errors.Is(err, nats.ErrPermissionViolation) }

// refusal returns err, or, when err is a call ended by a permission
// violation (cancelled within the call timeout after the broker reported
// one), the violation (wrapping ErrRefused, naming the subject).
func (c *Client) refusal(err error) error {
	if err == nil || errors.Is(err, ErrRefused) || !errors.Is(err, context.Canceled) {
		return err
	}
	r := c.refused.Load()
	if r == nil || time.Since(r.at) > c.timeout+time.Second {
		return err
	}
	return fmt.Errorf("queue: %w", r.err)
}

// removeStaleDead removes the dead letter of job id, done by a worker,
// when there is one (an earlier submit's, queued again in a race with
// its dead-lettering). A worker whose credentials may not remove dead
// letters (the work role) leaves it, and the error says who may.
func (c *Client) removeStaleDead(ctx context.Context, owner, id string) error {
	if _, err := c.deadLetterAt(ctx, owner, id); errors.Is(err, ErrNotFound) {
		return nil
	}
	err := c.refusal(c.removeDead(ctx, owner, id))
	if errors.Is(err, ErrRefused) {
		return fmt.Errorf("the job's older dead letter stays (this worker's role may not remove dead letters: an admin runs 'rawbatch dead purge %s'): %w", id, err)
	}
	return err
}

// refused tells whether err, from a connect, says the broker refused the
// client: no or wrong credentials, or a failed TLS handshake or
// certificate check.
func refused(err error) bool {
	var certErr x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invErr x509.CertificateInvalidError
	var recErr tls.RecordHeaderError
	return errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) ||
		errors.Is(err, nats.ErrAuthRevoked) || errors.Is(err, nats.ErrSecureConnRequired) ||
		errors.Is(err, nats.ErrSecureConnWanted) || errors.As(err, &certErr) || errors.As(err, &hostErr) ||
		errors.As(err, &invErr) || errors.As(err, &recErr) || errors.Is(err, nats.ErrNkeysNotSupported) ||
		strings.Contains(err.Error(), "tls: ") || strings.Contains(err.Error(), "tls error")
}

// mayRemoveDead asks the broker to purge the dead letter of job id but
// keep its last message (one per subject: a purge that removes
// nothing), so that Retry of a client whose role may not remove dead
// letters is refused before it queues the job again.
func (c *Client) mayRemoveDead(ctx context.Context, owner, id string) error {
	octx, cancel := c.op(ctx)
	defer cancel()
	if err := c.deadS.Purge(octx, jetstream.WithPurgeSubject(deadSubject(owner, id)), jetstream.WithPurgeKeep(1)); err != nil {
		return c.refusal(fmt.Errorf("queue: removing the dead letter of job %s: %w", id, unavailable(err)))
	}
	return nil
}
