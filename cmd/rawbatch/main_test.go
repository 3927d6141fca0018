package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	_ "image/png"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/rawbatch/rawbatch/batch"
	"github.com/rawbatch/rawbatch/internal/faulttest" // the fault hooks, in test binaries only
	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// TestMain makes the test binary act as rawbatch when the scripts run it.
func TestMain(m *testing.M) {
	testscript.RunMain(m, map[string]func() int{
		"rawbatch": func() int { return run(os.Args[1:]) },
	})
}

// TestScripts runs the CLI scripts in testdata/script (txtar files; see
// github.com/rogpeppe/go-internal/testscript for the language). Extra
// commands: rb, interrupt, truncate, synthdng, mkjpeg, imgsize.
func TestScripts(t *testing.T) {
	td, err := filepath.Abs("../../testdata")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("TESTDATA", td)
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, ".config"))
			// Scripts convert files they have just copied; settle.txtar
			// tests --min-age itself.
			env.Setenv("RAWBATCH_MIN_AGE", "0s")
			env.Setenv("NCPU", strconv.Itoa(runtime.NumCPU())) // threads_admission.txtar
			return nil
		},
		Condition: libRawCondition,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"rb":        cmdRB,
			"interrupt": cmdInterrupt,
			"truncate":  cmdTruncate,
			"synthdng":  cmdSynthDNG,
			"templeft":  cmdTempLeft,
			"mkjpeg":    cmdMkJPEG,
			"imgsize":   cmdImgSize,
			"report":    cmdReport,
			"age":       cmdAge,
			"newline":   cmdNewline,
			"casefold":  cmdCasefold,
			"deadpipe":  cmdDeadPipe,
			"schema":    cmdSchema,
			"rbpaths":   cmdReportPaths,
			"jsonl":     cmdJSONLines,
			"dryreal":   cmdDryReal,
			"admitnear": cmdAdmitNear,
			"waitfile":  cmdWaitFile,
			"setfrom":   cmdSetFrom,
			"imgdiff":   cmdImgDiff,
			"synthat":   cmdSynthDNGAt,
			"nomatrix":  cmdNoMatrix,
			"synthsize": cmdSynthSize,
			"planned":   cmdPlanned,
			"dryplan":   cmdDryPlan,
			// highlights_script_test.go: clipped highlights, white balance
			"synthclip":   cmdSynthClip,
			"clipneutral": cmdClipNeutral,
			"wbreport":    cmdWBReport,
			// opcodes_script_test.go: DNG opcode lists
			"synthopcode": cmdSynthOpcode,
			// denoise_script_test.go: noise reduction, capture sharpening
			"synthnoisy": cmdSynthNoisy,
			// queue_script_test.go: the broker's port (queue_basic.txtar)
			"freeport": cmdFreePort,
			"waitport": cmdWaitPort,
			"httpget":  cmdHTTPGet,
			// queue_script_test.go: a test PKI (queue_tls.txtar)
			"tlscerts": cmdTLSCerts,
			"noargv":   cmdNoArgv,
			// presets_test.go: config presets (presets.txtar)
			"synthcam": cmdSynthCam,
			"presetof": cmdPresetOf,
			// sidecar_script_test.go: colours of an output's pixels
			"imgcolour": cmdImgColour,
		},
	})
}

// rb STATUS ARGS...: run rawbatch ARGS and require exit status STATUS; its
// output is then checked with stdout/stderr as after exec.
func cmdRB(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: rb STATUS ARGS...")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	err = ts.Exec("rawbatch", args[1:]...)
	got := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		got = ee.ExitCode()
	} else if err != nil {
		ts.Fatalf("rawbatch: %v", err)
	}
	if got != want {
		ts.Fatalf("rawbatch exited %d, want %d", got, want)
	}
}

// interrupt WHEN[,WHEN2] ARGS...: start rawbatch ARGS, send it SIGINT once
// WHEN holds (and again once WHEN2 holds), and require exit status 130. A
// WHEN is a path (relative to $WORK), which must exist, as a test hook's pid
// file or gate .ready file does once the conversion reached the hook, or
// stderr:TEXT, which rawbatch's standard error must contain (the message
// that shows the previous signal was taken). Its stderr is written to the
// file interrupt.stderr.
func cmdInterrupt(ts *testscript.TestScript, neg bool, args []string) {
	var stderr lockedBuffer
	err := signalWhen(ts, syscall.SIGINT, args, &stderr)
	os.WriteFile(ts.MkAbs("interrupt.stderr"), []byte(stderr.String()), 0o644)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		ts.Fatalf("interrupted rawbatch: %v, want exit status 130\n%s", err, stderr.String())
	}
}

// lockedBuffer is a bytes.Buffer written by a command's stderr copier while
// the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// signalWhen runs rawbatch args[1:] in the script's directory and
// environment, sends sig once each condition of args[0] holds (see
// interrupt), at least signalEcho apart, and returns its Wait error;
// stderr receives its standard error. A condition that does not hold within a minute (the run is surely
// stuck) fails the script, after killing rawbatch.
func signalWhen(ts *testscript.TestScript, sig syscall.Signal, args []string, stderr *lockedBuffer) error {
	if len(args) < 2 {
		ts.Fatalf("usage: interrupt WHEN[,WHEN2] ARGS...")
	}
	path, err := lookPathIn("rawbatch", ts.Getenv("PATH"))
	ts.Check(err)
	cmd := exec.Command(path, args[1:]...)
	cmd.Dir = ts.Getenv("WORK")
	cmd.Env = append(os.Environ(), "PATH="+ts.Getenv("PATH"))
	for _, k := range []string{"RAWBATCH_MIN_AGE", batch.FaultEnv, faulttest.PIDFileEnv, faulttest.GateEnv} {
		cmd.Env = append(cmd.Env, k+"="+ts.Getenv(k))
	}
	cmd.Stderr = stderr
	ts.Check(cmd.Start())
	var sent time.Time
	for _, when := range strings.Split(args[0], ",") {
		holds := func() bool {
			if text, ok := strings.CutPrefix(when, "stderr:"); ok {
				return strings.Contains(stderr.String(), text)
			}
			_, err := os.Stat(ts.MkAbs(when))
			return err == nil
		}
		deadline := time.Now().Add(time.Minute)
		for !holds() {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				ts.Fatalf("interrupt: %q did not hold within a minute\n%s", when, stderr.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		// A signal within signalEcho of the one before is taken for
		// its echo (timeout(1)'s second one), not for a second request.
		if wait := signalEcho + 50*time.Millisecond - time.Since(sent); !sent.IsZero() && wait > 0 {
			time.Sleep(wait)
		}
		ts.Check(cmd.Process.Signal(sig))
		sent = time.Now()
	}
	return cmd.Wait()
}

func lookPathIn(name, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New(name + " not found in PATH")
}

// truncate SRC DST PERCENT: write the first PERCENT % of SRC to DST.
func cmdTruncate(ts *testscript.TestScript, neg bool, args []string) {
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	pct, err := strconv.Atoi(args[2])
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), b[:len(b)*pct/100], 0o644))
}

// templeft SRC OUTPUT: copy SRC to a temporary file for OUTPUT, named
// and marked as rawbatch names and marks it (pipeline.NewTempName,
// pipeline.MarkTemp), as a killed run leaves it.
func cmdTempLeft(ts *testscript.TestScript, neg bool, args []string) {
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	name := pipeline.NewTempName(ts.MkAbs(args[1]))
	ts.Check(os.WriteFile(name, b, 0o600))
	pipeline.MarkTemp(name)
}

// synthdng DST ORIENTATION: write a small synthetic chart DNG (48×32
// displayed pixels) with the given EXIF orientation.
func cmdSynthDNG(ts *testscript.TestScript, neg bool, args []string) {
	o, err := strconv.Atoi(args[1])
	ts.Check(err)
	c := synthdng.Chart{W: 48, H: 32, Background: [3]float64{0.18, 0.18, 0.18},
		Patches: []synthdng.Patch{{X0: 0, Y0: 0, X1: 8, Y1: 8, SRGBLinear: [3]float64{0.6, 0.05, 0.05}}}}
	w, h, scene := synthdng.ChartScene(c, o, synthdng.DefaultColorMatrix, 1)
	ts.Check(synthdng.WriteFile(ts.MkAbs(args[0]), synthdng.Spec{Width: w, Height: h, BlackLevel: 256,
		WhiteLevel: 16383, Orientation: o, Scene: scene}))
}

// mkjpeg DST: write a small real JPEG image.
func cmdMkJPEG(ts *testscript.TestScript, neg bool, args []string) {
	img := image.NewRGBA(image.Rect(0, 0, 16, 16))
	for i := range img.Pix {
		img.Pix[i] = byte(i)
	}
	img.Set(0, 0, color.White)
	f, err := os.Create(ts.MkAbs(args[0]))
	ts.Check(err)
	ts.Check(jpeg.Encode(f, img, nil))
	ts.Check(f.Close())
}

// imgsize FILE W H: FILE decodes as an image of W×H pixels.
func cmdImgSize(ts *testscript.TestScript, neg bool, args []string) {
	f, err := os.Open(ts.MkAbs(args[0]))
	ts.Check(err)
	defer f.Close()
	cfg, _, err := image.DecodeConfig(f)
	ts.Check(err)
	w, _ := strconv.Atoi(args[1])
	h, _ := strconv.Atoi(args[2])
	if (cfg.Width == w && cfg.Height == h) == neg {
		ts.Fatalf("%s is %dx%d, want %dx%d", args[0], cfg.Width, cfg.Height, w, h)
	}
}

// report FIELD OP N FILES...: the sum of summary.FIELD over the --report
// JSON files compares to N (OP is ==, >= or <=).
func cmdReport(ts *testscript.TestScript, neg bool, args []string) {
	field, op := args[0], args[1]
	want, err := strconv.Atoi(args[2])
	ts.Check(err)
	sum := 0
	for _, f := range args[3:] {
		var r struct{ Summary map[string]int }
		ts.Check(json.Unmarshal([]byte(ts.ReadFile(f)), &r))
		sum += r.Summary[field]
	}
	ok := sum == want
	switch op {
	case ">=":
		ok = sum >= want
	case "<=":
		ok = sum <= want
	}
	if !ok {
		ts.Fatalf("summary.%s sums to %d over %v, want %s %d", field, sum, args[3:], op, want)
	}
}

// age FILE SECONDS: set FILE's modification time SECONDS in the past.
func cmdAge(ts *testscript.TestScript, neg bool, args []string) {
	sec, err := strconv.Atoi(args[1])
	ts.Check(err)
	t := time.Now().Add(-time.Duration(sec) * time.Second)
	ts.Check(os.Chtimes(ts.MkAbs(args[0]), t, t))
}

// newline DIR NAME SRC: copy SRC to DIR/NAME, NAME read with Go string
// escapes (a backslash-n, a backslash-xff): the script language cannot write
// a newline or a byte that is not UTF-8 in a name.
func cmdNewline(ts *testscript.TestScript, neg bool, args []string) {
	b, err := os.ReadFile(ts.MkAbs(args[2]))
	ts.Check(err)
	name, err := strconv.Unquote(`"` + args[1] + `"`)
	ts.Check(err)
	ts.Check(os.WriteFile(filepath.Join(ts.MkAbs(args[0]), name), b, 0o644))
}

// casefold DIR: no two files under DIR have paths that differ only in case
// (they would be one file on a case-insensitive volume); .rawbatch is not
// looked at.
func cmdCasefold(ts *testscript.TestScript, neg bool, args []string) {
	root := ts.MkAbs(args[0])
	seen := map[string]string{}
	ts.Check(filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".rawbatch" {
			return filepath.SkipDir
		}
		k := strings.ToLower(path)
		if prev, ok := seen[k]; ok {
			ts.Fatalf("%s and %s differ only in case", prev, path)
		}
		seen[k] = path
		return nil
	}))
}
