// Package docs holds the test of docs/architecture.md and the import
// rules; it has no Go code.
package docs

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/rawbatch/rawbatch"

// pkg is what `go list -json` says of one package.
type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
	CgoFiles   []string
}

// listPackages runs `go list -e -json ./...` at the module root and
// returns the packages by path relative to the module ("" for the root).
func listPackages(t *testing.T) map[string]pkg {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		goCmd = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(goCmd, "list", "-e", "-json", "./...")
	cmd.Dir = ".."
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs[rel(p.ImportPath)] = p
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no packages")
	}
	return pkgs
}

// rel returns path relative to the module, or "" with ok false when path
// is not rawbatch's.
func relOK(path string) (string, bool) {
	if path == module {
		return "", true
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return r, ok
}

func rel(path string) string { r, _ := relOK(path); return r }

// ours returns the rawbatch packages among paths, relative to the module.
func ours(paths []string) []string {
	var r []string
	for _, p := range paths {
		if q, ok := relOK(p); ok {
			r = append(r, q)
		}
	}
	return r
}

// under reports whether p is dir or below it.
func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

var lineRE = regexp.MustCompile("^- `([^`]+)`: .*May import: (.*)\\.$")

// readLines parses docs/architecture.md's package lines: package → the
// packages it may import (patterns ending in "/..." allowed).
func readLines(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := map[string][]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "- `") || !strings.Contains(l, "May import:") {
			continue
		}
		m := lineRE.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("architecture.md: malformed package line (want \"- `path`: what it owns. May import: `a`, `b`.\" or \"nothing of ours.\"): %s", l)
			continue
		}
		if _, dup := lines[m[1]]; dup {
			t.Errorf("architecture.md: two lines for %s", m[1])
		}
		allowed := []string{}
		if m[2] != "nothing of ours" {
			for _, a := range strings.Split(m[2], ",") {
				a = strings.TrimSpace(a)
				if len(a) < 2 || a[0] != '`' || a[len(a)-1] != '`' {
					t.Errorf("architecture.md: %s: %q is not a `package`", m[1], a)
					continue
				}
				allowed = append(allowed, a[1:len(a)-1])
			}
		}
		lines[m[1]] = allowed
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

func allows(allowed []string, p string) bool {
	for _, a := range allowed {
		if d, ok := strings.CutSuffix(a, "/..."); ok && under(p, d) || a == p {
			return true
		}
	}
	return false
}

// TestArchitectureLines: every package has its line in
// docs/architecture.md, every line names a package, and each package's
// own imports of rawbatch packages are ones its line allows.
func TestArchitectureLines(t *testing.T) {
	pkgs := listPackages(t)
	lines := readLines(t)
	for path, p := range pkgs {
		allowed, ok := lines[path]
		if !ok {
			t.Errorf("package %s has no line in docs/architecture.md (add \"- `%s`: what it owns. May import: ...\")", path, path)
			continue
		}
		for _, imp := range ours(p.Imports) {
			if !allows(allowed, imp) {
				t.Errorf("%s imports %s, which its line in docs/architecture.md does not allow", path, imp)
			}
		}
	}
	for path := range lines {
		if _, ok := pkgs[path]; !ok {
			t.Errorf("docs/architecture.md has a line for %s, which is not a package", path)
		}
	}
}

// TestImportRules: the rules that hold whatever the lines say (see
// docs/architecture.md).
func TestImportRules(t *testing.T) {
	pkgs := listPackages(t)
	for path, p := range pkgs {
		if len(p.CgoFiles) > 0 && !under(path, "pipeline/internal") {
			t.Errorf("%s uses cgo (%v): only pipeline/internal/... packages may import \"C\"", path, p.CgoFiles)
		}
		deps := ours(p.Deps)
		if slices.Contains([]string{"budget", "cache", "lock"}, path) && len(deps) > 0 {
			t.Errorf("%s depends on %v: budget, cache and lock import nothing of rawbatch", path, deps)
		}
		if slices.Contains([]string{"pipeline/header", "pipeline/colour", "pipeline/encode", "pipeline/resize", "pipeline/synthdng", "pipeline/tifftag"}, path) && slices.Contains(deps, "pipeline") {
			t.Errorf("%s depends on pipeline: header, colour, encode, resize, synthdng and tifftag must not", path)
		}
		if under(path, "pipeline") {
			for _, d := range deps {
				if under(d, "cmd") || slices.Contains([]string{"batch", "queue", "state", "lock"}, d) {
					t.Errorf("%s depends on %s: the develop (pipeline/...) knows nothing of commands, batches, queues, records or locks", path, d)
				}
			}
		}
		if path == "queue" {
			for _, d := range deps {
				if under(d, "pipeline") || d == "batch" || d == "state" {
					t.Errorf("queue depends on %s: a job's payload is opaque to the queue", d)
				}
			}
		}
		if under(path, "cmd") {
			for _, imp := range ours(p.Imports) {
				if imp == "lock" || imp == "state" || (under(imp, "internal") && imp != "internal/rawerr") || strings.Contains(imp, "/internal/") || strings.HasSuffix(imp, "/internal") {
					t.Errorf("%s imports %s: cmd must not import lock, state or internal packages other than internal/rawerr (it goes through batch)", path, imp)
				}
			}
		}
		if !under(path, "pipeline") {
			for _, imp := range ours(p.Imports) {
				if under(imp, "pipeline/internal") {
					t.Errorf("%s imports %s: nothing outside pipeline imports pipeline/internal/...", path, imp)
				}
			}
		}
	}
	for _, want := range []string{"budget", "cache", "lock", "pipeline", "batch", "queue", "state", "cmd/rawbatch", "pipeline/internal/libraw"} {
		if _, ok := pkgs[want]; !ok {
			t.Errorf("go list did not list %s", want)
		}
	}
	if len(pkgs["pipeline/internal/libraw"].CgoFiles) == 0 {
		t.Error("pipeline/internal/libraw has no cgo files: is go list's view of the module right?")
	}
}
