// Package scripts holds the build scripts' tests; it has no Go code.
package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRoot copies libraw.sh into a temporary repository root, so that its
// build directory is the temporary one.
func fakeRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	b, err := os.ReadFile("libraw.sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "scripts", "libraw.sh"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

func run(t *testing.T, root string, env []string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "libraw.sh"), "build")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// noApt returns a PATH of one directory holding links to the tools the
// script needs, without apt-get: a machine where the source cannot be
// fetched.
func noApt(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, tool := range []string{"bash", "dirname", "cat", "awk", "grep", "head", "mktemp", "mkdir", "sha256sum", "cut", "mv", "rm", "pkg-config"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestChecksumMismatchFails: a tarball that does not match the pinned
// SHA-256 stops the build with a message naming both sums, and is moved
// aside.
func TestChecksumMismatchFails(t *testing.T) {
	root := fakeRoot(t)
	tb := filepath.Join(root, "build", "libraw_0.21.4.orig.tar.gz")
	os.MkdirAll(filepath.Dir(tb), 0o755)
	if err := os.WriteFile(tb, []byte("not the LibRaw tarball\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, root, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root})
	if err == nil {
		t.Fatalf("build succeeded with a wrong tarball:\n%s", out)
	}
	if !strings.Contains(out, "SHA-256") || !strings.Contains(out, "8baeb5253c746441fadad62e9c5c43ff4e414e41b0c45d6dcabccb542b2dff4b") {
		t.Errorf("message does not give the sums:\n%s", out)
	}
	if _, err := os.Stat(tb + ".bad"); err != nil {
		t.Errorf("the bad tarball was not moved aside: %v", err)
	}
}

// TestFallbackNotice: without apt-get the build falls back to the system
// LibRaw with a one-line notice saying what is lost, and builds nothing;
// with CI set that is an error.
func TestFallbackNotice(t *testing.T) {
	root := fakeRoot(t)
	path := noApt(t)
	out, err := run(t, root, []string{"PATH=" + path, "HOME=" + root})
	if err != nil {
		t.Fatalf("fallback failed: %v\n%s", err, out)
	}
	if lines := strings.Count(strings.TrimSpace(out), "\n") + 1; lines != 1 || !strings.Contains(out, "notice:") || !strings.Contains(out, "lossy CR3") {
		t.Errorf("want one notice line naming what is lost, got:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(root, "build", "libraw-0.21.4")); err == nil {
		t.Error("a build directory was created")
	}
	out, err = run(t, root, []string{"PATH=" + path, "HOME=" + root, "CI=true"})
	if err == nil || !strings.Contains(out, "error:") {
		t.Errorf("under CI the fallback must fail: %v\n%s", err, out)
	}
}
