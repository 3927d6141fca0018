package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The Go files architecture.md names exist, and where it lists what a
// file holds ("(pipeline/convert.go: `ConvertOutputs`, ...)", or
// "`WorkerBytes` (batch/batch.go)") that file declares each name.
func TestArchitectureFiles(t *testing.T) {
	b, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	root := ".."
	files := regexp.MustCompile(`[a-z_]+(?:/[a-z_]+)*/[a-z_*]+\.go`).FindAllString(text, -1)
	if len(files) == 0 {
		t.Fatal("architecture.md names no Go file")
	}
	for _, f := range files {
		if m, _ := filepath.Glob(filepath.Join(root, f)); len(m) == 0 {
			t.Errorf("architecture.md names %s: no such file", f)
		}
	}
	// "FILE: `A`, `B`" and "`A` (FILE)"
	lists := regexp.MustCompile("(?:^|[ (])([a-z_/]+\\.go): ((?:`[A-Za-z.]+`, )*`[A-Za-z.]+`)")
	for _, m := range lists.FindAllStringSubmatch(text, -1) {
		for _, id := range regexp.MustCompile("`([A-Za-z.]+)`").FindAllStringSubmatch(m[2], -1) {
			checkDeclares(t, filepath.Join(root, m[1]), id[1])
		}
	}
	before := regexp.MustCompile("`([A-Za-z.]+)` \\(([a-z_/]+\\.go)\\)")
	for _, m := range before.FindAllStringSubmatch(text, -1) {
		checkDeclares(t, filepath.Join(root, m[2]), m[1])
	}
}

// checkDeclares fails t unless the Go file at path declares name (a
// function, type, variable or constant, or a method for Type.Method; a
// package qualifier such as batch. is dropped).
func checkDeclares(t *testing.T, path, name string) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Errorf("architecture.md: %v", err)
		return
	}
	want := name
	if i := strings.LastIndex(name, "."); i >= 0 {
		want = name[i+1:]
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.Name == want {
				return
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.Name == want {
						return
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.Name == want {
							return
						}
					}
				}
			}
		}
	}
	t.Errorf("architecture.md says %s is in %s; it is not declared there", name, strings.TrimPrefix(path, "../"))
}
