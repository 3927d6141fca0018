package fileperm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckDirSymlink(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if err := CheckDir(link); err == nil || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), link) {
		t.Errorf("CheckDir of a symlink = %v, want a refusal naming it", err)
	}
	if err := CheckDir(dir); err != nil {
		t.Errorf("CheckDir of our own directory: %v", err)
	}
}

// The owner rule: ours, root's, or one of our groups'; another user's in a
// group we are not in is refused. Changing owners needs root.
func TestCheckDirOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root (chown); under CI it must run")
		}
		t.Skip("needs root (chown)")
	}
	const nobody = 65534
	dir := filepath.Join(t.TempDir(), "d")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		uid, gid int
		ok       bool
	}{{nobody, nobody, false}, {nobody, os.Getgid(), true}, {os.Getuid(), nobody, true}} {
		if err := os.Chown(dir, c.uid, c.gid); err != nil {
			t.Fatal(err)
		}
		err := CheckDir(dir)
		if (err == nil) != c.ok {
			t.Errorf("owner %d:%d: CheckDir = %v, want ok %v", c.uid, c.gid, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "owned by uid") {
			t.Errorf("owner %d:%d: error %q does not name the owner", c.uid, c.gid, err)
		}
	}
}
