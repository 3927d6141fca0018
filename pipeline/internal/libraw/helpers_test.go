package libraw

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// newHandle locks the test's goroutine to its OS thread and returns a new
// Handle, closed and the thread unlocked when the test ends. Call it from
// the test's own goroutine.
func newHandle(t testing.TB) *Handle {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// openFile is newHandle with path opened.
func openFile(t *testing.T, path string) *Handle {
	t.Helper()
	h := newHandle(t)
	if err := h.Open(path); err != nil {
		t.Fatal(err)
	}
	return h
}

// openSynth writes s as a DNG in the test's temporary directory and
// returns openFile of it.
func openSynth(t *testing.T, s synthdng.Spec) *Handle {
	t.Helper()
	path := filepath.Join(t.TempDir(), "raw.dng")
	if err := synthdng.WriteFile(path, s); err != nil {
		t.Fatal(err)
	}
	return openFile(t, path)
}
