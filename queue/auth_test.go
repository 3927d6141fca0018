package queue

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/rawbatch/rawbatch/internal/testtool"
)

// TestInitAuthFiles: InitAuth writes auth.conf, the seeds and one
// credentials file per role, 0600 in a 0700 directory; it does not
// overwrite them without force, and with force writes new ones.
func TestInitAuthFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "auth")
	written, err := InitAuth(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 4+len(Roles) {
		t.Errorf("written %v, want auth.conf, two seeds, the routes' password and %d credentials", written, len(Roles))
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v (%v), want 0700", st.Mode().Perm(), err)
	}
	for _, p := range written {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", p, st.Mode().Perm(), err)
		}
	}
	before, _ := os.ReadFile(filepath.Join(dir, "submit.creds"))
	if _, err := InitAuth(dir, false); !errors.Is(err, fs.ErrExist) {
		t.Errorf("InitAuth over an existing one: %v, want a refusal", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "submit.creds")); string(after) != string(before) {
		t.Error("submit.creds changed by a refused InitAuth")
	}
	if _, err := InitAuth(dir, true); err != nil {
		t.Fatal(err)
	}
	// A broker refuses an authorisation others may read.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := StartBroker(BrokerOptions{Store: t.TempDir(), Listen: "127.0.0.1:0", Security: BrokerSecurity{Auth: dir}}); err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Errorf("broker with a 0755 authorisation: %v, want a refusal", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "submit.creds")); string(after) == string(before) {
		t.Error("submit.creds not replaced by InitAuth with force")
	}
}

// TestOpenListenRefused: a broker beyond the loopback interface without
// an authorisation does not start (ErrOpenListen); with Insecure it does.
// Monitoring endpoints beyond it are refused even with an authorisation
// (ErrOpenMonitor): they ask no credentials.
func TestOpenListenRefused(t *testing.T) {
	_, err := StartBroker(BrokerOptions{Store: t.TempDir(), Listen: "0.0.0.0:0"})
	if !errors.Is(err, ErrOpenListen) {
		t.Fatalf("open broker: %v, want ErrOpenListen", err)
	}
	b, err := StartBroker(BrokerOptions{Store: t.TempDir(), Listen: "0.0.0.0:0", Security: BrokerSecurity{Insecure: true}})
	if err != nil {
		t.Fatalf("open broker with Insecure: %v", err)
	}
	b.Shutdown()
	dir := filepath.Join(t.TempDir(), "auth")
	if _, err := InitAuth(dir, false); err != nil {
		t.Fatal(err)
	}
	_, err = StartBroker(BrokerOptions{Store: t.TempDir(), Listen: "0.0.0.0:0", Monitor: "0.0.0.0:0", Security: BrokerSecurity{Auth: dir}})
	if !errors.Is(err, ErrOpenMonitor) {
		t.Fatalf("open monitoring endpoints: %v, want ErrOpenMonitor", err)
	}
}

// startAuthBroker starts an embedded broker with a new authorisation
// (and TLS with the test PKI in pki, when not empty).
func startAuthBroker(t *testing.T, pki string) (*Broker, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "auth")
	if _, err := InitAuth(dir, false); err != nil {
		t.Fatal(err)
	}
	sec := BrokerSecurity{Auth: dir}
	if pki != "" {
		sec.TLSCert, sec.TLSKey = filepath.Join(pki, "server.pem"), filepath.Join(pki, "server-key.pem")
	}
	b, err := StartBroker(BrokerOptions{Store: t.TempDir(), Listen: "0.0.0.0:0", Security: sec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Shutdown)
	return b, dir
}

// localURL is url (a broker listening on every interface) on 127.0.0.1.
func localURL(url string) string { return strings.Replace(url, "0.0.0.0", "127.0.0.1", 1) }

// TestAuthRoles: each role's credentials allow exactly its operations on
// the embedded broker.
func TestAuthRoles(t *testing.T) {
	b, dir := startAuthBroker(t, "")
	testRoles(t, localURL(b.URL()), dir)
}

// TestAuthRolesNATS29: the same with Debian's nats-server 2.9.10
// configured with the authorisation's auth.conf (included, as
// docs/distributed.md shows); an admin creates the queue first.
func TestAuthRolesNATS29(t *testing.T) {
	url, dir := startNATS29(t)
	testRoles(t, url, dir)
}

// startNATS29 starts Debian's nats-server with a new authorisation's
// auth.conf included, creates the queue as an admin, and returns the
// server's URL and the authorisation's directory.
func startNATS29(t *testing.T) (string, string) {
	exe := testtool.Need(t, "nats-server")
	dir := filepath.Join(t.TempDir(), "auth")
	if _, err := InitAuth(dir, false); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	srvDir := t.TempDir()
	conf := filepath.Join(srvDir, "nats-server.conf")
	// include takes a path relative to the including file.
	rel, err := filepath.Rel(srvDir, filepath.Join(dir, AuthConfig))
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf("listen: 127.0.0.1:%d\njetstream {\n  store_dir: %q\n}\ninclude %q\n", port, filepath.Join(srvDir, "store"), rel)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(srvDir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-c", conf)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("nats-server's log:\n%s", b)
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitFor(t, "nats-server listening on "+addr, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	url := "nats://" + addr
	admin := testOptions(url)
	admin.Creds = filepath.Join(dir, "admin.creds")
	connectT(t, admin).Close() // creates the queue's streams and buckets
	return url, dir
}

// roleOptions are testOptions for url with role's credentials in dir.
func roleOptions(url, dir, role string) Options {
	o := testOptions(url)
	o.Creds = filepath.Join(dir, role+".creds")
	o.Name = role
	return o
}

// testRoles checks each role's operations on the broker at url with the
// authorisation in dir.
func testRoles(t *testing.T, url, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := Connect(ctx, testOptions(url)); !errors.Is(err, ErrRefused) {
		t.Fatalf("anonymous client: %v, want ErrRefused", err)
	}
	other := filepath.Join(t.TempDir(), "other")
	if _, err := InitAuth(other, false); err != nil {
		t.Fatal(err)
	}
	o := testOptions(url)
	o.Creds = filepath.Join(other, "admin.creds")
	if _, err := Connect(ctx, o); !errors.Is(err, ErrRefused) {
		t.Fatalf("client of another authorisation: %v, want ErrRefused", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refusals took %v: want them at once", d)
	}

	sub := connectT(t, roleOptions(url, dir, "submit"))
	j := testJob("denied.dng", 1<<20)
	publishT(t, sub, j)
	if st := statusOf(t, sub, j.ID); st.State != Queued {
		t.Fatalf("status read by the submitter: %q, want queued", st.State)
	}
	// The submitter cannot take it: its pull request is refused.
	mb, err := sub.cons[classOf(j.Estimate)].Fetch(1, jetstream.FetchMaxWait(2*time.Second))
	if err == nil {
		for m := range mb.Messages() {
			t.Errorf("the submitter took job %s", m.Subject())
		}
	}
	if r := sub.refused.Load(); r == nil || !strings.Contains(r.err.Error(), "MSG.NEXT") {
		t.Errorf("the submitter's fetch: no refusal noted (%v)", r)
	}
	// No role but admin creates a stream of its own (one capturing
	// others' replies, say).
	createSpy := func(c *Client) error {
		octx, cancel := c.op(ctx)
		defer cancel()
		_, err := c.js.CreateStream(octx, jetstream.StreamConfig{Name: "SPY", Subjects: []string{"_INBOX.>"}})
		return c.refusal(err)
	}
	if err := createSpy(sub); !errors.Is(err, ErrRefused) {
		t.Errorf("submitter creating a stream: %v, want ErrRefused", err)
	}
	// The queue's bound is an admin's.
	so := roleOptions(url, dir, "submit")
	so.QueueMax = 5
	if _, err := Connect(ctx, so); !errors.Is(err, ErrRefused) {
		t.Errorf("submitter setting the bound: %v, want ErrRefused", err)
	}

	wo := roleOptions(url, dir, "work")
	wo.SetTimings = true
	wc := connectT(t, wo)
	if err := createSpy(wc); !errors.Is(err, ErrRefused) {
		t.Errorf("worker creating a stream: %v, want ErrRefused", err)
	}
	var fail atomic.Bool
	fail.Store(true)
	tw := startWorker(t, wc, 1, func(ctx context.Context, d Delivery) Outcome {
		if fail.Load() {
			return Outcome{Result: Permanent, Kind: "corrupt", Reason: "truncated"}
		}
		return Outcome{Result: Done, Converted: true}
	})
	waitFor(t, "the job dead-lettered by the worker", func() bool { return statusOf(t, sub, j.ID).State == Failed })
	if dls, err := sub.Dead(ctx, ""); err != nil || len(dls) != 1 {
		t.Fatalf("dead letters read by the submitter: %d, %v; want 1", len(dls), err)
	}
	if err := sub.Purge(ctx, j.ID); !errors.Is(err, ErrRefused) {
		t.Errorf("submitter's purge: %v, want ErrRefused", err)
	}
	if err := sub.Retry(ctx, j.ID); !errors.Is(err, ErrRefused) {
		t.Errorf("submitter's retry: %v, want ErrRefused", err)
	}
	if err := wc.Purge(ctx, j.ID); !errors.Is(err, ErrRefused) {
		t.Errorf("worker's purge: %v, want ErrRefused", err)
	}
	if _, err := sub.DeadLetterOf(ctx, j.ID); err != nil {
		t.Errorf("the dead letter after the refused purges and retry: %v", err)
	}
	if st := statusOf(t, sub, j.ID); st.State != Failed {
		t.Errorf("status after the refused retry: %q, want failed (not queued again)", st.State)
	}
	// Later calls of a refused client still work.
	if _, err := sub.Info(ctx); err != nil {
		t.Errorf("submitter's Info after its refusals: %v", err)
	}

	ao := roleOptions(url, dir, "admin")
	ao.QueueMax = 100
	admin := connectT(t, ao)

	// The job queued again while its dead letter stays (the race of a
	// re-submit with its dead-lettering) and done: the worker may not
	// remove the dead letter, says so, and carries on.
	fail.Store(false)
	if _, err := admin.publish(ctx, j, true, j.ID+"/again"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the job queued again done", func() bool { return statusOf(t, sub, j.ID).State == Processed })
	waitFor(t, "the worker saying the dead letter stays", func() bool { return tw.logged("older dead letter stays") })
	if _, err := sub.DeadLetterOf(ctx, j.ID); err != nil {
		t.Errorf("the dead letter the worker may not remove: %v", err)
	}
	j2 := testJob("after-refusal.dng", 1<<20)
	publishT(t, sub, j2)
	waitFor(t, "a later job done by the refused worker", func() bool { return statusOf(t, sub, j2.ID).State == Processed })
	fail.Store(true)
	if err := admin.Retry(ctx, j.ID); err != nil {
		t.Fatalf("admin's retry: %v", err)
	}
	waitFor(t, "the retried job dead-lettered again", func() bool {
		_, err := admin.DeadLetterOf(ctx, j.ID)
		return err == nil && statusOf(t, admin, j.ID).State == Failed
	})
	if err := admin.Purge(ctx, j.ID); err != nil {
		t.Fatalf("admin's purge: %v", err)
	}
	if dls, err := admin.Dead(ctx, ""); err != nil || len(dls) != 0 {
		t.Errorf("dead letters after the admin's purge: %d, %v; want none", len(dls), err)
	}
}

// TestTLSBroker: a TLS broker (a CA made by the test) takes a client that
// trusts its CA and refuses one that does not, one that speaks clear
// text, and a bare clear-text CONNECT.
func TestTLSBroker(t *testing.T) {
	pki := t.TempDir()
	if err := testtool.TLSCerts(pki); err != nil {
		t.Fatal(err)
	}
	b, dir := startAuthBroker(t, pki)
	url := localURL(b.URL())
	if !strings.HasPrefix(url, "tls://") {
		t.Fatalf("broker URL %s: want tls://", url)
	}
	o := roleOptions(url, dir, "submit")
	o.CA = filepath.Join(pki, "ca.pem")
	connectT(t, o).Close()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	o.CA = filepath.Join(pki, "other-ca.pem")
	if _, err := Connect(ctx, o); !errors.Is(err, ErrRefused) {
		t.Errorf("client trusting another CA: %v, want ErrRefused", err)
	}
	o.CA, o.URL = "", "nats://"+strings.TrimPrefix(url, "tls://")
	if _, err := Connect(ctx, o); !errors.Is(err, ErrRefused) {
		t.Errorf("nats:// client without the CA: %v, want ErrRefused", err)
	}

	// A clear-text client: INFO says TLS is required, and a CONNECT and
	// PING in clear text get no PONG.
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "tls://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(conn)
	info, err := r.ReadString('\n')
	if err != nil || !strings.Contains(info, `"tls_required":true`) {
		t.Fatalf("INFO %q (%v): want tls_required", info, err)
	}
	if _, err := conn.Write([]byte("CONNECT {\"verbose\":false}\r\nPING\r\n")); err != nil {
		t.Logf("clear-text CONNECT: %v", err)
	}
	rest, _ := r.ReadString('\n')
	if strings.HasPrefix(rest, "PONG") {
		t.Errorf("clear-text client answered %q", rest)
	}
}
