package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// TestReleaseHasNoFaultHook builds rawbatch as a user would (`go build`,
// no test files) and shows that the fault hooks are not in it: it does not
// link package internal/faulttest, and with RAWBATCH_TEST_FAULT asking
// files to crash, hang or hang in their header read, they convert as usual.
func TestReleaseHasNoFaultHook(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the go command is needed to build a release binary")
		}
		t.Skip("no go command")
	}
	deps, err := exec.Command(gobin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(deps), "/faulttest") {
		t.Error("a release build links internal/faulttest")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "rawbatch")
	if out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	in := filepath.Join(dir, "in")
	os.Mkdir(in, 0o755)
	for _, name := range []string{"crash.dng", "hang.dng", "hangheader.dng"} {
		c := synthdng.Chart{W: 48, H: 32, Background: [3]float64{0.18, 0.18, 0.18}}
		w, h, scene := synthdng.ChartScene(c, 1, synthdng.DefaultColorMatrix, 1)
		if err := synthdng.WriteFile(filepath.Join(in, name), synthdng.Spec{Width: w, Height: h, BlackLevel: 256, WhiteLevel: 16383, Orientation: 1, Scene: scene}); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "convert", "-q", "--min-age", "0s", "--timeout", "20s", in, "-o", filepath.Join(dir, "out"))
	cmd.Env = append(os.Environ(), "RAWBATCH_TEST_FAULT=crash=crash.dng,hang=hang.dng,hangheader=hangheader.dng",
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("release rawbatch with RAWBATCH_TEST_FAULT set: %v\n%s", err, out)
	}
	for _, name := range []string{"crash.jpg", "hang.jpg", "hangheader.jpg"} {
		if _, err := os.Stat(filepath.Join(dir, "out", name)); err != nil {
			t.Errorf("%s: %v\n%s", name, err, out)
		}
	}
}
