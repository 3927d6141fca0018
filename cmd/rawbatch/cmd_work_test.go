package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/rawbatch/rawbatch/batch"
	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/queue"
)

// jobOutcome maps each way a file can end on a worker to the queue's
// outcome: converted or up to date → Done; fenced (Fence refused, or the
// lease lost while it ran) → Fenced; stopped by the shutdown → Stopped;
// locked or transient → Transient; the rest → Permanent with the rawerr
// kind and the error's text; the report is the file's JobReport.
func TestJobOutcome(t *testing.T) {
	task := batch.Task{Input: "/nas/in/a.dng", Output: "/nas/out/a.jpg"}
	fail := func(err error) batch.FileResult {
		return batch.FileResult{Task: task, Status: batch.StatusFailed, Err: fmt.Errorf("%s: %w", task.Input, err)}
	}
	skip := func(reason string) batch.FileResult {
		return batch.FileResult{Task: task, Status: batch.StatusSkipped, Reason: reason}
	}
	converted := batch.FileResult{Task: task, Status: batch.StatusConverted, Decoded: true,
		Result: pipeline.Result{Timings: []pipeline.StageTiming{{Stage: "demosaic", Duration: 1500 * time.Millisecond}, {Stage: "encode", Duration: time.Second}}}}
	for _, c := range []struct {
		name             string
		fr               batch.FileResult
		leaseLost, stops bool
		want             queue.Result
		kind             string
	}{
		{"converted", converted, false, false, queue.Done, ""},
		{"up to date", skip("up to date"), false, false, queue.Done, ""},
		{"no-recreate", skip("output deleted; --no-recreate"), false, false, queue.Done, ""},
		{"fence refused", fail(fmt.Errorf("converted, but %w: %w", batch.ErrFenced, queue.ErrFenced)), false, false, queue.Fenced, "fenced"},
		{"lease lost while converting", fail(rawerr.ErrCrashed), true, false, queue.Fenced, "fenced"},
		{"stopped by the shutdown", skip(batch.ReasonCancelled), false, true, queue.Stopped, ""},
		{"not started", skip(batch.ReasonNotStarted), false, true, queue.Stopped, ""},
		{"cancelled", fail(context.Canceled), false, true, queue.Stopped, ""},
		{"killed by a second signal", fail(errors.New("worker killed")), false, true, queue.Stopped, ""},
		{"locked", batch.FileResult{Task: task, Status: batch.StatusLocked, Err: errors.New("locked by another run")}, false, false, queue.Transient, "locked"},
		{"no space", fail(syscall.ENOSPC), false, false, queue.Transient, rawerr.KindTransient},
		{"transient", fail(rawerr.ErrTransient), false, false, queue.Transient, rawerr.KindTransient},
		{"corrupt", fail(rawerr.ErrCorrupt), false, false, queue.Permanent, "corrupt"},
		{"crashed", fail(rawerr.ErrCrashed), false, false, queue.Permanent, "crashed"},
		{"timeout", fail(rawerr.ErrTimeout), false, false, queue.Permanent, "timeout"},
		{"other develop", fail(batch.ErrOtherDevelop), false, false, queue.Permanent, "error"},
		{"deleted since submitted", skip("deleted or moved since the run started"), false, false, queue.Permanent, "changed"},
	} {
		o := jobOutcome(c.fr, c.leaseLost, c.stops)
		if o.Result != c.want || o.Kind != c.kind {
			t.Errorf("%s: result %d kind %q, want %d %q", c.name, o.Result, o.Kind, c.want, c.kind)
		}
		if c.want == queue.Permanent && (o.Reason == "" || o.Reason[:len(task.Input)] != task.Input) {
			t.Errorf("%s: reason %q does not name the input", c.name, o.Reason)
		}
		var jr batch.JobReport
		if err := json.Unmarshal(o.Report, &jr); err != nil || jr.File.Input != task.Input || jr.File.Status != c.fr.Status {
			t.Errorf("%s: report %s (%v), want the file's entry", c.name, o.Report, err)
		}
	}
	o := jobOutcome(converted, false, false)
	if !o.Converted || o.Stages["demosaic"] != 1.5 || o.Stages["encode"] != 1 {
		t.Errorf("converted: Converted %v, stages %v", o.Converted, o.Stages)
	}
	var jr batch.JobReport
	if json.Unmarshal(o.Report, &jr); !jr.Decoded {
		t.Error("converted: the report does not say it was decoded")
	}
	if jobOutcome(skip("up to date"), false, false).Converted {
		t.Error("up to date: Converted")
	}
}

// A finished job's status becomes its report entry: the worker's, made a
// failure with the status's reason when it is in the dead letters, with a
// kind the report knows.
func TestJobReport(t *testing.T) {
	fr := batch.FileResult{Task: batch.Task{Input: "/nas/in/a.dng", Output: "/nas/out/a.jpg"}, Status: batch.StatusConverted}
	b, _ := json.Marshal(batch.JobReportOf(fr))
	jr := jobReport(queue.Status{ID: "x", Input: fr.Input, State: queue.Processed, Result: b})
	if jr.File.Status != batch.StatusConverted || len(jr.File.Outputs) != 1 || !jr.File.Outputs[0].Written {
		t.Errorf("processed: %+v", jr.File)
	}
	jr = jobReport(queue.Status{ID: "x", Input: fr.Input, State: queue.Failed, Kind: "redelivered", Reason: "delivered 6 times without finishing"})
	if f := jr.File; f.Status != batch.StatusFailed || f.Kind != "error" || f.Reason != "/nas/in/a.dng: delivered 6 times without finishing" || f.Input != fr.Input || f.Outputs == nil {
		t.Errorf("dead-lettered without a conversion: %+v", f)
	}
	// A reason naming the file already is kept as it is.
	jr = jobReport(queue.Status{ID: "x", Input: fr.Input, State: queue.Failed, Kind: "corrupt", Reason: "/nas/in/a.dng: corrupt or truncated data", Result: b})
	if f := jr.File; f.Reason != "/nas/in/a.dng: corrupt or truncated data" {
		t.Errorf("a reason naming the file: %q", f.Reason)
	}
	jr = jobReport(queue.Status{ID: "x", Input: fr.Input, State: queue.Failed, Kind: "corrupt", Reason: "corrupt or truncated data", Result: b})
	if f := jr.File; f.Status != batch.StatusFailed || f.Kind != "corrupt" || len(f.Outputs) != 0 {
		t.Errorf("failed: %+v", f)
	}
}

// TestOutDirOutcome: an output directory that cannot be opened is retried
// (Transient) only while the shared storage is away; one that refuses
// (permission denied, read-only) is a permanent failure, its reason
// naming the directory. The refusals are real ones where the test can
// make them (a file where the directory should be), wrapped errno values
// otherwise (the tests run as root, where EACCES does not happen).
func TestOutDirOutcome(t *testing.T) {
	dir := "/nas/export"
	away := []error{syscall.ESTALE, syscall.EIO, syscall.ENOTCONN, syscall.EHOSTDOWN, syscall.ETIMEDOUT, syscall.ENOSPC, syscall.ENOENT, rawerr.ErrTransient}
	for _, e := range away {
		err := fmt.Errorf("output directory %s: %w", dir, &os.PathError{Op: "mkdir", Path: dir, Err: e})
		if o := outDirOutcome(dir, err); o.Result != queue.Transient || o.Kind != rawerr.KindTransient {
			t.Errorf("%v: %+v, want transient", e, o)
		}
	}
	for _, e := range []error{syscall.EACCES, syscall.EPERM, syscall.EROFS} {
		err := &os.PathError{Op: "open", Path: dir + "/.rawbatch-probe-1", Err: e}
		o := outDirOutcome(dir, err)
		if o.Result != queue.Permanent || o.Kind == rawerr.KindTransient || !strings.Contains(o.Reason, dir) {
			t.Errorf("%v: %+v, want a permanent failure naming %s", e, o, dir)
		}
	}
	// A real refusal: a file in the directory's place.
	file := filepath.Join(t.TempDir(), "export")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w := &worker{outDirs: map[string]*batch.OutDir{}, logf: func(string) {}}
	_, err := w.outDir(filepath.Join(file, "sub"))
	if err == nil {
		t.Fatal("outDir under a file: no error")
	}
	if o := outDirOutcome(filepath.Join(file, "sub"), err); o.Result != queue.Permanent || !strings.Contains(o.Reason, file) {
		t.Errorf("outDir under a file: %+v (%v), want permanent, naming it", o, err)
	}
}

// TestListenAddr: --metrics and --health given a port alone listen on
// loopback only; a host given is kept (0.0.0.0 explicitly: all); a bad
// address is an error naming the flag.
func TestListenAddr(t *testing.T) {
	for in, want := range map[string]string{
		"": "", ":9180": "127.0.0.1:9180", "9180": "127.0.0.1:9180", " :9180 ": "127.0.0.1:9180",
		"0.0.0.0:9180": "0.0.0.0:9180", "10.0.0.5:9180": "10.0.0.5:9180", "[::1]:9180": "[::1]:9180", "[::]:9180": "[::]:9180",
	} {
		got, err := listenAddr("--metrics", in)
		if err != nil || got != want {
			t.Errorf("listenAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"host", "host:port", ":99999", "a:b:c"} {
		if _, err := listenAddr("--health", bad); err == nil || !strings.Contains(err.Error(), "--health") {
			t.Errorf("listenAddr(%q) = %v, want an error naming --health", bad, err)
		}
	}
}

// TestWorkNeedsAllow: a worker without --allow (flag, variable or config)
// or with a directory that does not exist does not start: exit status 1,
// the message saying why; RAWBATCH_ALLOW is read as the flag.
func TestWorkNeedsAllow(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv("RAWBATCH_ALLOW", "")
	run := func(args ...string) (int, string) {
		var stderr strings.Builder
		cmd := newRootCmd()
		cmd.SetArgs(args)
		cmd.SetOut(&stderr)
		cmd.SetErr(&stderr)
		err := cmd.ExecuteContext(context.Background())
		if err != nil {
			stderr.WriteString(err.Error())
		}
		return exitCode(err), stderr.String()
	}
	if code, msg := run("work", "--nats", "127.0.0.1:1"); code != ExitUsage || !strings.Contains(msg, "give --allow DIR") {
		t.Errorf("work without --allow: exit %d, %q; want 1 and why", code, msg)
	}
	if code, msg := run("work", "--allow", filepath.Join(dir, "missing")); code != ExitUsage || !strings.Contains(msg, "missing") {
		t.Errorf("work --allow MISSING: exit %d, %q; want 1 naming it", code, msg)
	}
	var o WorkOptions
	t.Setenv("RAWBATCH_ALLOW", dir)
	cmd := &cobra.Command{Use: "work"}
	o.AddFlags(cmd.Flags())
	if _, err := resolve(cmd, o.settings(), false); err != nil {
		t.Fatal(err)
	}
	if len(o.Allow) != 1 || o.Allow[0] != dir {
		t.Errorf("RAWBATCH_ALLOW=%s: Allow = %q", dir, o.Allow)
	}
}
