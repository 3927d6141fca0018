package main

import (
	"context"
	"fmt"
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
}

// AddFlags adds the flags of broker's settings to f.
func (o *BrokerOptions) AddFlags(f *pflag.FlagSet) { addFlags(f, o.settings()) }

// clusterSettings declares the settings of a broker that is one node of
// a cluster into o.Cluster.
func (o *BrokerOptions) clusterSettings() []setting {
	return []setting{
		{Name: "node", Default: "", Help: "cluster: this broker's node name, unique in the cluster (the host's name, say)",
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
	return append(o.baseSettings(), o.clusterSettings()...)
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
		{Name: "monitor", Default: "", Help: "address (host:port) of the broker's HTTP monitoring endpoints (none by default)",
			Apply: func(v value) error { o.Monitor = v.String(); return nil }},
	}
}

// newBrokerCmd is `rawbatch broker`: an embedded NATS JetStream server for
// a studio that has none.
func newBrokerCmd() *cobra.Command {
	var opts BrokerOptions
	cmd := &cobra.Command{
		Use:   "broker [--store DIR] [--listen ADDR] [--monitor ADDR] [--node NAME --cluster ADDR --routes URL,...]",
		Short: "Run an embedded NATS JetStream broker for submit and work (multi-host mode)",
		Long: `Run an embedded NATS JetStream server that 'rawbatch submit' publishes jobs to
and 'rawbatch work' takes them from, until SIGINT or SIGTERM. Its store (the
queue, the dead letters, the job statuses and leases) is on local disk with an
fsync on every write, so an acknowledged job survives a crash of the broker;
keep it off the NAS. With an existing NATS server (2.9 or later, JetStream
enabled) or cluster, skip this command and point the others at it with --nats.
With --node, --cluster and --routes, three or more brokers (one per host, each
with its own store) form a cluster that keeps every job, dead letter, status
and lease on three of them: losing one loses nothing and stops nothing; give
the others all of the brokers' URLs in --nats. See docs/distributed.md.`,
		Example: `  rawbatch broker --store /var/lib/rawbatch/broker --listen 0.0.0.0:4222
  rawbatch broker --listen 0.0.0.0:4222 --node a --cluster 0.0.0.0:6222 --routes a:6222,b:6222,c:6222`,
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
	if err := os.MkdirAll(opts.Store, 0o777); err != nil {
		return fmt.Errorf("broker store %s: %w", opts.Store, err)
	}
	b, err := queue.StartBroker(queue.BrokerOptions{Store: opts.Store, Listen: opts.Listen, Monitor: opts.Monitor, Cluster: opts.Cluster})
	if err != nil {
		return fmt.Errorf("starting the broker (store %s): %w", opts.Store, err)
	}
	fmt.Fprintln(opts.Stdout, b.URL())
	logf(fmt.Sprintf("broker listening on %s, store %s", b.URL(), opts.Store))
	if c := opts.Cluster; c.Listen != "" {
		logf(fmt.Sprintf("cluster node %s: routes taken on %s, to %s", c.Name, c.Listen, strings.Join(c.Routes, ",")))
	}
	<-sig.Ctx.Done()
	logf("broker shutting down")
	b.Shutdown()
	return nil
}
