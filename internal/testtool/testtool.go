// Package testtool finds the external programs that rawbatch's tests use as
// oracles (LibRaw's dcraw_emu and raw-identify, exiftool, avifdec, djxl,
// headless chromium). Every test that
// needs one asks Need, so a missing oracle is handled in one way: when the
// environment variable CI is set (.ci/run sets it, and CI installs the
// tools), a missing tool fails the test, so CI cannot pass with the colour,
// size or metadata checks not run; elsewhere the test is skipped, saying
// which package installs the tool. Only _test.go files import it.
package testtool

import (
	"os"
	"os/exec"
	"testing"
)

// CIEnv is the environment variable that, when not empty, makes a missing
// tool a failure.
const CIEnv = "CI"

// packages names the Debian package that installs each known oracle.
var packages = map[string]string{
	"dcraw_emu":       "libraw-bin",
	"raw-identify":    "libraw-bin",
	"exiftool":        "libimage-exiftool-perl",
	"simple_dcraw":    "libraw-bin",
	"unprocessed_raw": "libraw-bin",
	"chromium":        "chromium",
	"avifdec":         "libavif-bin",
	"djxl":            "libjxl-tools",
	"jxlinfo":         "libjxl-tools",
	"objdump":         "binutils",
}

// Need returns the path of the program name found in $PATH (the Makefile
// puts the bundled LibRaw's dcraw_emu and raw-identify first). When it is
// not found, Need calls t.Fatalf if $CI is set and t.Skipf otherwise; it
// does not return then.
func Need(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	msg := name + " not installed"
	if pkg := packages[name]; pkg != "" {
		msg += " (Debian: " + pkg + ")"
	}
	if os.Getenv(CIEnv) != "" {
		t.Fatalf("%s: %v; %s is set, so the oracle must be there", msg, err, CIEnv)
	}
	t.Skipf("%s: %v", msg, err)
	return ""
}

// ScalarEnv, when not empty, says the tests run on a build without Go's
// SIMD support on purpose (the Makefile's second run of the packages with
// AVX2 kernels, to test their scalar loops alone).
const ScalarEnv = "RAWBATCH_SCALAR"

// NeedVector is Need for a package's AVX2 kernels (vec: whether they run,
// the package's own flag): when CI is set and ScalarEnv is not, kernels
// that do not run (a build without GOEXPERIMENT=simd, or a CPU without
// AVX2) fail the test, so CI cannot pass without checking them against
// their scalar loops; elsewhere the test goes on with the scalar loops.
func NeedVector(t testing.TB, vec bool) {
	t.Helper()
	if vec || os.Getenv(CIEnv) == "" || os.Getenv(ScalarEnv) != "" {
		return
	}
	t.Fatalf("the AVX2 kernels did not run (built without GOEXPERIMENT=simd, or no AVX2); %s is set and %s is not, so they must", CIEnv, ScalarEnv)
}
