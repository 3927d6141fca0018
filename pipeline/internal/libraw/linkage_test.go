package libraw

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestLinkage checks the LibRaw build the Makefile asked for
// (RAWBATCH_LIBRAW, set by scripts/libraw.sh env): the bundled build is
// LibRaw 0.21.4, statically linked (ldd of the test binary lists no
// libraw) and reported thread-safe although no libraw_r shared object is
// loaded; the system build is a shared libraw_r. Run by hand without make,
// the variable is unset and the test skips, except under CI.
func TestLinkage(t *testing.T) {
	want := os.Getenv("RAWBATCH_LIBRAW")
	if want == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("RAWBATCH_LIBRAW is not set: run the tests through make (scripts/libraw.sh env)")
		}
		t.Skip("RAWBATCH_LIBRAW not set (run through make)")
	}
	if got := Bundled(); got != (want == "bundled") {
		t.Fatalf("Bundled() = %v, RAWBATCH_LIBRAW=%s", got, want)
	}
	if !ThreadSafe() {
		t.Errorf("ThreadSafe() = false for %s LibRaw %s (path %s)", want, Version(), LibraryPath())
	}
	ldd, err := exec.LookPath("ldd")
	if err != nil {
		t.Fatalf("ldd: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(ldd, exe).CombinedOutput()
	if err != nil {
		t.Fatalf("ldd %s: %v\n%s", exe, err, out)
	}
	hasLibRaw := strings.Contains(string(out), "libraw")
	switch want {
	case "bundled":
		if ShortVersion() != "0.21.4" {
			t.Errorf("bundled LibRaw is %s, want 0.21.4", ShortVersion())
		}
		if hasLibRaw {
			t.Errorf("bundled build loads a shared LibRaw:\n%s", out)
		}
	case "system":
		if !hasLibRaw {
			t.Errorf("system build lists no shared libraw:\n%s", out)
		}
	}
}
