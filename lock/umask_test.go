package lock

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestUmaskModes: the lock directory is made 0777 and lock files 0666,
// both minus the umask, so that a group sharing OUTDIR under umask 002 can
// lock each other's files (not 0755 and 0644 whatever the umask); umask
// 077 keeps them private. The test changes the
// process's umask: it must not run in parallel with others.
func TestUmaskModes(t *testing.T) {
	for _, c := range []struct {
		umask         int
		dirMode, file os.FileMode
	}{{0o002, 0o775, 0o664}, {0o077, 0o700, 0o600}} {
		old := syscall.Umask(c.umask)
		dir := filepath.Join(t.TempDir(), "out", ".rawbatch", "locks")
		d, err := Open(dir)
		var l *Lock
		if err == nil {
			l, err = d.TryLock("k")
		}
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		for p, want := range map[string]os.FileMode{dir: c.dirMode, filepath.Dir(dir): c.dirMode, d.File("k"): c.file} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != want {
				t.Errorf("umask %03o: %s mode %v, want %v", c.umask, p, fi.Mode().Perm(), want)
			}
		}
		l.Unlock()
	}
}
