// Package testtool finds the external programs that rawbatch's tests use as
// oracles (LibRaw's dcraw_emu and raw-identify, exiftool, headless chromium). Every test that
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
