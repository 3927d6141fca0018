package testtool

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNeedFound returns the path of a program that exists.
func TestNeedFound(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("no sh: %v", err)
	}
	if got := Need(t, "sh"); got != sh {
		t.Errorf("Need(sh) = %q, want %q", got, sh)
	}
}

// TestNeedMissing: a missing tool fails the test under CI and skips it
// elsewhere. The two cases run in a child process each (a failing test
// cannot be observed from inside).
func TestNeedMissing(t *testing.T) {
	if os.Getenv("TESTTOOL_CHILD") != "" {
		Need(t, "rawbatch-no-such-oracle")
		t.Fatal("Need returned for a missing tool")
	}
	for _, c := range []struct {
		ci, want string
		fails    bool
	}{{"", "--- SKIP: TestNeedMissing", false}, {"true", "--- FAIL: TestNeedMissing", true}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestNeedMissing$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTTOOL_CHILD=1", CIEnv+"="+c.ci)
		out, err := cmd.CombinedOutput()
		if (err != nil) != c.fails || !strings.Contains(string(out), c.want) || !strings.Contains(string(out), "rawbatch-no-such-oracle not installed") {
			t.Errorf("CI=%q: err %v, want failure %v and %q in:\n%s", c.ci, err, c.fails, c.want, out)
		}
	}
}

// TestNeedVector: kernels that did not run fail the test under CI unless
// the run is the scalar one (ScalarEnv), and nowhere else; kernels that
// ran pass. Each case runs in a child process.
func TestNeedVector(t *testing.T) {
	if os.Getenv("TESTTOOL_CHILD") != "" {
		NeedVector(t, os.Getenv("TESTTOOL_VEC") != "")
		return
	}
	for _, c := range []struct {
		ci, scalar, vec string
		fails           bool
	}{{"", "", "", false}, {"true", "", "", true}, {"true", "1", "", false}, {"true", "", "1", false}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestNeedVector$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTTOOL_CHILD=1", CIEnv+"="+c.ci, ScalarEnv+"="+c.scalar, "TESTTOOL_VEC="+c.vec)
		out, err := cmd.CombinedOutput()
		if (err != nil) != c.fails {
			t.Errorf("CI=%q %s=%q kernels ran %v: err %v, want failure %v:\n%s", c.ci, ScalarEnv, c.scalar, c.vec != "", err, c.fails, out)
		}
	}
}

// TestOraclesOnlyThroughNeed: no other test file looks an oracle up itself
// (exec.LookPath or exec.Command with the bare name), so none can skip
// silently under CI.
func TestOraclesOnlyThroughNeed(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "build" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for name := range packages {
			for _, call := range []string{`LookPath("` + name + `")`, `Command("` + name + `"`} {
				if strings.Contains(string(b), call) {
					t.Errorf("%s: %s: use testtool.Need(t, %q)", path, call, name)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
