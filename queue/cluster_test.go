package queue

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/rawbatch/rawbatch/internal/testtool"
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

// TestClusterAuthTLS: three brokers with one authorisation and TLS (a
// CA of the test's: certificates asked of clients and of the other
// nodes) form a cluster over authenticated TLS routes: an admin's
// client (its certificate and credentials) creates the queue with three
// replicas. A node taking routes beyond the loopback interface without
// an authorisation refuses to start (ErrOpenRoutes).
func TestClusterAuthTLS(t *testing.T) {
	pki := t.TempDir()
	if err := testtool.TLSCerts(pki); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "auth")
	if _, err := InitAuth(dir, false); err != nil {
		t.Fatal(err)
	}
	sec := BrokerSecurity{Auth: dir, TLSCert: filepath.Join(pki, "server.pem"), TLSKey: filepath.Join(pki, "server-key.pem"),
		TLSCA: filepath.Join(pki, "ca.pem")}
	var caddrs, routes, urls []string
	for range 3 {
		a := freeAddr(t)
		caddrs = append(caddrs, a)
		routes = append(routes, a)
	}
	for i := range 3 {
		b, err := StartBroker(BrokerOptions{Store: t.TempDir(), Listen: "127.0.0.1:0", Security: sec,
			Cluster: ClusterOptions{Name: "n" + strconv.Itoa(i), Listen: caddrs[i], Routes: routes}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Shutdown)
		if b.srv.ClusterAddr() == nil || !strings.HasPrefix(b.URL(), "tls://") {
			t.Fatalf("broker %d: route address %v, URL %s", i, b.srv.ClusterAddr(), b.URL())
		}
		urls = append(urls, b.URL())
	}
	o := roleOptions(strings.Join(urls, ","), dir, "admin")
	o.CA, o.Cert, o.Key = filepath.Join(pki, "ca.pem"), filepath.Join(pki, "client.pem"), filepath.Join(pki, "client-key.pem")
	o.Retry = true // until the cluster has elected its meta leader
	// Its timings, not those of the nodes creating the queue meanwhile.
	o.SetTimings = true
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := Connect(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := c.js.Stream(ctx, jobsStream)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.CachedInfo().Config.Replicas; got != 3 {
		t.Errorf("jobs stream: %d replicas, want 3", got)
	}
	// A route port speaks TLS (a node's certificate asked), then asks
	// credentials of whoever dials it.
	pool := x509.NewCertPool()
	if pem, err := os.ReadFile(filepath.Join(pki, "ca.pem")); err != nil || !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("ca.pem: %v", err)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(pki, "server.pem"), filepath.Join(pki, "server-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", caddrs[0],
		&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("TLS to a route port: %v", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	info, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.Contains(info, `"auth_required":true`) {
		t.Errorf("route INFO %q (%v): want credentials required", info, err)
	}

	_, err = StartBroker(BrokerOptions{Store: t.TempDir(), Listen: "127.0.0.1:0",
		Cluster: ClusterOptions{Name: "open", Listen: "0.0.0.0:0", Routes: routes}})
	if !errors.Is(err, ErrOpenRoutes) {
		t.Errorf("routes on 0.0.0.0 without an authorisation: %v, want ErrOpenRoutes", err)
	}
}
