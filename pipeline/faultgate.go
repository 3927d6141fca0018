package pipeline

import (
	"os"
	"time"
)

// GateEnv names the environment variable of the test-only gate used with
// the fault hook "gate=NAME" (FaultEnv): the worker converting NAME creates
// the file $RAWBATCH_TEST_GATE.ready, then waits before decoding until the
// file $RAWBATCH_TEST_GATE exists. Scripts use it to hold one run in the
// middle of a conversion, with its locks taken, while another run starts.
const GateEnv = "RAWBATCH_TEST_GATE"

// testGate is the "gate" fault: it announces that it is waiting and waits
// for the gate to open (polling every 10 ms; no limit, the run's --timeout
// kills a worker left waiting).
func testGate() {
	gate := os.Getenv(GateEnv)
	if gate == "" {
		return
	}
	os.WriteFile(gate+".ready", nil, 0o644)
	for {
		if _, err := os.Stat(gate); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
