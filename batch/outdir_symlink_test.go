package batch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/lock"
)

// OpenOutDir refuses a .rawbatch, state or locks directory planted as a
// symbolic link, naming it; nothing is created where the link points.
func TestOpenOutDirRefusesSymlinks(t *testing.T) {
	for _, which := range []string{".rawbatch", ".rawbatch/state", ".rawbatch/locks"} {
		out, elsewhere := t.TempDir(), t.TempDir()
		link := filepath.Join(out, filepath.FromSlash(which))
		if err := os.MkdirAll(filepath.Dir(link), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(elsewhere, link); err != nil {
			t.Fatal(err)
		}
		_, err := OpenOutDir(out, false)
		if err == nil || !strings.Contains(err.Error(), link) || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("%s a symlink: OpenOutDir = %v, want a refusal naming it", which, err)
		}
		// A dry run refuses what the run refuses, rather than read
		// records through the link (locks it never opens).
		if which != ".rawbatch/locks" {
			if _, err := OpenOutDir(out, true); err == nil || !strings.Contains(err.Error(), "symbolic link") {
				t.Errorf("%s a symlink: OpenOutDir dry run = %v, want a refusal", which, err)
			}
		}
		if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
			t.Errorf("%s a symlink: %v created in its target", which, ents)
		}
	}
}

// WriteFailed does not write failed.jsonl through a .rawbatch that is a
// symbolic link.
func TestWriteFailedRefusesSymlinkedMeta(t *testing.T) {
	out, elsewhere := t.TempDir(), t.TempDir()
	if err := os.Symlink(elsewhere, MetaDir(out)); err != nil {
		t.Fatal(err)
	}
	if err := WriteFailed(out, nil); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("WriteFailed = %v, want a refusal", err)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("WriteFailed wrote %v into the symlink's target", ents)
	}
}

// A symbolic link planted at an output's lock file: taking the lock fails
// with an error naming it, and its target is untouched.
func TestOutDirPlantedLockSymlink(t *testing.T) {
	out := t.TempDir()
	od, err := OpenOutDir(out, false)
	if err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(out, "a.jpg")
	lockFile := filepath.Join(MetaDir(out), "locks", lock.FileName(key))
	if err := os.Symlink(victim, lockFile); err != nil {
		t.Fatal(err)
	}
	h, err := od.Locks.TryLockAll([]string{key}, "", "")
	if err == nil {
		h.Unlock()
		t.Fatal("locking through a planted symlink succeeded")
	}
	if !strings.Contains(err.Error(), lockFile) {
		t.Errorf("error %q does not name the lock file", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("the symlink's target now holds %q", b)
	}
}
