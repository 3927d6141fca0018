package queue

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestSubmitterIsolation: two submitters' credentials (AddSubmitter) on
// an embedded broker with an authorisation: each reads only its own
// jobs' statuses and dead letters, through the client and through a raw
// NATS connection asking the broker directly (every attempt at the
// other's subjects a permission violation), and cannot overwrite the
// other's statuses by queuing a job of the same id; a job published on
// one's subject with the other's name in its body stays in the
// publisher's namespace; the worker and the admin see both.
func TestSubmitterIsolation(t *testing.T) {
	b, dir := startAuthBroker(t, "")
	testIsolation(t, localURL(b.URL()), dir)
}

// TestSubmitterIsolationNATS29: the same with Debian's nats-server
// 2.9.10 and the authorisation's auth.conf included.
func TestSubmitterIsolationNATS29(t *testing.T) {
	url, dir := startNATS29(t)
	testIsolation(t, url, dir)
}

// testIsolation checks two submitters apart on the broker at url with
// the authorisation in dir.
func testIsolation(t *testing.T, url, dir string) {
	for _, n := range []string{"alice", "bob"} {
		p, err := AddSubmitter(dir, n, false)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(p) != "submit-"+n+".creds" {
			t.Errorf("credentials of %s written to %s", n, p)
		}
	}
	if _, err := AddSubmitter(dir, "alice", false); err == nil {
		t.Error("AddSubmitter over existing credentials: no error")
	}
	if _, err := AddSubmitter(dir, "Bad.Name", false); err == nil {
		t.Error("AddSubmitter with a dotted name: no error")
	}
	sub := func(name string) *Client {
		o := testOptions(url)
		o.Creds = filepath.Join(dir, SubmitterCreds(name))
		o.Name = name
		return connectT(t, o)
	}
	alice, bob := sub("alice"), sub("bob")
	wo := roleOptions(url, dir, "work")
	wo.SetTimings = true
	wc := connectT(t, wo)
	admin := connectT(t, roleOptions(url, dir, "admin"))
	startWorker(t, wc, 2, func(ctx context.Context, d Delivery) Outcome {
		if strings.Contains(d.Job.Input, "bad") {
			return Outcome{Result: Permanent, Kind: "corrupt", Reason: "truncated"}
		}
		return Outcome{Result: Done, Converted: true}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	aGood, aBad := testJob("alice-good.dng", 1<<20), testJob("alice-bad.dng", 1<<20)
	bGood, bBad := testJob("bob-good.dng", 1<<20), testJob("bob-bad.dng", 1<<20)
	for _, p := range []struct {
		c *Client
		j Job
	}{{alice, aGood}, {alice, aBad}, {bob, bGood}, {bob, bBad}} {
		publishT(t, p.c, p.j)
	}
	waitFor(t, "the four jobs ended", func() bool {
		n := 0
		for _, st := range statusesT(t, admin) {
			if st.State == Processed || st.State == Failed {
				n++
			}
		}
		return n == 4
	})

	ids := func(sts []Status) string {
		var r []string
		for _, st := range sts {
			r = append(r, st.Owner+"/"+strings.TrimPrefix(st.Input, "/in/")+"="+string(st.State))
		}
		return strings.Join(sortedCopy(r), " ")
	}
	if got, want := ids(statusesT(t, alice)), "alice/alice-bad.dng=failed alice/alice-good.dng=processed"; got != want {
		t.Errorf("alice's statuses: %s, want %s", got, want)
	}
	if got, want := ids(statusesT(t, bob)), "bob/bob-bad.dng=failed bob/bob-good.dng=processed"; got != want {
		t.Errorf("bob's statuses: %s, want %s", got, want)
	}
	all := "alice/alice-bad.dng=failed alice/alice-good.dng=processed bob/bob-bad.dng=failed bob/bob-good.dng=processed"
	for name, c := range map[string]*Client{"worker": wc, "admin": admin} {
		if got := ids(statusesT(t, c)); got != all {
			t.Errorf("the %s's statuses: %s, want %s", name, got, all)
		}
	}
	deadInputs := func(c *Client) string {
		dls, err := c.Dead(ctx, "")
		if err != nil {
			t.Fatalf("dead letters: %v", err)
		}
		var r []string
		for _, dl := range dls {
			r = append(r, dl.Job.Owner+"/"+strings.TrimPrefix(dl.Job.Input, "/in/"))
		}
		return strings.Join(sortedCopy(r), " ")
	}
	if got := deadInputs(alice); got != "alice/alice-bad.dng" {
		t.Errorf("alice's dead letters: %q, want hers only", got)
	}
	if got := deadInputs(bob); got != "bob/bob-bad.dng" {
		t.Errorf("bob's dead letters: %q, want his only", got)
	}
	if got := deadInputs(admin); got != "alice/alice-bad.dng bob/bob-bad.dng" {
		t.Errorf("the admin's dead letters: %q, want both", got)
	}
	if _, err := bob.DeadLetterOf(ctx, aBad.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob asking for alice's dead letter: %v, want not found", err)
	}
	if dl, err := admin.DeadLetterOf(ctx, aBad.ID); err != nil || dl.Job.Owner != "alice" {
		t.Errorf("the admin asking for alice's dead letter: %v, %q", err, dl.Job.Owner)
	}
	if qi, err := bob.Info(ctx); err != nil || qi.Dead != 1 || qi.Workers != nil {
		t.Errorf("bob's queue info: %d dead, workers %v, %v; want his 1 dead letter and no registry", qi.Dead, qi.Workers, err)
	}

	// Bob queuing a job of alice's id: his own, in his namespace; hers
	// stays as it was.
	steal := aGood
	steal.Input = "/in/bob-steal.dng"
	publishT(t, bob, steal)
	waitFor(t, "bob's job of alice's id processed", func() bool {
		for _, st := range statusesT(t, bob) {
			if st.ID == aGood.ID && st.State == Processed {
				return true
			}
		}
		return false
	})
	for _, st := range statusesT(t, alice) {
		if st.ID == aGood.ID && (st.Input != aGood.Input || st.Owner != "alice") {
			t.Errorf("alice's status of %s after bob's job of the same id: %+v", aGood.ID, st)
		}
	}

	// A raw connection with bob's credentials asking for alice's.
	nc, violations := rawConn(t, url, filepath.Join(dir, SubmitterCreds("bob")))
	attempts := []struct {
		what, subj string
		body       string
	}{
		{"get alice's status", "$JS.API.DIRECT.GET.KV_" + statusBucket + ".$KV." + statusBucket + "." + statusKey("alice", aGood.ID), ""},
		{"get any status by sequence", "$JS.API.DIRECT.GET.KV_" + statusBucket, `{"seq":1}`},
		{"get a status by its subject in the body", "$JS.API.STREAM.MSG.GET.KV_" + statusBucket, fmt.Sprintf(`{"last_by_subj":"$KV.%s.%s"}`, statusBucket, statusKey("alice", aGood.ID))},
		{"write alice's status", "$KV." + statusBucket + "." + statusKey("alice", aGood.ID), `{"state":"queued"}`},
		{"get alice's dead letter", "$JS.API.DIRECT.GET." + deadStream + "." + deadSubject("alice", aBad.ID), ""},
		{"get a dead letter by its subject in the body", "$JS.API.STREAM.MSG.GET." + deadStream, fmt.Sprintf(`{"last_by_subj":%q}`, deadSubject("alice", aBad.ID))},
		{"watch alice's dead letters", "$JS.API.CONSUMER.CREATE." + deadStream + ".spy." + deadPrefix + "alice.>", `{"stream_name":"` + deadStream + `","config":{"name":"spy","filter_subject":"` + deadPrefix + `alice.>","ack_policy":"none","deliver_policy":"all"}}`},
		{"watch every dead letter", "$JS.API.CONSUMER.CREATE." + deadStream + ".spy", `{"stream_name":"` + deadStream + `","config":{"name":"spy","ack_policy":"none","deliver_policy":"all"}}`},
		{"watch alice's statuses", "$JS.API.CONSUMER.CREATE.KV_" + statusBucket + ".spy.$KV." + statusBucket + ".alice.>", `{"stream_name":"KV_` + statusBucket + `","config":{"name":"spy","filter_subject":"$KV.` + statusBucket + `.alice.>","ack_policy":"none","deliver_policy":"all"}}`},
		{"queue a job as alice", jobSubject("le256m", "alice", aGood.ID), `{}`},
		{"read the workers' registry", "$JS.API.DIRECT.GET.KV_" + workersBucket + ".$KV." + workersBucket + ".test", ""},
		{"write a dead letter", deadSubject("bob", aGood.ID), `{}`},
	}
	for _, a := range attempts {
		violations.reset()
		m, err := nc.Request(a.subj, []byte(a.body), 500*time.Millisecond)
		if err == nil {
			t.Errorf("bob's raw connection: %s (%s): answered %q", a.what, a.subj, m.Data)
			continue
		}
		if v := violations.wait(a.subj); v == "" {
			t.Errorf("bob's raw connection: %s (%s): %v, no permission violation", a.what, a.subj, err)
		}
	}
	violations.reset()
	if _, err := nc.SubscribeSync(deadPrefix + ">"); err == nil {
		_ = nc.Flush()
		if v := violations.wait(deadPrefix + ">"); v == "" {
			t.Errorf("bob's raw connection subscribing to every dead letter: no permission violation")
		}
	}
	// A direct get on a subject of bob's whose body asks for another
	// message: refused by the broker, or bob's own, never alice's.
	for _, body := range []string{`{"seq":1}`, `{"last_by_subj":"$KV.` + statusBucket + `.` + statusKey("alice", aGood.ID) + `"}`} {
		m, err := nc.Request("$JS.API.DIRECT.GET.KV_"+statusBucket+".$KV."+statusBucket+"."+statusKey("bob", bGood.ID), []byte(body), 2*time.Second)
		if err == nil && strings.Contains(string(m.Data), "alice") {
			t.Errorf("bob's direct get of his own status with the body %s: answered alice's %q", body, m.Data)
		}
	}
	// Bob's own: answered.
	if m, err := nc.Request("$JS.API.DIRECT.GET.KV_"+statusBucket+".$KV."+statusBucket+"."+statusKey("bob", bGood.ID), nil, 2*time.Second); err != nil || len(m.Data) == 0 {
		t.Errorf("bob's raw connection reading his own status: %v", err)
	}
	// A job on bob's subject naming alice in its body: bob's.
	forged := testJob("forged.dng", 1<<20)
	forged.Owner, forged.Class = "alice", "le256m"
	body, _ := forged.MarshalJSON()
	if _, err := nc.Request(jobSubject("le256m", "bob", forged.ID), body, 2*time.Second); err != nil {
		t.Fatalf("bob's raw connection queuing his own job: %v", err)
	}
	waitFor(t, "the forged job processed", func() bool { return statusOf(t, admin, forged.ID).State == Processed })
	if st := statusOf(t, admin, forged.ID); st.Owner != "bob" {
		t.Errorf("a job on bob's subject naming alice: status in %q's namespace, want bob's", st.Owner)
	}
	if st := statusOf(t, alice, forged.ID); st.ID != "" {
		t.Errorf("a job on bob's subject naming alice: alice sees its status %+v", st)
	}

	// A dead letter without a namespace (rawbatch.dead.<id>): the admin
	// finds and purges it; no submitter sees it.
	old := testJob("old.dng", 1<<20)
	oldDL, _ := DeadLetter{Job: old, Kind: "corrupt", Reason: "old"}.MarshalJSON()
	if _, err := admin.js.Publish(ctx, deadPrefix+old.ID, oldDL); err != nil {
		t.Fatal(err)
	}
	if dl, err := admin.DeadLetterOf(ctx, old.ID); err != nil || dl.Job.Owner != "" {
		t.Errorf("the admin reading a dead letter without a namespace: %v, owner %q", err, dl.Job.Owner)
	}
	if _, err := alice.DeadLetterOf(ctx, old.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("a submitter reading a dead letter without a namespace: %v, want not found", err)
	}
	if err := admin.Purge(ctx, old.ID); err != nil {
		t.Errorf("the admin purging a dead letter without a namespace: %v", err)
	}
	if _, err := admin.DeadLetterOf(ctx, old.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("the dead letter without a namespace after its purge: %v", err)
	}
}

// statusesT returns every status c may read.
func statusesT(t *testing.T, c *Client) []Status {
	t.Helper()
	sts, err := c.Statuses(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return sts
}

func sortedCopy(s []string) []string {
	r := append([]string(nil), s...)
	for i := range r {
		for j := i + 1; j < len(r); j++ {
			if r[j] < r[i] {
				r[i], r[j] = r[j], r[i]
			}
		}
	}
	return r
}

// violationLog collects the permission violations a raw connection's
// error handler reports.
type violationLog struct {
	mu   sync.Mutex
	errs []string
}

func (v *violationLog) add(err error) {
	if errors.Is(err, nats.ErrPermissionViolation) {
		v.mu.Lock()
		v.errs = append(v.errs, err.Error())
		v.mu.Unlock()
	}
}

func (v *violationLog) reset() {
	v.mu.Lock()
	v.errs = nil
	v.mu.Unlock()
}

// wait returns the violation naming subj, waiting up to 2 s for it.
func (v *violationLog) wait(subj string) string {
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		v.mu.Lock()
		for _, e := range v.errs {
			if strings.Contains(e, subj) {
				v.mu.Unlock()
				return e
			}
		}
		v.mu.Unlock()
	}
	return ""
}

// rawConn is a plain NATS connection with the credentials creds, its
// replies on the user's own inbox prefix, and the log of the permission
// violations the broker reports.
func rawConn(t *testing.T, url, creds string) (*nats.Conn, *violationLog) {
	t.Helper()
	id, err := credsUser(creds)
	if err != nil {
		t.Fatal(err)
	}
	v := &violationLog{}
	nc, err := nats.Connect(url, nats.UserCredentials(creds), nats.CustomInboxPrefix(inboxPrefix(id.pub)),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { v.add(err) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc, v
}
