package main

import (
	"encoding/json"
	"errors"
	"os/exec"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// dryreal ARGS...: `rawbatch convert --dry-run ARGS` exits 1 (could not
// start) exactly when `rawbatch convert ARGS` does. It makes a test of
// writability meaningful whoever runs it: root writes through permission
// bits, others do not.
func cmdDryReal(ts *testscript.TestScript, neg bool, args []string) {
	status := func(a ...string) int {
		err := ts.Exec("rawbatch", append([]string{"convert"}, a...)...)
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		ts.Check(err)
		return 0
	}
	dry := status(append([]string{"--dry-run"}, args...)...)
	real := status(args...)
	ts.Logf("dry run: exit %d; run: exit %d", dry, real)
	if (dry == ExitUsage) != (real == ExitUsage) {
		ts.Fatalf("the dry run exited %d but the run %d", dry, real)
	}
}

// admitnear ARGS...: a file's admission by `rawbatch convert --dry-run
// --force ARGS` is the run's, at a memory budget one byte below the need
// the dry run reports (both refuse it: exit status 3) and at that need
// (both convert it: 0). ARGS name one file. The need is read from a dry
// run at an ample budget (--log-format json, estimated_bytes).
func cmdAdmitNear(ts *testscript.TestScript, neg bool, args []string) {
	status := func(a ...string) int {
		err := ts.Exec("rawbatch", append([]string{"convert", "--force"}, a...)...)
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		ts.Check(err)
		return 0
	}
	if status(append([]string{"--dry-run", "--log-format", "json", "--mem-budget", "1TiB"}, args...)...) != 0 {
		ts.Fatalf("the dry run at an ample budget failed")
	}
	var ev struct {
		EstimatedBytes int64 `json:"estimated_bytes"`
	}
	for _, line := range strings.Split(ts.ReadFile("stdout"), "\n") {
		if strings.Contains(line, `"event":"plan"`) {
			ts.Check(json.Unmarshal([]byte(line), &ev))
		}
	}
	if ev.EstimatedBytes <= 0 {
		ts.Fatalf("no estimated_bytes in the dry run's plan")
	}
	for _, c := range []struct {
		budget int64
		want   int
	}{{ev.EstimatedBytes - 1, ExitFailures}, {ev.EstimatedBytes, ExitOK}} {
		b := []string{"--mem-budget", strconv.FormatInt(c.budget, 10)}
		dry := status(append(append([]string{"--dry-run"}, b...), args...)...)
		real := status(append(b, args...)...)
		ts.Logf("budget %d (need %d): dry run exit %d, run exit %d", c.budget, ev.EstimatedBytes, dry, real)
		if dry != real || real != c.want {
			ts.Fatalf("budget %d, need %d: the dry run exited %d, the run %d; want %d both", c.budget, ev.EstimatedBytes, dry, real, c.want)
		}
	}
}
