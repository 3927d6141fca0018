package batch

import (
	"os"
	"testing"
)

// TestMain lets the test binary act as a worker (`TESTBINARY worker`):
// tests set Runner.Exe to the test binary.
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == "worker" {
		os.Exit(WorkerMain(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}
