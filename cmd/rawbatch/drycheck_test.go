package main

import (
	"errors"
	"os/exec"

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
