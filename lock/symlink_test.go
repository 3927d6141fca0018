package lock

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A symbolic link planted at a lock file's path (lock names are
// predictable) must not make the holder record overwrite its target: the
// lock is refused with an error naming the path, the target is untouched.
func TestPlantedSymlinkLockFile(t *testing.T) {
	d, err := Open(filepath.Join(t.TempDir(), "locks"))
	if err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "precious.txt")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, d.File("k")); err != nil {
		t.Fatal(err)
	}
	l, err := d.TryLock("k")
	if err == nil {
		l.Unlock()
		t.Fatal("TryLock through a planted symlink succeeded")
	}
	if !strings.Contains(err.Error(), d.File("k")) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("error %q does not name the lock file and the symbolic link", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("target of the planted symlink now holds %q", b)
	}
	// A dangling symlink must not create its target either.
	gone := filepath.Join(t.TempDir(), "created-by-rawbatch")
	if err := os.Symlink(gone, d.File("k2")); err != nil {
		t.Fatal(err)
	}
	if l, err := d.TryLock("k2"); err == nil {
		l.Unlock()
		t.Fatal("TryLock through a dangling symlink succeeded")
	}
	if _, err := os.Lstat(gone); err == nil {
		t.Error("TryLock created the target of a dangling symlink")
	}
}

// A hard link to another of the user's files at a lock path is not
// rewritten (it is not a file the locker created: it has another name);
// the locker unlinks it and locks a file of its own.
func TestHardLinkLockFile(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(filepath.Join(dir, "locks"))
	if err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(dir, "precious.txt")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(victim, d.File("k")); err != nil {
		t.Fatal(err)
	}
	l, err := d.TryLock("k")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("hard-linked file now holds %q", b)
	}
	if b, _ := os.ReadFile(d.File("k")); !strings.Contains(string(b), `"pid"`) {
		t.Errorf("lock file holds %q, want the holder record", b)
	}
}

// A FIFO or a directory at a lock path is refused without blocking.
func TestSpecialLockFile(t *testing.T) {
	d, err := Open(filepath.Join(t.TempDir(), "locks"))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(d.File("fifo"), 0o666); err != nil {
		t.Fatal(err)
	}
	if l, err := d.TryLock("fifo"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		if l != nil {
			l.Unlock()
		}
		t.Errorf("TryLock on a FIFO: %v, want a refusal", err)
	}
}

// A lock directory that is a symbolic link is refused: locks would be
// created wherever it points.
func TestOpenRefusesSymlinkDir(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "locks")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(link); err == nil || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), link) {
		t.Errorf("Open of a symlinked lock directory: %v, want a refusal naming it", err)
	}
}

// The lock directory's owner rule (as fileperm.CheckDir's): another user's
// directory in a group we are not in is refused, one a group of ours owns
// is used. Changing owners needs root.
func TestOpenOwnerRule(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root (chown); under CI it must run")
		}
		t.Skip("needs root (chown)")
	}
	dir := filepath.Join(t.TempDir(), "locks")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Errorf("Open of another user's lock directory = %v, want a refusal naming the owner", err)
	}
	if err := os.Chown(dir, 65534, os.Getgid()); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err != nil {
		t.Errorf("Open of a lock directory a group of ours owns: %v", err)
	}
}
