package lensfun

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestCheckDir: a good directory passes; malformed XML, an empty
// directory and every non-regular *.xml are errors naming the file, found
// without opening it (a named pipe would block).
func TestCheckDir(t *testing.T) {
	if err := CheckDir(filepath.Join("..", "..", "..", "testdata", "lensfun")); err != nil {
		t.Fatalf("test database: %v", err)
	}
	if err := CheckDir(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no *.xml files") {
		t.Errorf("empty directory: %v", err)
	}
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, "x.xml"), []byte("<lensdatabase>\n<lens>\n</camera>\n</lensdatabase>\n"), 0o644)
	err := CheckDir(bad)
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "x.xml") || strings.HasSuffix(err.Error(), "\n") {
		t.Errorf("malformed XML: %q", err)
	}
	// A truncated file (it ends inside an element): lensfun's loader
	// takes it without a word.
	cut := t.TempDir()
	os.WriteFile(filepath.Join(cut, "cut.xml"), []byte("<lensdatabase><lens><maker>X</maker>\n"), 0o644)
	if err := CheckDir(cut); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "cut.xml") || !strings.Contains(err.Error(), "unexpected EOF") {
		t.Errorf("truncated XML: %v", err)
	}
	cases := map[string]func(p string) error{
		"named pipe":       func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"directory":        func(p string) error { return os.Mkdir(p, 0o755) },
		"dangling symlink": func(p string) error { return os.Symlink(p+".missing", p) },
		"socket": func(p string) error {
			l, err := net.Listen("unix", p)
			if err == nil {
				t.Cleanup(func() { l.Close() })
			}
			return err
		},
	}
	for kind, mk := range cases {
		dir := t.TempDir()
		p := filepath.Join(dir, "p.xml")
		if err := mk(p); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		err := CheckDir(dir)
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), strings.Fields(kind)[len(strings.Fields(kind))-1]) {
			t.Errorf("%s: %v", kind, err)
		}
		if _, err := XMLFiles(dir); err == nil {
			t.Errorf("%s: XMLFiles accepts it", kind)
		}
	}
}

// TestErrnoCode: lensfun's -errno codes get the system's message, not
// "error code 4294967294".
func TestErrnoCode(t *testing.T) {
	err := dbError("f.xml", errnoCode(2))
	if !errors.Is(err, syscall.ENOENT) || strings.Contains(err.Error(), "4294967294") {
		t.Errorf("-ENOENT: %v", err)
	}
}
