package queue

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// TestClusterOptions: a cluster node needs a name, a route address and
// the routes of at least two other nodes; the zero value is a single
// broker.
func TestClusterOptions(t *testing.T) {
	routes := []string{"127.0.0.1:6222", "nats-route://127.0.0.1:6223", "127.0.0.1:6224"}
	for _, c := range []struct {
		o    ClusterOptions
		want string // in the error; "": none
	}{
		{ClusterOptions{}, ""},
		{ClusterOptions{Name: "a", Listen: "127.0.0.1:6222", Routes: routes}, ""},
		{ClusterOptions{Listen: "127.0.0.1:6222", Routes: routes}, "no node name"},
		{ClusterOptions{Name: "a.b", Listen: "127.0.0.1:6222", Routes: routes}, "no spaces, dots"},
		{ClusterOptions{Name: "a", Routes: routes}, "no cluster address"},
		{ClusterOptions{Name: "a", Listen: "127.0.0.1:6222", Routes: routes[:1]}, "1 route(s)"},
		{ClusterOptions{Name: "a", Listen: "127.0.0.1:x", Routes: routes}, "not a port number"},
	} {
		var opts server.Options
		err := applyCluster(&opts, c.o)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c.o, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: error %v, want one saying %q", c.o, err, c.want)
		case c.want == "" && c.o.Name != "":
			if opts.ServerName != "a" || opts.Cluster.Name != defaultClusterName || opts.Cluster.Port != 6222 || len(opts.Routes) != 3 ||
				opts.Routes[0].String() != "nats-route://127.0.0.1:6222" {
				t.Errorf("%+v: server options %q %q %d %v", c.o, opts.ServerName, opts.Cluster.Name, opts.Cluster.Port, opts.Routes)
			}
		}
	}
}

// startCluster starts n embedded brokers forming a cluster, each with its
// store, and returns them and their client URLs, comma-separated.
func startCluster(t *testing.T, n int) ([]*Broker, string) {
	t.Helper()
	var caddrs, routes []string
	for range n {
		a := freeAddr(t)
		caddrs = append(caddrs, a)
		routes = append(routes, "nats-route://"+a)
	}
	bs := make([]*Broker, n)
	var urls []string
	for i := range n {
		b, err := StartBroker(BrokerOptions{Store: t.TempDir(), Listen: "127.0.0.1:0",
			Cluster: ClusterOptions{Name: "n" + strconv.Itoa(i), Listen: caddrs[i], Routes: routes}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Shutdown)
		bs[i] = b
		urls = append(urls, b.URL())
	}
	return bs, strings.Join(urls, ",")
}

// TestClusterReplicas: on a cluster of three brokers (each fsyncing every
// write) the queue's streams and buckets have three replicas; on a
// single broker one.
func TestClusterReplicas(t *testing.T) {
	bs, urls := startCluster(t, 3)
	for _, b := range bs {
		if !b.srv.JetStreamIsClustered() || !b.srv.JetStreamConfig().SyncAlways {
			t.Errorf("broker %s: clustered %v, sync always %v", b.srv.Name(), b.srv.JetStreamIsClustered(), b.srv.JetStreamConfig().SyncAlways)
		}
	}
	o := testOptions(urls)
	o.Retry = true // until the cluster has elected its meta leader
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := Connect(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	single, _ := startTestBroker(t)
	c1 := connectT(t, testOptions(single.URL()))
	for _, s := range []string{jobsStream, deadStream, "KV_" + leasesBucket, "KV_" + statusBucket, "KV_" + workersBucket} {
		for _, cc := range []struct {
			c    *Client
			want int
		}{{c, 3}, {c1, 1}} {
			st, err := cc.c.js.Stream(ctx, s)
			if err != nil {
				t.Fatalf("stream %s: %v", s, err)
			}
			if got := st.CachedInfo().Config.Replicas; got != cc.want {
				t.Errorf("stream %s on %s: %d replicas, want %d", s, cc.c.nc.ConnectedUrlRedacted(), got, cc.want)
			}
		}
	}
}

// TestLeaseRidesOutOutage: a lease renewal asked while the broker does
// not answer (restarted here; a cluster electing the bucket's leader)
// asks again until it answers, within the lease's deadline, instead of
// failing (which fences the conversion before its commit).
func TestLeaseRidesOutOutage(t *testing.T) {
	store := t.TempDir()
	b, err := StartBroker(BrokerOptions{Store: store, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Shutdown() })
	addr := strings.TrimPrefix(b.URL(), "nats://")
	o := testOptions(b.URL())
	o.AckWait, o.LeaseTTL, o.Beat = 30*time.Second, 20*time.Second, time.Second
	c := connectT(t, o)
	j := testJob("lease.dng", 1<<20)
	val, _ := json.Marshal(map[string]string{"worker": "test"})
	rev, err := c.leases.Create(context.Background(), j.ID, val)
	if err != nil {
		t.Fatal(err)
	}
	l := &lease{c: c, id: j.ID, val: val, rev: rev, ch: make(chan struct{}), ok: time.Now()}
	l.dead = time.AfterFunc(o.LeaseTTL-o.Beat, func() {})
	defer l.dead.Stop()
	b.Shutdown()
	done := make(chan error, 1)
	go func() { done <- l.renew() }()
	select {
	case err := <-done:
		t.Fatalf("renew with the broker away returned at once: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	if b, err = StartBroker(BrokerOptions{Store: store, Listen: addr}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("renew after the broker's restart: %v", err)
		}
	case <-time.After(o.LeaseTTL):
		t.Fatal("renew did not return within the lease TTL")
	}
	if l.rev == rev || l.isLost() {
		t.Errorf("lease after renew: revision %d (was %d), lost %v", l.rev, rev, l.isLost())
	}
	// A lease taken over is lost at once, the broker answering.
	if _, err := c.leases.Put(context.Background(), j.ID, []byte("other")); err != nil {
		t.Fatal(err)
	}
	if err := l.renew(); !errors.Is(err, ErrFenced) || !l.isLost() {
		t.Errorf("renew of a lease taken over: %v, lost %v", err, l.isLost())
	}
}
