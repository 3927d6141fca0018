package queue

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestWireNonUTF8: a Job, Status, DeadLetter and WorkerInfo whose paths
// and reasons hold a byte that is not UTF-8 keep those bytes through their
// JSON, which shows the byte as \xNN and holds no U+FFFD; a job id of
// such a path is still one subject token; the JSON of valid UTF-8 has no
// _b64 field.
func TestWireNonUTF8(t *testing.T) {
	in := "/in/lat\xe9.dng"
	now := time.Unix(1700000000, 0).UTC()
	j := Job{ID: JobID(in, 1, now, "h"), Batch: "b", Input: in, OutDir: "/out\xff", Estimate: 5, Class: "le256m",
		Submitted: now, Submitter: "h:1", Payload: json.RawMessage(`{"x":1}`)}
	if !validID(j.ID) || strings.ContainsAny(jobSubject(j.Class, DefaultSubmitter, j.ID), " *>\xe9") {
		t.Errorf("job id %q, subject %q: not a subject token", j.ID, jobSubject(j.Class, DefaultSubmitter, j.ID))
	}
	st := Status{ID: j.ID, Batch: "b", Input: in, OutDir: "/out\xff", State: Failed, Kind: "corrupt", Reason: in + ": corrupt", Queued: now}
	dl := DeadLetter{Job: j, Kind: "corrupt", Reason: in + ": corrupt", Attempts: 1, Worker: "w", Time: now}
	wi := WorkerInfo{Name: "w", Running: []string{j.ID, "x"}, Inputs: []string{in, "/in/plain.dng"}, Seen: now}
	for _, c := range []struct {
		v, back any
	}{{j, &Job{}}, {st, &Status{}}, {dl, &DeadLetter{}}, {wi, &WorkerInfo{}}} {
		b, err := json.Marshal(c.v)
		if err != nil {
			t.Fatal(err)
		}
		if s := string(b); strings.Contains(s, "\ufffd") || strings.Contains(s, `\ufffd`) || !strings.Contains(s, `lat\\xe9.dng`) {
			t.Errorf("%T: JSON %s: want \\xNN, no U+FFFD", c.v, b)
		}
		if err := json.Unmarshal(b, c.back); err != nil {
			t.Fatal(err)
		}
		if got := reflect.ValueOf(c.back).Elem().Interface(); !reflect.DeepEqual(got, c.v) {
			t.Errorf("%T after the round trip:\n%+v\nwant\n%+v", c.v, got, c.v)
		}
	}
	j.Input, j.OutDir = "/in/plain.dng", "/out"
	if b, _ := json.Marshal(j); strings.Contains(string(b), "_b64") {
		t.Errorf("JSON of a UTF-8 job: %s, want no _b64 field", b)
	}
}
