package main

import (
	"bytes"
	"fmt"
	"image"
	_ "image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/batch"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// syncBuffer is the combined output of a watch process, read while it
// runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// watchProc is a `rawbatch watch` (or convert) process started by a test.
type watchProc struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

// startRB starts the rawbatch binary with args in dir, with env added to
// the test's environment (no user config).
func startRB(t *testing.T, dir string, env []string, args ...string) *watchProc {
	t.Helper()
	cmd := exec.Command(rawbatchBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(dir, ".config"), "RAWBATCH_TEST_FAULT=")
	cmd.Env = append(cmd.Env, env...)
	w := &watchProc{cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = w.out, w.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { w.err = cmd.Wait(); close(w.done) }()
	t.Cleanup(func() {
		select {
		case <-w.done:
		default:
			cmd.Process.Kill()
			<-w.done
		}
	})
	return w
}

// waitLog waits until the output matches re (at most d); it fails the
// test, showing the output, if it does not.
func (w *watchProc) waitLog(t *testing.T, re string, d time.Duration) {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(d)
	for !rx.MatchString(w.out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in %s; output:\n%s", re, d, w.out.String())
		}
		select {
		case <-w.done:
			if !rx.MatchString(w.out.String()) {
				t.Fatalf("exited (%v) without %q; output:\n%s", w.err, re, w.out.String())
			}
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// count is how many times re matches the output.
func (w *watchProc) count(re string) int {
	return len(regexp.MustCompile(re).FindAllStringIndex(w.out.String(), -1))
}

// stop sends SIGTERM and returns the exit status (it fails the test if
// the process has not ended within d).
func (w *watchProc) stop(t *testing.T, d time.Duration) int {
	t.Helper()
	w.cmd.Process.Signal(syscall.SIGTERM)
	return w.wait(t, d)
}

func (w *watchProc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-w.done:
	case <-time.After(d):
		t.Fatalf("still running %s after SIGTERM; output:\n%s", d, w.out.String())
	}
	return w.cmd.ProcessState.ExitCode()
}

// dngBytes is a synthetic DNG of w×h pixels captured at ts, with extra
// tags.
func dngBytes(t *testing.T, w, h int, ts time.Time, tags ...synthdng.Tag) []byte {
	t.Helper()
	c := synthdng.Chart{W: w, H: h, Background: [3]float64{0.18, 0.18, 0.18},
		Patches: []synthdng.Patch{{X0: 0, Y0: 0, X1: w / 2, Y1: h / 2, SRGBLinear: [3]float64{0.6, 0.05, 0.05}}}}
	cw, ch, scene := synthdng.ChartScene(c, 1, synthdng.DefaultColorMatrix, 1)
	p := filepath.Join(t.TempDir(), "x.dng")
	if err := synthdng.WriteFile(p, synthdng.Spec{Width: cw, Height: ch, BlackLevel: 256, WhiteLevel: 16383,
		Orientation: 1, Scene: scene, Timestamp: ts, Tags: tags}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// putFile writes data at path as a copy that is finished when it appears
// (written beside, then renamed in).
func putFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(filepath.Dir(path)), "."+filepath.Base(path)+".part")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func imageWidth(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, _, err := image.DecodeConfig(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return cfg.Width
}

// TestWatchCopiedAndHalves: a file copied in is converted; a file
// written in two halves, the second well after --min-age, is left as
// still being written after the first (truncated) and converted once,
// whole, after the second; a file in a folder made after the start is
// converted (new folders are watched). SIGTERM while idle ends with 0.
func TestWatchCopiedAndHalves(t *testing.T) {
	work := t.TempDir()
	in := filepath.Join(work, "in")
	os.Mkdir(in, 0o755)
	w := startRB(t, work, nil, "watch", "--min-age", "300ms", "in", "-o", "out")
	w.waitLog(t, `watching in \(inotify\)`, 20*time.Second)
	w.waitLog(t, `no RAW files found`, 20*time.Second) // the first run is over

	putFile(t, filepath.Join(in, "a.dng"), dngBytes(t, 48, 32, time.Time{}))
	w.waitLog(t, `converted in/a\.dng -> out/a\.jpg`, 20*time.Second)

	whole := dngBytes(t, 400, 300, time.Time{})
	half := len(whole) / 2
	if err := os.WriteFile(filepath.Join(in, "b.dng"), whole[:half], 0o644); err != nil {
		t.Fatal(err)
	}
	w.waitLog(t, `skipped in/b\.dng: still being written`, 20*time.Second)
	if _, err := os.Stat(filepath.Join(work, "out", "b.jpg")); err == nil {
		t.Fatal("out/b.jpg made from the first half")
	}
	f, err := os.OpenFile(filepath.Join(in, "b.dng"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(whole[half:])
	f.Close()
	w.waitLog(t, `converted in/b\.dng -> out/b\.jpg`, 20*time.Second)
	if n := w.count(`converted in/b\.dng`); n != 1 {
		t.Errorf("b.dng converted %d times, want 1", n)
	}
	if got := imageWidth(t, filepath.Join(work, "out", "b.jpg")); got < 390 {
		t.Errorf("out/b.jpg is %d px wide, want the whole picture (~400)", got)
	}

	os.MkdirAll(filepath.Join(in, "sub", "deeper"), 0o755)
	time.Sleep(100 * time.Millisecond) // the new folder's watch is added from its event
	putFile(t, filepath.Join(in, "sub", "deeper", "c.dng"), dngBytes(t, 48, 32, time.Time{}))
	w.waitLog(t, `converted in/sub/deeper/c\.dng`, 20*time.Second)
	w.waitLog(t, `1 converted, 2 skipped`, 20*time.Second) // the run is over

	if code := w.stop(t, 10*time.Second); code != 0 {
		t.Errorf("exit status %d after SIGTERM while idle, want 0; output:\n%s", code, w.out.String())
	}
	if n := w.count(`converted in/a\.dng`); n != 1 {
		t.Errorf("a.dng converted %d times, want 1", n)
	}
}

// TestWatchRechecksUnsettled: a file left as still being written (cut
// short, and nothing else changes in the folder) is looked at again by
// itself after --min-age, and the summary says watch will, not to run
// rawbatch again.
func TestWatchRechecksUnsettled(t *testing.T) {
	work := t.TempDir()
	in := filepath.Join(work, "in")
	os.Mkdir(in, 0o755)
	w := startRB(t, work, nil, "watch", "--min-age", "300ms", "in", "-o", "out")
	w.waitLog(t, `no RAW files found`, 20*time.Second) // the first run is over
	whole := dngBytes(t, 400, 300, time.Time{})
	if err := os.WriteFile(filepath.Join(in, "cut.dng"), whole[:len(whole)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	w.waitLog(t, `skipped in/cut\.dng: still being written`, 20*time.Second)
	w.waitLog(t, `still being written .* watch looks at them again`, 20*time.Second)
	deadline := time.Now().Add(20 * time.Second)
	for w.count(`skipped in/cut\.dng: still being written`) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("cut.dng not looked at again without a change; output:\n%s", w.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := w.count(`run rawbatch again once the copy has finished`); n != 0 {
		t.Errorf("watch told the user to run rawbatch again (%d times)", n)
	}
	if code := w.stop(t, 10*time.Second); code != 0 {
		t.Errorf("exit status %d after SIGTERM while idle, want 0", code)
	}
}

// TestWatchBurst: 500 files moved in at once (a card copied in) are
// converted as one batch, not file by file.
func TestWatchBurst(t *testing.T) {
	const n = 500
	work := t.TempDir()
	in, stage := filepath.Join(work, "in"), filepath.Join(work, "stage")
	os.Mkdir(in, 0o755)
	os.Mkdir(stage, 0o755)
	data := dngBytes(t, 48, 32, time.Time{})
	for i := range n {
		if err := os.WriteFile(filepath.Join(stage, fmt.Sprintf("IMG_%04d.dng", i)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w := startRB(t, work, nil, "watch", "--min-age", "300ms", "-q", "in", "-o", "out")
	w.waitLog(t, `no RAW files found`, 20*time.Second)
	t0 := time.Now()
	for i := range n {
		name := fmt.Sprintf("IMG_%04d.dng", i)
		if err := os.Rename(filepath.Join(stage, name), filepath.Join(in, name)); err != nil {
			t.Fatal(err)
		}
	}
	w.waitLog(t, `500 converted, 0 skipped, 0 failed`, 60*time.Second)
	t.Logf("500 files converted %.1f s after the first arrived", time.Since(t0).Seconds())
	if k := w.count(`[1-9][0-9]* converted, `); k != 1 {
		t.Errorf("%d runs converted files, want the burst as one; output:\n%s", k, w.out.String())
	}
	if code := w.stop(t, 10*time.Second); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	if m := regexp.MustCompile(`.*waiting .*|.*500 converted.*|.*at most.*`).FindAllString(w.out.String(), -1); m != nil {
		t.Logf("%s", strings.Join(m, "\n"))
	}
	outs, _ := filepath.Glob(filepath.Join(work, "out", "*.jpg"))
	if len(outs) != n {
		t.Errorf("%d outputs, want %d", len(outs), n)
	}
}

// TestWatchRestart: what arrived while watch was down is converted when
// it starts again; what it converted before is up to date; --gallery's
// page lists every file and is refreshed after each batch.
func TestWatchRestart(t *testing.T) {
	work := t.TempDir()
	in := filepath.Join(work, "in")
	os.Mkdir(in, 0o755)
	putFile(t, filepath.Join(in, "a.dng"), dngBytes(t, 48, 32, time.Time{}))
	w := startRB(t, work, nil, "watch", "--min-age", "0s", "in", "-o", "out")
	w.waitLog(t, `converted in/a\.dng`, 20*time.Second)
	w.waitLog(t, `1 converted, `, 20*time.Second)
	if code := w.stop(t, 10*time.Second); code != 0 {
		t.Fatalf("exit status %d", code)
	}
	putFile(t, filepath.Join(in, "b.dng"), dngBytes(t, 48, 32, time.Time{}))
	w = startRB(t, work, nil, "watch", "--min-age", "0s", "--gallery", "in", "-o", "out")
	w.waitLog(t, `1 converted, 1 skipped`, 20*time.Second)
	if !strings.Contains(w.out.String(), "converted in/b.dng") || w.count(`converted in/a\.dng`) != 0 {
		t.Errorf("want b.dng converted and a.dng up to date; output:\n%s", w.out.String())
	}
	// --gallery: the page lists both, and is refreshed after each batch.
	page := filepath.Join(work, "out", "index.html")
	galleryLists := func(names ...string) { // written after the run's summary: waited for
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			b, err := os.ReadFile(page)
			missing := ""
			for _, n := range names {
				if err != nil || !strings.Contains(string(b), ">"+n+"<") {
					missing = n
				}
			}
			if missing == "" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the gallery does not list %s (%v):\n%s", missing, err, b)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	galleryLists("a.dng", "b.dng")
	putFile(t, filepath.Join(in, "c.dng"), dngBytes(t, 48, 32, time.Time{}))
	w.waitLog(t, `1 converted, 2 skipped`, 20*time.Second)
	galleryLists("a.dng", "b.dng", "c.dng")
	w.stop(t, 10*time.Second)
}

// TestWatchSIGTERMDuringConversion: SIGTERM while a file converts (held
// by the gate fault hook) starts nothing more; the file finishes within
// --grace and is recorded; with a short --grace, a file that does not
// finish is stopped and nothing of it is left.
func TestWatchSIGTERMDuringConversion(t *testing.T) {
	for _, finish := range []bool{true, false} {
		t.Run(fmt.Sprintf("finishes=%v", finish), func(t *testing.T) {
			work := t.TempDir()
			in := filepath.Join(work, "in")
			os.Mkdir(in, 0o755)
			putFile(t, filepath.Join(in, "g.dng"), dngBytes(t, 48, 32, time.Time{}))
			gate := filepath.Join(work, "gate")
			grace := "30s"
			if !finish {
				grace = "500ms"
			}
			w := startRB(t, work, []string{"RAWBATCH_TEST_FAULT=gate=g.dng", "RAWBATCH_TEST_GATE=" + gate},
				"watch", "--min-age", "0s", "--grace", grace, "in", "-o", "out")
			w.waitGate(t, gate)
			w.cmd.Process.Signal(syscall.SIGTERM)
			w.waitLog(t, `starting no more files`, 10*time.Second)
			if finish {
				os.WriteFile(gate, nil, 0o644)
			}
			code := w.wait(t, 20*time.Second)
			out := filepath.Join(work, "out", "g.jpg")
			if finish {
				if _, err := os.Stat(out); err != nil || !strings.Contains(w.out.String(), "converted in/g.dng") {
					t.Fatalf("g.dng not finished within --grace (%v); output:\n%s", err, w.out.String())
				}
				// Recorded: a convert run finds it up to date.
				c := startRB(t, work, nil, "convert", "--min-age", "0s", "in", "-o", "out")
				c.wait(t, 30*time.Second)
				if !strings.Contains(c.out.String(), "skipped in/g.dng (up to date)") {
					t.Errorf("not recorded; convert said:\n%s", c.out.String())
				}
				return
			}
			if code != ExitInterrupted {
				t.Errorf("exit status %d, want %d (interrupted)", code, ExitInterrupted)
			}
			left, _ := os.ReadDir(filepath.Join(work, "out"))
			for _, e := range left {
				if e.Name() != ".rawbatch" {
					t.Errorf("left in OUTDIR: %s", e.Name())
				}
			}
		})
	}
}

// procCPUTicks is utime+stime of process pid in clock ticks
// (/proc/PID/stat fields 14 and 15).
func procCPUTicks(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // fields from 3 (state) on
	u, _ := strconv.Atoi(fields[11])
	st, _ := strconv.Atoi(fields[12])
	return u + st
}

// TestWatchIdleCPU: watching, with nothing arriving, uses less than 1 %
// of a core over 10 s (no busy polling).
func TestWatchIdleCPU(t *testing.T) {
	work := t.TempDir()
	in := filepath.Join(work, "in")
	os.MkdirAll(filepath.Join(in, "a", "b"), 0o755)
	putFile(t, filepath.Join(in, "a.dng"), dngBytes(t, 48, 32, time.Time{}))
	w := startRB(t, work, nil, "watch", "--min-age", "0s", "in", "-o", "out")
	w.waitLog(t, `1 converted, `, 20*time.Second)
	time.Sleep(500 * time.Millisecond) // the run's idle workers exit
	const clkTck = 100                 // USER_HZ on Linux
	before := procCPUTicks(t, w.cmd.Process.Pid)
	time.Sleep(10 * time.Second)
	used := procCPUTicks(t, w.cmd.Process.Pid) - before
	t.Logf("idle for 10 s: %d clock ticks of CPU (%.2f %% of a core)", used, float64(used)/clkTck/10*100)
	if used >= clkTck/10 { // 1 % of 10 s
		t.Errorf("idle watch used %d ticks in 10 s, want < %d (1 %% of a core)", used, clkTck/10)
	}
	w.stop(t, 10*time.Second)
}

// TestWatchPoll: with --poll (no inotify: as on a network mount, where
// other hosts' writes raise no event) a walk at each interval finds a
// new file.
func TestWatchPoll(t *testing.T) {
	work := t.TempDir()
	in := filepath.Join(work, "in")
	os.Mkdir(in, 0o755)
	w := startRB(t, work, nil, "watch", "--poll", "200ms", "--min-age", "200ms", "in", "-o", "out")
	w.waitLog(t, `watching in \(a walk every 200ms\)`, 20*time.Second)
	w.waitLog(t, `no RAW files found`, 20*time.Second)
	putFile(t, filepath.Join(in, "p.dng"), dngBytes(t, 48, 32, time.Time{}))
	w.waitLog(t, `converted in/p\.dng -> out/p\.jpg`, 20*time.Second)
	w.waitLog(t, `1 converted, `, 20*time.Second)
	if code := w.stop(t, 10*time.Second); code != 0 {
		t.Errorf("exit status %d", code)
	}
}

// galleryTags are a lens model and an XMP packet with a rating and label.
func galleryTags() []synthdng.Tag {
	xmp := `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">` +
		`<rdf:Description xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmp:Rating="3" xmp:Label="Green"/></rdf:RDF></x:xmpmeta>`
	return []synthdng.Tag{
		{Dir: tifftag.DirExif, ID: tifftag.LensModel, ASCII: "Test 50mm F1.8"},
		{Dir: tifftag.DirImage, ID: 700, Bytes: []byte(xmp)},
	}
}

// TestWatchExitStatus: SIGINT while watch is idle (sent by the idle
// hook once the first run is over) ends it with the session's summary,
// and with exit status 3 when a file failed during the session, 0 when
// none did.
func TestWatchExitStatus(t *testing.T) {
	for _, c := range []struct {
		name string
		bad  bool
		want int
		line string
	}{
		{"failed", true, ExitFailures, `watch stopped: this session converted 1 file; 1 failed \(not converted since\):\n.*  .*in/bad\.dng: not a raw file`},
		{"clean", false, ExitOK, `watch stopped: this session converted 1 file; none failed`},
	} {
		t.Run(c.name, func(t *testing.T) {
			work := t.TempDir()
			in := filepath.Join(work, "in")
			os.Mkdir(in, 0o755)
			putFile(t, filepath.Join(in, "good.dng"), dngBytes(t, 48, 32, time.Time{}))
			if c.bad {
				putFile(t, filepath.Join(in, "bad.dng"), []byte("not a raw file, a text file\n"))
			}
			w := startRB(t, work, []string{idleSignalEnv + "=1"}, "watch", "--min-age", "0s", "in", "-o", "out")
			if code := w.wait(t, 60*time.Second); code != c.want {
				t.Errorf("exit status %d after SIGINT while idle, want %d; output:\n%s", code, c.want, w.out.String())
			}
			if !regexp.MustCompile(c.line).MatchString(w.out.String()) {
				t.Errorf("no %q in the output:\n%s", c.line, w.out.String())
			}
		})
	}
}

// TestWatchFailedThenStopped: a file fails in one run; SIGINT while a
// later run converts another file (held by the gate fault hook, past a
// short --grace) stops that one and ends watch with exit status 3 (the
// failure), not 130, and the session's summary names the failed file.
func TestWatchFailedThenStopped(t *testing.T) {
	work := t.TempDir()
	in := filepath.Join(work, "in")
	os.Mkdir(in, 0o755)
	putFile(t, filepath.Join(in, "bad.dng"), []byte("not a raw file, a text file\n"))
	gate := filepath.Join(work, "gate")
	w := startRB(t, work, []string{"RAWBATCH_TEST_FAULT=gate=g.dng", "RAWBATCH_TEST_GATE=" + gate},
		"watch", "--min-age", "0s", "--grace", "500ms", "in", "-o", "out")
	w.waitLog(t, `0 converted, 0 skipped, 1 failed`, 20*time.Second) // the first run is over
	putFile(t, filepath.Join(in, "g.dng"), dngBytes(t, 48, 32, time.Time{}))
	w.waitGate(t, gate)
	w.cmd.Process.Signal(syscall.SIGINT)
	if code := w.wait(t, 20*time.Second); code != ExitFailures {
		t.Errorf("exit status %d, want %d (a file failed); output:\n%s", code, ExitFailures, w.out.String())
	}
	if _, err := os.Stat(filepath.Join(work, "out", "g.jpg")); err == nil {
		t.Error("g.dng converted past --grace")
	}
	want := `watch stopped: this session converted 0 files; 1 failed \(not converted since\):\n.*  .*in/bad\.dng: not a raw file`
	if !regexp.MustCompile(want).MatchString(w.out.String()) {
		t.Errorf("no %q in the output:\n%s", want, w.out.String())
	}
}

// TestWatchSession: a file that failed and was converted by a later run
// of the session does not count as failed; one that failed again does.
func TestWatchSession(t *testing.T) {
	fail := func(in string) batch.FileResult {
		return batch.FileResult{Task: batch.Task{Input: in}, Status: batch.StatusFailed, Err: fmt.Errorf("%s: not a raw file", in)}
	}
	conv := func(in string) batch.FileResult {
		return batch.FileResult{Task: batch.Task{Input: in}, Status: batch.StatusConverted}
	}
	s := newWatchSession()
	s.add([]batch.FileResult{fail("a.dng"), fail("b.dng"), conv("c.dng")})
	s.add([]batch.FileResult{conv("a.dng"), fail("b.dng")})
	var out bytes.Buffer
	err := s.end(newReporter(&out, &out, false, logText, 0), nil)
	if code := exitCode(err); code != ExitFailures {
		t.Errorf("exit status %d, want %d", code, ExitFailures)
	}
	if want := "this session converted 2 files; 1 failed (not converted since):"; !strings.Contains(out.String(), want) ||
		strings.Contains(out.String(), "a.dng: not a raw file") || !strings.Contains(out.String(), "b.dng: not a raw file") {
		t.Errorf("want %q listing b.dng only:\n%s", want, out.String())
	}
	s.add([]batch.FileResult{conv("b.dng")})
	out.Reset()
	if code := exitCode(s.end(newReporter(&out, &out, false, logText, 0), nil)); code != ExitOK {
		t.Errorf("all converted since: exit status %d, want 0:\n%s", code, out.String())
	}
}

// waitGate waits until w's conversion held at the gate hook
// (RAWBATCH_TEST_GATE=gate) has reached it, failing the test after 20 s.
func (w *watchProc) waitGate(t *testing.T, gate string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(gate + ".ready"); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the conversion never reached the gate; output:\n%s", w.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lookEveryEnv, in the tests only, sets how often watch checks that its
// DIRs are still there (watchLookEvery, inotify mode), and looksEnv names
// a file that gets a line each time it does (lookHook): a test waits for
// looks, not for time.
const (
	lookEveryEnv = "RAWBATCH_TEST_LOOK_EVERY"
	looksEnv     = "RAWBATCH_TEST_LOOKS"
)

func init() {
	if d, err := time.ParseDuration(os.Getenv(lookEveryEnv)); err == nil {
		watchLookEvery = d
	}
	if p := os.Getenv(looksEnv); p != "" {
		lookHook = func() {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			if err != nil {
				panic(err) // the test cannot count looks
			}
			f.WriteString("look\n")
			f.Close()
		}
	}
}

// waitLooks waits until watch has checked its DIRs n more times than
// when the count was before (the lines of looks), failing the test after
// 20 s; it returns the count.
func (w *watchProc) waitLooks(t *testing.T, looks string, before, n int) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(looks)
		if k := bytes.Count(b, []byte("\n")); k >= before+n {
			return k
		}
		if time.Now().After(deadline) {
			t.Fatalf("watch did not look at its DIRs %d times; output:\n%s", n, w.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWatchDirGoneAndBack: a watched folder removed with what it held
// (as by rm -rf, a card unmounted) does not end watch, in either mode: it warns once, however
// many times it looks while the folder is gone, says when the folder is
// back, and converts files that then arrive in it and in a subfolder
// that came back with it (inotify: the new directories are watched, not
// the removed ones). SIGTERM ends it as usual, with the summary and 0.
func TestWatchDirGoneAndBack(t *testing.T) {
	for _, mode := range []struct {
		name string
		args []string
		how  string
	}{
		{"inotify", nil, `inotify`},
		{"poll", []string{"--poll", "200ms"}, `a walk every 200ms`},
	} {
		t.Run(mode.name, func(t *testing.T) {
			work := t.TempDir()
			in := filepath.Join(work, "in")
			os.Mkdir(in, 0o755)
			putFile(t, filepath.Join(in, "a.dng"), dngBytes(t, 48, 32, time.Time{}))
			looks := filepath.Join(work, "looks")
			args := append([]string{"watch", "--min-age", "200ms", "in", "-o", "out"}, mode.args...)
			w := startRB(t, work, []string{lookEveryEnv + "=100ms", looksEnv + "=" + looks}, args...)
			w.waitLog(t, `watching in \(`+mode.how+`\)`, 20*time.Second)
			w.waitLog(t, `1 converted, 0 skipped`, 20*time.Second) // the first run is over

			if err := os.RemoveAll(in); err != nil {
				t.Fatal(err)
			}
			w.waitLog(t, `input in is gone; waiting for it to come back \(looking every `, 20*time.Second)
			n := w.waitLooks(t, looks, 0, 0)
			w.waitLooks(t, looks, n, 3) // looked again while gone: no second warning
			if err := os.MkdirAll(filepath.Join(in, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			w.waitLog(t, `input in is back; converting what is in it`, 20*time.Second)
			w.waitLog(t, `(?s)is back.*no RAW files found`, 20*time.Second) // its run is over

			putFile(t, filepath.Join(in, "sub", "s.dng"), dngBytes(t, 48, 32, time.Time{}))
			w.waitLog(t, `converted in/sub/s\.dng -> out/sub/s\.jpg`, 20*time.Second)
			putFile(t, filepath.Join(in, "x.dng"), dngBytes(t, 48, 32, time.Time{}))
			// The run's summary: SIGTERM during a run would stop it (130).
			w.waitLog(t, `(?s)converted in/x\.dng -> out/x\.jpg.*[0-9]+ converted, [0-9]+ skipped, 0 failed`, 20*time.Second)
			if k := w.count(`input in is gone`); k != 1 {
				t.Errorf("warned %d times that in is gone, want once; output:\n%s", k, w.out.String())
			}
			if code := w.stop(t, 10*time.Second); code != 0 {
				t.Errorf("exit status %d after SIGTERM, want 0; output:\n%s", code, w.out.String())
			}
			if want := `watch stopped: this session converted 3 files; none failed`; !regexp.MustCompile(want).MatchString(w.out.String()) {
				t.Errorf("no %q in the output:\n%s", want, w.out.String())
			}
		})
	}
}
