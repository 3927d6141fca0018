package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rawbatch/rawbatch/queue"
)

// BrokerOptions are the options of `rawbatch broker`.
type BrokerOptions struct {
	GlobalOptions
	// Store is the broker's storage directory (local disk); Listen the
	// client address (host:port); Monitor the HTTP monitoring address
	// ("": none).
	Store, Listen, Monitor string
	// Cluster makes the broker one node of a cluster of brokers.
	Cluster queue.ClusterOptions
	// Security is who may connect and how (brokerSecurity's settings).
	Security BrokerSecurityOptions
}

// BrokerSecurityOptions are broker's authorisation and TLS settings.
type BrokerSecurityOptions struct {
	// Auth is the authorisation directory to enforce; InitAuth one to
	// write (then exit); Force lets InitAuth replace an existing one.
	Auth, InitAuth string
	Force          bool
	// AddSubmitter names a submitter whose credentials to add to Auth
	// (then exit).
	AddSubmitter string
	// Insecure accepts an open broker beyond the loopback interface.
	Insecure bool
	// TLSCert, TLSKey and TLSCA: queue.BrokerSecurity's.
	TLSCert, TLSKey, TLSCA string
}

// settings declares broker's authorisation and TLS settings into o, once.
func (o *BrokerSecurityOptions) settings() []setting {
	path := func(dst *string) func(value) error {
		return func(v value) (err error) { *dst, err = pathSetting(v); return err }
	}
	return []setting{
		{Name: "auth", Default: "", Help: "authorisation directory written by --init-auth: only clients with its credentials connect, each allowed its role's operations",
			Apply: path(&o.Auth)},
		{Name: "init-auth", Default: "", Help: "write a new authorisation into DIR (0700): auth.conf for the broker and submit.creds, work.creds, admin.creds for the clients (0600), then exit",
			Apply: path(&o.InitAuth)},
		{Name: "add-submitter", Default: "", Help: "with --auth DIR: write DIR/submit-NAME.creds for a new submitter NAME (a-z, 0-9, -, _), who may queue jobs and read the statuses and dead letters of its own jobs only, then exit",
			Apply: func(v value) error { o.AddSubmitter = v.String(); return nil }},
		{Name: "replace-auth", Default: false, Help: "with --init-auth: replace an existing authorisation (every credentials file issued from it stops working); with --add-submitter: replace that submitter's credentials",
			Apply: boolInto(&o.Force)},
		{Name: "insecure", Default: false, Help: "let the broker listen beyond this host without --auth: anyone who reaches the port may queue, take and purge jobs (logged at every start)",
			Apply: boolInto(&o.Insecure)},
		{Name: "tls-cert", Default: "", Help: "PEM file of the broker's TLS certificate: clients must connect with TLS (tls:// URLs); with --tls-key",
			Apply: path(&o.TLSCert)},
		{Name: "tls-key", Default: "", Help: "PEM file of the key of --tls-cert",
			Apply: path(&o.TLSKey)},
		{Name: "tls-ca", Default: "", Help: "PEM file of the CA whose certificates clients must present (--nats-cert) to connect",
			Apply: path(&o.TLSCA)},
	}
}

// AddFlags adds the flags of broker's settings to f. --name is taken for
// --node on the command line (NATS's own word for a server's name); its
// config key and variable stay node and RAWBATCH_NODE, since name is
// convert's output-name template in a config file the commands share.
func (o *BrokerOptions) AddFlags(f *pflag.FlagSet) {
	addFlags(f, o.settings())
	f.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if name == "name" {
			name = "node"
		}
		return pflag.NormalizedName(name)
	})
}

// clusterSettings declares the settings of a broker that is one node of
// a cluster into o.Cluster.
func (o *BrokerOptions) clusterSettings() []setting {
	return []setting{
		{Name: "node", Default: "", Help: "cluster: this broker's node name, unique in the cluster (the host's name, say); --name is the same",
			Apply: func(v value) error { o.Cluster.Name = v.String(); return nil }},
		{Name: "cluster", Default: "", Help: "cluster: address (host:port) this broker takes the other brokers' routes on (0.0.0.0:6222); none: a single broker",
			Apply: func(v value) error { o.Cluster.Listen = v.String(); return nil }},
		{Name: "routes", Default: "", Help: "cluster: the route URLs of the other brokers (nats-route://host:6222 or host:6222), comma-separated; this one's own may be among them",
			Apply: func(v value) error {
				o.Cluster.Routes = nil
				for _, r := range strings.Split(v.String(), ",") {
					if r = strings.TrimSpace(r); r != "" {
						o.Cluster.Routes = append(o.Cluster.Routes, r)
					}
				}
				return nil
			}},
	}
}

// settings declares broker's settings into o, once.
func (o *BrokerOptions) settings() []setting {
	return append(append(o.baseSettings(), o.clusterSettings()...), o.Security.settings()...)
}

// baseSettings declares the settings of any broker into o.
func (o *BrokerOptions) baseSettings() []setting {
	return []setting{
		{Name: "store", Default: "", Help: "storage directory of the broker's streams and buckets, on local disk (never on the NAS); default $XDG_STATE_HOME/rawbatch/broker (~/.local/state/rawbatch/broker)",
			Apply: func(v value) (err error) {
				if o.Store, err = pathSetting(v); err != nil || o.Store != "" {
					return err
				}
				dir := os.Getenv("XDG_STATE_HOME")
				if dir == "" {
					home, err := os.UserHomeDir()
					if err != nil {
						return fmt.Errorf("--store: no home directory for the default (%v); give --store DIR", err)
					}
					dir = filepath.Join(home, ".local", "state")
				}
				o.Store = filepath.Join(dir, "rawbatch", "broker")
				return nil
			}},
		{Name: "listen", Default: "127.0.0.1:4222", Help: "address (host:port) the broker takes clients on; 0.0.0.0:4222 for the other hosts",
			Apply: func(v value) error { o.Listen = v.String(); return nil }},
		{Name: "monitor", Default: "", Help: "address (host:port) of the broker's HTTP monitoring endpoints (none by default); they ask no credentials: beyond 127.0.0.1 only with --insecure",
			Apply: func(v value) error { o.Monitor = v.String(); return nil }},
	}
}

// newBrokerCmd is `rawbatch broker`: an embedded NATS JetStream server for
// a studio that has none.
func newBrokerCmd() *cobra.Command {
	var opts BrokerOptions
	cmd := &cobra.Command{
		Use:   "broker [--store DIR] [--listen ADDR] [--monitor ADDR] [--auth DIR] [--tls-cert FILE --tls-key FILE] [--node NAME --cluster ADDR --routes URL,...]",
		Short: "Run an embedded NATS JetStream broker for submit and work (multi-host mode)",
		Long: `Run an embedded NATS JetStream server that 'rawbatch submit' publishes jobs to
and 'rawbatch work' takes them from, until SIGINT or SIGTERM. Its store (the
queue, the dead letters, the job statuses and leases) is on local disk with an
fsync on every write, so an acknowledged job survives a crash of the broker;
keep it off the NAS. With an existing NATS server (2.9 or later, JetStream
enabled) or cluster, skip this command and point the others at it with --nats.
Listening beyond this host needs --auth DIR (credentials per role, written by
--init-auth DIR) or an explicit --insecure; --add-submitter NAME adds a
submitter's credentials (submit-NAME.creds), confined to its own jobs'
statuses and dead letters. With --node, --cluster and --routes, three or more
brokers (one per host, each with its own store) form a cluster that keeps
every job, dead letter, status and lease on three of them: losing one loses
nothing and stops nothing; give the clients all of the brokers' URLs in
--nats. With --auth the routes are authenticated (DIR/route.pass, the same
directory on every broker). See docs/distributed.md.`,
		Example: `  rawbatch broker --init-auth /etc/rawbatch/auth
  rawbatch broker --auth /etc/rawbatch/auth --add-submitter alice
  rawbatch broker --store /var/lib/rawbatch/broker --listen 0.0.0.0:4222 --auth /etc/rawbatch/auth \
    --tls-cert /etc/rawbatch/broker.pem --tls-key /etc/rawbatch/broker-key.pem
  rawbatch broker --listen 0.0.0.0:4222 --auth /etc/rawbatch/auth --node a --cluster 0.0.0.0:6222 --routes a:6222,b:6222,c:6222`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.GlobalOptions = globalOptions(cmd)
			if _, err := resolve(cmd, opts.settings(), false); err != nil {
				return err
			}
			return runBroker(cmd.Context(), opts, args)
		},
	}
	opts.AddFlags(cmd.Flags())
	return cmd
}

// runBroker starts the broker, prints its URL and serves until a signal
// (or ctx) ends it, then shuts it down (flushing its store).
func runBroker(ctx context.Context, opts BrokerOptions, _ []string) error {
	logf := lineLogger(opts.Stderr)
	sig := watchSignals(ctx, func(s os.Signal) string { return fmt.Sprintf("%s: shutting the broker down", s) }, "already shutting down", logf)
	defer sig.stop()
	sec := opts.Security
	if sec.InitAuth != "" {
		return initAuth(opts, sec.InitAuth, sec.Force)
	}
	if sec.AddSubmitter != "" {
		return addSubmitter(opts, sec.Auth, sec.AddSubmitter, sec.Force)
	}
	if err := os.MkdirAll(opts.Store, 0o777); err != nil {
		return fmt.Errorf("broker store %s: %w", opts.Store, err)
	}
	b, err := queue.StartBroker(queue.BrokerOptions{Store: opts.Store, Listen: opts.Listen, Monitor: opts.Monitor,
		Security: queue.BrokerSecurity{Auth: sec.Auth, Insecure: sec.Insecure, TLSCert: sec.TLSCert, TLSKey: sec.TLSKey, TLSCA: sec.TLSCA}, Cluster: opts.Cluster})
	if errors.Is(err, queue.ErrOpenRoutes) {
		return fmt.Errorf("not taking open cluster routes on %s: give --auth DIR (the same directory on every node: its %s is the routes' password) so that only the other nodes join, or --insecure to accept any server that reaches the port", opts.Cluster.Listen, queue.RouteSecret)
	}
	if errors.Is(err, queue.ErrOpenListen) {
		return fmt.Errorf("not starting an open broker on %s: give --auth DIR (made by 'rawbatch broker --init-auth DIR') so that only clients with its credentials connect, or --insecure to accept anyone who reaches the port", opts.Listen)
	}
	if errors.Is(err, queue.ErrOpenMonitor) {
		return fmt.Errorf("not serving the broker's monitoring endpoints on %s: they ask no credentials; keep --monitor on 127.0.0.1 (or give --insecure)", opts.Monitor)
	}
	if err != nil {
		return fmt.Errorf("starting the broker (store %s): %w", opts.Store, err)
	}
	fmt.Fprintln(opts.Stdout, b.URL())
	logf(fmt.Sprintf("broker listening on %s, store %s", b.URL(), opts.Store))
	logf(brokerSecurityLine(sec))
	if c := opts.Cluster; c.Listen != "" {
		logf(fmt.Sprintf("cluster node %s: routes taken on %s, to %s", c.Name, c.Listen, strings.Join(c.Routes, ",")))
	}
	<-sig.Ctx.Done()
	logf("broker shutting down")
	b.Shutdown()
	return nil
}

// brokerSecurityLine is the line broker logs at every start saying who
// may connect and how.
func brokerSecurityLine(sec BrokerSecurityOptions) string {
	var who, how string
	switch {
	case sec.Auth != "":
		who = "clients with credentials from " + sec.Auth + ", each to its role's operations"
	case sec.Insecure:
		who = "INSECURE (--insecure): anyone who reaches the port may queue, take, retry and purge jobs and read every path"
	default:
		who = "anyone on this host (loopback only, no credentials)"
	}
	switch {
	case sec.TLSCA != "":
		how = "TLS, client certificates required"
	case sec.TLSCert != "":
		how = "TLS"
	default:
		how = "clear text"
	}
	return "broker security: " + who + "; " + how
}

// initAuth writes a new authorisation into dir and lists its files.
func initAuth(opts BrokerOptions, dir string, force bool) error {
	written, err := queue.InitAuth(dir, force)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w (give --replace-auth to replace it: every credentials file issued from it stops working)", err)
	}
	if err != nil {
		return err
	}
	for _, p := range written {
		fmt.Fprintln(opts.Stdout, p)
	}
	fmt.Fprintf(opts.Stderr, "authorisation written to %s: run 'rawbatch broker --auth %s'; copy submit.creds to the submitting hosts (or one 'rawbatch broker --auth %s --add-submitter NAME' per submitter), work.creds to the workers, keep admin.creds, route.pass and the .nk files off the others (docs/distributed.md)\n", dir, dir, dir)
	return nil
}

// addSubmitter writes the credentials of a new submitter name into the
// authorisation dir and prints their path.
func addSubmitter(opts BrokerOptions, dir, name string, force bool) error {
	if dir == "" {
		return errors.New("--add-submitter needs --auth DIR: the authorisation whose account signs the new credentials")
	}
	p, err := queue.AddSubmitter(dir, name, force)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w (give --replace-auth to replace them: the old file stops being this submitter's only copy, both keep working)", err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(opts.Stdout, p)
	fmt.Fprintf(opts.Stderr, "submitter %s: copy %s to its host; it queues jobs and reads their statuses and dead letters, and no other submitter's; no broker restart needed\n", name, p)
	return nil
}
