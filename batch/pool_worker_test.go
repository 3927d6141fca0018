package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/pipeline"
)

// poolJobs writes the named copies of src into a new directory and
// returns one Job per name (a JPEG output each, in another directory).
func poolJobs(t *testing.T, src map[string][]byte, names ...string) []Job {
	t.Helper()
	in, out := t.TempDir(), t.TempDir()
	s := pipeline.DefaultSettings()
	var jobs []Job
	for _, name := range names {
		p := filepath.Join(in, name)
		touch(t, p, src[name])
		o := filepath.Join(out, strings.TrimSuffix(name, ".dng")+".jpg")
		jobs = append(jobs, Job{Input: []byte(p), Output: []byte(o), Settings: s, Threads: 1,
			Outputs: []JobOutput{{Variant: s.OutputVariants()[0], Path: []byte(o)}}})
	}
	return jobs
}

// started returns how many workers the pool of this test binary (in the
// environment now) has started.
func started() int {
	p := poolFor(os.Args[0])
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.started
}

// sameSource maps each name to data.
func sameSource(data []byte, names ...string) map[string][]byte {
	m := map[string][]byte{}
	for _, n := range names {
		m[n] = data
	}
	return m
}

// TestPoolWorkerServesFilesInSequence: one worker converts several files
// in a row; each file's reply and stderr messages are its own (libjpeg's
// warnings about the damaged file's data are that file's only), and each
// has its own peak RSS.
func TestPoolWorkerServesFilesInSequence(t *testing.T) {
	t.Setenv(FaultEnv, "pool-sequence") // a pool of this test's own
	// One worker for all: no retirement for its memory (a race-enabled
	// build's is larger) or for a slow file's idle gap.
	defer func(rss int64, idle time.Duration) { workerRecycleRSS, workerIdle = rss, idle }(workerRecycleRSS, workerIdle)
	workerRecycleRSS, workerIdle = math.MaxInt64, time.Minute
	small := mustRead(t, filepath.Join(testdata, "raw", "adobesdk_05_PGTM2_unsigned8.dng"))
	lossy := mustRead(t, filepath.Join(testdata, "raw", "canon_eos_6d.dng"))
	src := map[string][]byte{"a.dng": small, "damaged.dng": damageLossyTile(t, lossy, 1, 200), "b.dng": small, "c.dng": small}
	jobs := poolJobs(t, src, "a.dng", "damaged.dng", "b.dng", "c.dng")
	before := started()
	ex := Subprocess{Exe: os.Args[0]}
	for _, j := range jobs {
		out := ex.Execute(context.Background(), j)
		name := filepath.Base(string(j.Input))
		if out.Result.Input != string(j.Input) || out.PeakBytes <= 0 || out.Stopped {
			t.Errorf("%s: input %q, peak %d, stopped %v", name, out.Result.Input, out.PeakBytes, out.Stopped)
		}
		corrupt := strings.Contains(out.Messages, "Corrupt JPEG data")
		if name == "damaged.dng" {
			if !errors.Is(out.Err, rawerr.ErrCorrupt) || !corrupt {
				t.Errorf("%s: %v, messages %q; want failed as corrupt with libjpeg's warning", name, out.Err, out.Messages)
			}
			continue
		}
		if out.Err != nil || corrupt {
			t.Errorf("%s: %v, messages %q; want converted, without another file's messages", name, out.Err, out.Messages)
		}
		if _, err := os.Stat(string(j.Output)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n := started() - before; n != 1 {
		t.Errorf("%d workers started for 4 files in a row, want 1", n)
	}
}

// TestPoolWorkerCrashAndHangMidway: a crash (SIGSEGV in C code) on file 2
// of 4 fails file 2 only, with the crash report as its messages, and
// files 3 and 4 convert in a fresh worker; likewise a hang, killed at the
// file's timeout.
func TestPoolWorkerCrashAndHangMidway(t *testing.T) {
	small := mustRead(t, filepath.Join(testdata, "raw", "adobesdk_05_PGTM2_unsigned8.dng"))
	for _, c := range []struct {
		fault string
		want  error
		text  string
	}{
		{"crash", ErrCrashed, "signal 11"},
		{"hang", ErrTimeout, "timed out after 2 s"},
	} {
		t.Run(c.fault, func(t *testing.T) {
			t.Setenv(FaultEnv, c.fault+"=f2.dng")
			defer func(rss int64, idle time.Duration) { workerRecycleRSS, workerIdle = rss, idle }(workerRecycleRSS, workerIdle)
			workerRecycleRSS, workerIdle = math.MaxInt64, time.Minute
			names := []string{"f1.dng", "f2.dng", "f3.dng", "f4.dng"}
			jobs := poolJobs(t, sameSource(small, names...), names...)
			before := started()
			ex := Subprocess{Exe: os.Args[0]}
			for i, j := range jobs {
				j.Timeout = 2 * time.Second
				out := ex.Execute(context.Background(), j)
				_, serr := os.Stat(string(j.Output))
				if i == 1 {
					if !errors.Is(out.Err, c.want) || !strings.Contains(out.Err.Error(), c.text) || !out.Stopped || serr == nil {
						t.Errorf("%s: %v (stopped %v, output %v), want %v", names[i], out.Err, out.Stopped, serr, c.want)
					}
					if c.fault == "crash" && !strings.Contains(out.Messages, "SIGSEGV") {
						t.Errorf("%s: messages %q, want the crash report", names[i], out.Messages)
					}
					continue
				}
				if out.Err != nil || serr != nil || strings.Contains(out.Messages, "SIGSEGV") {
					t.Errorf("%s: %v, output %v, messages %q", names[i], out.Err, serr, out.Messages)
				}
			}
			if n := started() - before; n != 2 {
				t.Errorf("%d workers started, want 2 (the first, then one after file 2)", n)
			}
		})
	}
}

// TestPoolWorkerRecycled: a worker is retired after workerMaxFiles files,
// or when its memory after a file is above workerRecycleRSS, and the next
// file starts a fresh one; a worker killed while idle is replaced without
// failing the next file.
func TestPoolWorkerRecycled(t *testing.T) {
	t.Setenv(FaultEnv, "pool-recycle")
	defer func(n int, rss int64, idle time.Duration) {
		workerMaxFiles, workerRecycleRSS, workerIdle = n, rss, idle
	}(workerMaxFiles, workerRecycleRSS, workerIdle)
	workerMaxFiles, workerRecycleRSS, workerIdle = 2, math.MaxInt64, time.Minute
	small := mustRead(t, filepath.Join(testdata, "raw", "adobesdk_05_PGTM2_unsigned8.dng"))
	names := []string{"r1.dng", "r2.dng", "r3.dng", "r4.dng", "r5.dng"}
	jobs := poolJobs(t, sameSource(small, names...), names...)
	before := started()
	ex := Subprocess{Exe: os.Args[0]}
	for i, j := range jobs[:4] {
		if out := ex.Execute(context.Background(), j); out.Err != nil {
			t.Fatalf("%s: %v", names[i], out.Err)
		}
	}
	if n := started() - before; n != 2 {
		t.Errorf("%d workers started for 4 files at 2 files a worker, want 2", n)
	}
	// The second worker retired after r4: r5 starts a third, which is
	// then killed while idle.
	if out := ex.Execute(context.Background(), jobs[4]); out.Err != nil {
		t.Fatalf("r5: %v", out.Err)
	}
	p := poolFor(os.Args[0])
	p.mu.Lock()
	if len(p.idle) != 1 {
		p.mu.Unlock()
		t.Fatalf("%d idle workers after r5, want 1", len(p.idle))
	}
	w := p.idle[0]
	p.mu.Unlock()
	w.cmd.Process.Kill()
	<-w.exited
	if out := ex.Execute(context.Background(), jobs[0]); out.Err != nil {
		t.Errorf("after the idle worker was killed: %v", out.Err)
	}
	CloseWorkers()
	p.mu.Lock()
	if len(p.idle) != 0 {
		t.Errorf("%d idle workers after CloseWorkers", len(p.idle))
	}
	p.mu.Unlock()

	// A worker whose memory after a file is above the bound is retired:
	// each file gets a fresh one.
	workerMaxFiles, workerRecycleRSS = 100, 1
	before = started()
	for i, j := range jobs[:3] {
		if out := ex.Execute(context.Background(), j); out.Err != nil {
			t.Fatalf("%s: %v", names[i], out.Err)
		}
	}
	if n := started() - before; n != 3 {
		t.Errorf("%d workers started for 3 files, each worker above the memory bound after its file; want 3", n)
	}
}

// TestWorkerSessionFrames: a worker answers each request line in turn
// and exits when its input ends; a later request of another wire version
// is refused (exit status 2) after the replies to those before it.
func TestWorkerSessionFrames(t *testing.T) {
	small := mustRead(t, filepath.Join(testdata, "raw", "adobesdk_05_PGTM2_unsigned8.dng"))
	names := []string{"s1.dng", "s2.dng"}
	jobs := poolJobs(t, sameSource(small, names...), names...)
	var in bytes.Buffer
	for _, j := range jobs {
		b, err := json.Marshal(newWorkerRequest(j))
		if err != nil {
			t.Fatal(err)
		}
		in.Write(append(b, '\n'))
		in.WriteString("threads 1\nunknown line\n")
	}
	good := in.String()
	var stdout, stderr bytes.Buffer
	if code := workerMain(strings.NewReader(good), &stdout, &stderr); code != 0 {
		t.Fatalf("exit status %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d reply lines, want 2: %q", len(lines), stdout.String())
	}
	for i, l := range lines {
		var rep workerReply
		if err := json.Unmarshal([]byte(l), &rep); err != nil {
			t.Fatal(err)
		}
		res, err := rep.result()
		if err != nil || res.Input != string(jobs[i].Input) {
			t.Errorf("reply %d: %v, input %q; want %q", i, err, res.Input, jobs[i].Input)
		}
	}
	stdout.Reset()
	stderr.Reset()
	bad := good + fmt.Sprintf(`{"Version":%d,"Input":"aW4vYS5kbmc="}`, wireVersion+1) + "\n"
	if code := workerMain(strings.NewReader(bad), &stdout, &stderr); code != 2 {
		t.Errorf("a request of another version after two: exit status %d, want 2", code)
	}
	if n := strings.Count(stdout.String(), "\n"); n != 2 || !strings.Contains(stderr.String(), "this worker speaks version") {
		t.Errorf("%d replies, stderr %q; want 2 and the refusal", n, stderr.String())
	}
}
