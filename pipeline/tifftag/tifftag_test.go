package tifftag

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// constants returns the integer constants declared in the non-test Go
// files of dir, by name.
func constants(t *testing.T, dir string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, f := range parseDir(t, dir) {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.INT {
						v, err := strconv.ParseUint(lit.Value, 0, 64)
						if err != nil {
							t.Fatal(err)
						}
						out[n.Name] = v
					}
				}
			}
		}
	}
	return out
}

func parseDir(t *testing.T, dir string) []*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	fset := token.NewFileSet()
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// TestTable: every tag constant is in Tags under its own name and number,
// every row of Tags is a constant, and no directory kind holds a number
// (or a name) twice.
func TestTable(t *testing.T) {
	consts := constants(t, ".")
	type key struct {
		d Dir
		n uint16
	}
	seen := map[key]string{}
	names := map[string]bool{}
	for _, d := range Tags {
		if v, ok := consts[d.Name]; !ok || v != uint64(d.Number) {
			t.Errorf("Tags row %s = %d: the constant %s is %d (declared: %v)", d.Name, d.Number, d.Name, v, ok)
		}
		if prev, dup := seen[key{d.Dir, d.Number}]; dup {
			t.Errorf("directory %d has tag %d twice: %s and %s", d.Dir, d.Number, prev, d.Name)
		}
		seen[key{d.Dir, d.Number}] = d.Name
		if names[d.Name] {
			t.Errorf("%s is in Tags twice", d.Name)
		}
		names[d.Name] = true
		if got := Name(d.Dir, d.Number); got != d.Name {
			t.Errorf("Name(%d, %d) = %q, want %q", d.Dir, d.Number, got, d.Name)
		}
	}
	for n := range consts {
		if !strings.HasPrefix(n, "Type") && !names[n] {
			t.Errorf("constant %s is not in Tags", n)
		}
	}
	if Name(DirExif, Make) != "" {
		t.Error("Name finds an IFD0 tag in the Exif IFD")
	}
}

// TestTypeSize: TIFF 6.0 §2's sizes, 0 outside 1..13.
func TestTypeSize(t *testing.T) {
	want := map[uint16]int{0: 0, TypeByte: 1, TypeASCII: 1, TypeShort: 2, TypeLong: 4, TypeRational: 8,
		TypeSByte: 1, TypeUndefined: 1, TypeSShort: 2, TypeSLong: 4, TypeSRational: 8, TypeFloat: 4,
		TypeDouble: 8, TypeIFD: 4, 14: 0, 0xffff: 0}
	for typ, n := range want {
		if got := TypeSize(typ); got != n {
			t.Errorf("TypeSize(%d) = %d, want %d", typ, got, n)
		}
	}
}

// TestNoPrivateTagNumbers: the header reader, the TIFF and EXIF writers
// and the test-file writer take tag and type numbers from this package: no
// constant of theirs is named tag... or type... with a number, no
// composite literal gives a field tag or typ a bare number, no map of
// uint16 keys is keyed by bare numbers, and no comparison or switch case
// puts a bare number against something named tag or typ.
func TestNoPrivateTagNumbers(t *testing.T) {
	for _, dir := range []string{"../header", "../encode", "../synthdng"} {
		for n := range constants(t, dir) {
			if len(n) > 4 && (strings.HasPrefix(n, "tag") && n[3] >= 'A' && n[3] <= 'Z' ||
				strings.HasPrefix(n, "type") && n[4] >= 'A' && n[4] <= 'Z') {
				t.Errorf("%s: private constant %s: use pipeline/tifftag", dir, n)
			}
		}
		for _, f := range parseDir(t, dir) {
			ast.Inspect(f, func(nd ast.Node) bool {
				switch x := nd.(type) {
				case *ast.FuncDecl:
					return !notTIFF[x.Name.Name]
				case *ast.KeyValueExpr:
					if id, ok := x.Key.(*ast.Ident); ok && isTagOrType(id.Name) && isInt(x.Value) {
						t.Errorf("%s: %s: %s", dir, id.Name, lit(x.Value))
					}
				case *ast.CompositeLit:
					if m, ok := x.Type.(*ast.MapType); ok && isIdent(m.Key, "uint16") {
						for _, e := range x.Elts {
							if kv, ok := e.(*ast.KeyValueExpr); ok && isInt(kv.Key) {
								t.Errorf("%s: map key %s: use pipeline/tifftag", dir, lit(kv.Key))
							}
						}
					}
				case *ast.BinaryExpr:
					if (x.Op == token.EQL || x.Op == token.NEQ) && (namesTagOrType(x.X) && isInt(x.Y) || namesTagOrType(x.Y) && isInt(x.X)) {
						t.Errorf("%s: a tag or type compared with %s", dir, lit(x.Y))
					}
				case *ast.SwitchStmt:
					if x.Tag != nil && namesTagOrType(x.Tag) {
						for _, c := range x.Body.List {
							for _, e := range c.(*ast.CaseClause).List {
								if isInt(e) {
									t.Errorf("%s: a switch on a tag or type has case %s", dir, lit(e))
								}
							}
						}
					}
				}
				return true
			})
		}
	}
}

// notTIFF are the functions of pipeline/header that read other
// directories than TIFF's, whose tag numbers are not TIFF tags: Fujifilm
// RAF's header directory, Canon CIFF records (CIFF 1.0r4), Sigma X3F
// properties, Minolta MRW blocks and Phase One IIQ's own directory.
var notTIFF = map[string]bool{
	"parseRAF": true, "parseCRW": true, "crwHeap": true, "parseMRW": true,
	"parseX3F": true, "x3fProps": true, "parsePhaseOne": true,
}

func isTagOrType(n string) bool { return n == "tag" || n == "typ" }

// namesTagOrType: x is tag, typ, or a selector ending in .tag/.typ.
func namesTagOrType(x ast.Expr) bool {
	switch e := x.(type) {
	case *ast.Ident:
		return isTagOrType(e.Name)
	case *ast.SelectorExpr:
		return isTagOrType(e.Sel.Name)
	}
	return false
}

func isIdent(x ast.Expr, name string) bool {
	id, ok := x.(*ast.Ident)
	return ok && id.Name == name
}

func isInt(x ast.Expr) bool {
	l, ok := x.(*ast.BasicLit)
	return ok && l.Kind == token.INT
}

func lit(x ast.Expr) string {
	if l, ok := x.(*ast.BasicLit); ok {
		return l.Value
	}
	return "?"
}
