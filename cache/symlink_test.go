package cache

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A cache directory replaced by a symbolic link (another user can plant
// one at the default /dev/shm/rawbatch-UID) is refused by Open and
// OpenExisting, naming it, even when it points to a private directory of
// ours: nothing is written into the target.
func TestOpenRefusesSymlinkedDir(t *testing.T) {
	base := t.TempDir()
	target := filepath.Join(base, "mine")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "rawbatch-cache")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(link, 1<<20); err == nil || !strings.Contains(err.Error(), link) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Open of a symlinked cache dir = %v, want a refusal naming it", err)
	}
	if ents, _ := os.ReadDir(target); len(ents) != 0 {
		t.Errorf("Open wrote %v into the symlink's target", ents)
	}
	if _, err := OpenExisting(link, 1<<20); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("OpenExisting of a symlinked cache dir = %v, want a refusal", err)
	}
	// A dangling link is refused too, and its target not created.
	gone := filepath.Join(base, "gone")
	dangling := filepath.Join(base, "dangling")
	if err := os.Symlink(gone, dangling); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dangling, 1<<20); err == nil {
		t.Error("Open of a dangling symlink succeeded")
	}
	if _, err := os.Lstat(gone); err == nil {
		t.Error("Open created the dangling symlink's target")
	}
}

// A cache directory of another user is refused (the cache is private: not
// even root's or a group's will do). Changing owners needs root.
func TestOpenRefusesOtherUsersDir(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root (chown); under CI it must run")
		}
		t.Skip("needs root (chown)")
	}
	dir := filepath.Join(t.TempDir(), "c")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, 1<<20); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Errorf("Open of another user's directory = %v, want a refusal naming the owner", err)
	}
}
