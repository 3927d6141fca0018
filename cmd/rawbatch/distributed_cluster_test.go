package main

// The broker cluster's end-to-end test: three `rawbatch broker` processes
// forming a cluster, two workers, a batch under submit --wait, and one
// broker killed with SIGKILL at a third of the batch, then restarted.

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/rawbatch/rawbatch/queue"
)

// Timings of the cluster test: the lease (10 s, fenced after 9 s without
// a renewal) rides out a leader election (the embedded server's election
// timeout is 4 to 9 s); the ack wait bounds the redelivery of a message
// lost with a killed node.
var clusterTimings = []string{"--ack-wait", "12s", "--lease-ttl", "10s", "--beat", "1s"}

// brokerNode is one `rawbatch broker` of a test's cluster of brokers.
type brokerNode struct {
	name  string
	port  int // client port
	cport int // route port
	store string
	runs  int
	// auth is the node's authorisation directory when not the
	// cluster's (a node that does not belong).
	auth   string
	cmd    *exec.Cmd
	exited chan struct{}
}

// brokerCluster is a test's cluster of brokers, on 127.0.0.1.
type brokerCluster struct {
	c     *cluster
	mu    sync.Mutex
	nodes []*brokerNode
	// auth, when set, is the authorisation directory every node
	// enforces (--auth) and whose credentials the clients present.
	auth string
}

// newBrokerCluster makes n nodes (not started) and points every process
// of c (its environment: RAWBATCH_NATS) at all of their URLs.
func newBrokerCluster(c *cluster, n int) *brokerCluster {
	bc := &brokerCluster{c: c}
	var urls []string
	for i := range n {
		nd := &brokerNode{name: fmt.Sprintf("n%d", i), port: freePort(c.t), cport: freePort(c.t),
			store: filepath.Join(c.dir, fmt.Sprintf("store-n%d", i))}
		bc.nodes = append(bc.nodes, nd)
		urls = append(urls, "nats://127.0.0.1:"+strconv.Itoa(nd.port))
	}
	c.url = strings.Join(urls, ",")
	env := c.env[:0:0]
	for _, e := range c.env {
		if !strings.HasPrefix(e, "RAWBATCH_NATS=") && !strings.HasPrefix(e, "RAWBATCH_ACK_WAIT=") &&
			!strings.HasPrefix(e, "RAWBATCH_LEASE_TTL=") && !strings.HasPrefix(e, "RAWBATCH_BEAT=") {
			env = append(env, e)
		}
	}
	c.env = append(env, "RAWBATCH_NATS="+c.url, "RAWBATCH_ACK_WAIT=12s", "RAWBATCH_LEASE_TTL=10s", "RAWBATCH_BEAT=1s")
	c.t.Cleanup(func() {
		c.stop() // the workers first, while they can reach the brokers
		bc.stop()
	})
	return bc
}

// routes is every node's route URL (each node is given all of them, its
// own among them).
func (bc *brokerCluster) routes() string {
	var r []string
	for _, nd := range bc.nodes {
		r = append(r, "nats-route://127.0.0.1:"+strconv.Itoa(nd.cport))
	}
	return strings.Join(r, ",")
}

// start starts node i (on its own store, the same after a restart) and
// waits until its client port accepts connections.
func (bc *brokerCluster) start(i int) {
	c := bc.c
	c.t.Helper()
	nd := bc.nodes[i]
	bc.mu.Lock()
	nd.runs++
	log := c.logFile(fmt.Sprintf("broker-%s.%d", nd.name, nd.runs))
	args := []string{"broker", "--store", nd.store, "--listen", "127.0.0.1:" + strconv.Itoa(nd.port),
		"--node", nd.name, "--cluster", "127.0.0.1:" + strconv.Itoa(nd.cport), "--routes", bc.routes()}
	if auth := cmp.Or(nd.auth, bc.auth); auth != "" {
		args = append(args, "--auth", auth)
	}
	cmd := c.command(nil, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		bc.mu.Unlock()
		c.t.Fatalf("rawbatch broker: %v", err)
	}
	exited := make(chan struct{})
	nd.cmd, nd.exited = cmd, exited
	bc.mu.Unlock()
	go func() { cmd.Wait(); log.Close(); close(exited) }()
	addr := "127.0.0.1:" + strconv.Itoa(nd.port)
	c.waitFor("broker "+nd.name+" listening on "+addr, func() bool {
		select {
		case <-exited:
			c.t.Fatalf("broker %s exited: %v", nd.name, cmd.ProcessState)
		default:
		}
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return false
		}
		conn.Close()
		return true
	})
}

// kill sends SIGKILL to node name and waits for its end.
func (bc *brokerCluster) kill(name string) {
	bc.c.t.Helper()
	for _, nd := range bc.nodes {
		if nd.name != name {
			continue
		}
		bc.mu.Lock()
		cmd, exited := nd.cmd, nd.exited
		bc.mu.Unlock()
		cmd.Process.Kill()
		select {
		case <-exited:
		case <-time.After(distDeadline):
			bc.c.t.Fatalf("broker %s did not end after SIGKILL", name)
		}
		return
	}
	bc.c.t.Fatalf("no broker node %q", name)
}

// index returns the index of node name.
func (bc *brokerCluster) index(name string) int {
	for i, nd := range bc.nodes {
		if nd.name == name {
			return i
		}
	}
	bc.c.t.Fatalf("no broker node %q", name)
	return -1
}

// stop ends every node with SIGTERM (SIGKILL after 15 s).
func (bc *brokerCluster) stop() {
	bc.mu.Lock()
	nodes := bc.nodes
	bc.mu.Unlock()
	for _, nd := range nodes {
		if nd.cmd == nil {
			continue
		}
		nd.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-nd.exited:
		case <-time.After(15 * time.Second):
			nd.cmd.Process.Kill()
			<-nd.exited
		}
	}
}

// connect connects the test's queue client (c.client's) to the cluster,
// trying again while the cluster forms (its JetStream meta leader
// elected), and returns a JetStream context on a connection of its own
// for the streams' cluster info.
func (bc *brokerCluster) connect() jetstream.JetStream {
	c := bc.c
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), distDeadline)
	defer cancel()
	o := queue.Options{URL: c.url, AckWait: 12 * time.Second, LeaseTTL: 10 * time.Second,
		Beat: time.Second, MaxDeliver: 5, Retry: true, Name: "test " + c.t.Name(), SetTimings: true}
	nopts := []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(200 * time.Millisecond)}
	if bc.auth != "" {
		o.Creds = filepath.Join(bc.auth, "admin.creds")
		nopts = append(nopts, nats.UserCredentials(o.Creds))
	}
	qc, err := queue.Connect(ctx, o)
	if err != nil {
		c.t.Fatalf("queue.Connect %s: %v", c.url, err)
	}
	c.mu.Lock()
	c.qc = qc
	c.mu.Unlock()
	c.t.Cleanup(qc.Close)
	nc, err := nats.Connect(c.url, nopts...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		c.t.Fatal(err)
	}
	return js
}

// clusterStreams are the queue's streams on the broker: the jobs, the
// dead letters and the key-value buckets' streams.
var clusterStreams = []string{"RAWBATCH_JOBS", "RAWBATCH_DEAD", "KV_rawbatch_leases", "KV_rawbatch_status", "KV_rawbatch_workers"}

// streamLeader returns the name of the node that leads stream name, once
// it has one, after checking that the stream has three replicas.
func streamLeader(c *cluster, js jetstream.JetStream, name string) string {
	c.t.Helper()
	var leader string
	c.waitFor("a leader of stream "+name, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s, err := js.Stream(ctx, name)
		if err != nil {
			return false
		}
		si := s.CachedInfo()
		if si.Config.Replicas != 3 {
			c.t.Fatalf("stream %s has %d replicas, want 3 on a cluster of three brokers", name, si.Config.Replicas)
		}
		if si.Cluster == nil || si.Cluster.Leader == "" {
			return false
		}
		leader = si.Cluster.Leader
		return true
	})
	return leader
}

// recordCount is the number of inputs of names with a record in OUTDIR.
func recordCount(c *cluster, names []string) int {
	recs := c.records()
	n := 0
	for _, name := range names {
		if len(recs[name]) > 0 {
			n++
		}
	}
	return n
}

// TestDistributedBrokerCluster: three brokers in a cluster, two workers,
// 40 files under submit --wait; at a third of the batch (records counted)
// one broker is killed with SIGKILL: a follower of the jobs stream, or
// its leader (from the stream's cluster info). The batch goes on with two
// brokers (the restart waits for two thirds of it); the killed one is
// restarted on its store. Every file is committed exactly once, submit
// --wait exits 0, the queue ends empty, and every stream and bucket of
// the queue has three replicas.
func TestDistributedBrokerCluster(t *testing.T) {
	skipShortDist(t)
	for _, victim := range []string{"follower", "leader"} {
		t.Run(victim, func(t *testing.T) {
			t.Parallel() // each waits mostly on elections: together they take the time of one
			c := newCluster(t)
			bc := newBrokerCluster(c, 3)
			for i := range bc.nodes {
				bc.start(i)
			}
			t0 := time.Now()
			js := bc.connect()
			for _, s := range clusterStreams {
				streamLeader(c, js, s)
			}
			t.Logf("cluster formed, queue created: %v", time.Since(t0).Round(10*time.Millisecond))
			for range 2 {
				c.startWorker(false, nil, clusterTimings...)
			}
			c.waitWorkers(2)
			t.Logf("workers registered: %v", time.Since(t0).Round(10*time.Millisecond))
			const n = 40
			names := c.synthInputs(n)
			wait, _ := c.background("submit", c.in, "-o", c.out, "--wait")
			c.waitFor("a third of the batch committed", func() bool { return recordCount(c, names) >= n/3 })
			t.Logf("a third committed: %v", time.Since(t0).Round(10*time.Millisecond))
			leader := streamLeader(c, js, "RAWBATCH_JOBS")
			kill := leader
			if victim == "follower" {
				kill = bc.nodes[(bc.index(leader)+1)%len(bc.nodes)].name
			}
			atKill := recordCount(c, names)
			bc.kill(kill)
			killed := time.Now()
			t.Logf("killed broker %s (jobs stream leader %s) at %d of %d files", kill, leader, atKill, n)
			c.waitFor("two thirds of the batch committed with a broker down", func() bool { return recordCount(c, names) >= 2*n/3 })
			t.Logf("two thirds committed %v after the kill", time.Since(killed).Round(10*time.Millisecond))
			bc.start(bc.index(kill))
			code, out := wait()
			if code != 0 {
				t.Fatalf("submit --wait exited %d:\n%s", code, out)
			}
			if q, _, _ := submitCounts(t, out); q != n {
				t.Errorf("submit queued %d, want %d", q, n)
			}
			c.waitSettled(names)
			dead, _ := c.checkInvariant(names)
			if len(dead) != 0 {
				t.Errorf("dead letters: %v", dead)
			}
			c.waitFor("the queue empty", func() bool {
				qi, err := c.tryInfo()
				return err == nil && depth(qi) == 0 && qi.InFlight == 0
			})
			if newLeader := streamLeader(c, js, "RAWBATCH_JOBS"); victim == "leader" && newLeader == kill {
				t.Logf("the restarted %s leads the jobs stream again", kill)
			}
			t.Logf("batch done %v after the kill", time.Since(killed).Round(10*time.Millisecond))
			logs := c.workerLogs(nil)
			t.Logf("worker log lines: %d fenced, %d leases lost, %d acks failed, %d redeliveries", len(lines(logs, ": fenced")),
				len(lines(logs, "lease lost")), len(lines(logs, "ack failed")), len(lines(logs, ": attempt 2: taken")))
		})
	}
}

// TestDistributedBrokerClusterAuth: three brokers with one authorisation
// (--auth) form a cluster, their routes authenticated with its routes'
// password, and run a small batch with the roles' credentials (a worker
// with work.creds, submit --wait with submit.creds). A node with another
// authorisation (another routes' password) does not join: the cluster's
// clients do not learn its URL, while a node with the cluster's
// authorisation started after it does join. A node whose authorisation
// has no routes' password does not start.
func TestDistributedBrokerClusterAuth(t *testing.T) {
	skipShortDist(t)
	c := newCluster(t)
	auth, other := filepath.Join(c.dir, "auth"), filepath.Join(c.dir, "other-auth")
	for _, d := range []string{auth, other} {
		if _, err := queue.InitAuth(d, false); err != nil {
			t.Fatal(err)
		}
	}
	bc := newBrokerCluster(c, 3)
	bc.auth = auth
	// The harness's own commands (dead list, status) as an admin; the
	// worker and submit below with their roles' credentials.
	c.env = append(c.env, "RAWBATCH_NATS_CREDS="+filepath.Join(auth, "admin.creds"))
	for i := range bc.nodes {
		bc.start(i)
	}
	t0 := time.Now()
	js := bc.connect()
	for _, s := range clusterStreams {
		streamLeader(c, js, s)
	}
	t.Logf("cluster formed, queue created: %v", time.Since(t0).Round(10*time.Millisecond))
	c.startWorker(false, []string{"RAWBATCH_NATS_CREDS=" + filepath.Join(auth, "work.creds")}, clusterTimings...)
	c.waitWorkers(1)
	const n = 4
	names := c.synthInputs(n)
	code, out, errOut := c.run([]string{"RAWBATCH_NATS_CREDS=" + filepath.Join(auth, "submit.creds")}, "submit", c.in, "-o", c.out, "--wait")
	if code != 0 {
		t.Fatalf("submit --wait exited %d:\n%s%s", code, out, errOut)
	}
	c.waitSettled(names)
	if dead, _ := c.checkInvariant(names); len(dead) != 0 {
		t.Errorf("dead letters: %v", dead)
	}
	t.Logf("batch of %d done: %v", n, time.Since(t0).Round(10*time.Millisecond))

	// The clients learn every node's URL from the cluster's INFO.
	nc, err := nats.Connect(c.url, nats.UserCredentials(filepath.Join(auth, "admin.creds")))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	known := func(port int) bool {
		for _, u := range append(nc.DiscoveredServers(), nc.Servers()...) {
			if strings.HasSuffix(u, ":"+strconv.Itoa(port)) {
				return true
			}
		}
		return false
	}
	addNode := func(name, dir string) *brokerNode {
		nd := &brokerNode{name: name, port: freePort(t), cport: freePort(t), auth: dir,
			store: filepath.Join(c.dir, "store-"+name)}
		bc.mu.Lock()
		bc.nodes = append(bc.nodes, nd)
		bc.mu.Unlock()
		bc.start(len(bc.nodes) - 1)
		return nd
	}
	// The intruder tries its routes as it starts, before the member
	// does: once the member is known, the intruder's tries are over.
	intruder := addNode("intruder", other)
	member := addNode("n3", auth)
	c.waitFor("a fourth node with the cluster's authorisation joined", func() bool { return known(member.port) })
	if known(intruder.port) {
		t.Errorf("a node with another authorisation joined the cluster (its URL :%d is known to the clients)", intruder.port)
	}

	// No routes' password: the node does not start.
	noRoute := filepath.Join(c.dir, "no-route-auth")
	if _, err := queue.InitAuth(noRoute, false); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(noRoute, queue.RouteSecret)); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = c.run(nil, "broker", "--store", filepath.Join(c.dir, "store-x"), "--listen", "127.0.0.1:0",
		"--node", "x", "--cluster", "127.0.0.1:0", "--routes", bc.routes(), "--auth", noRoute)
	if code != 1 || !strings.Contains(errOut, "no route.pass for the cluster's routes") {
		t.Errorf("a node without the routes' password: exit %d, %q", code, errOut)
	}
	t.Logf("test done: %v", time.Since(t0).Round(10*time.Millisecond))
}
