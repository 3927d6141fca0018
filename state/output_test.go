package state

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestOutputMatches(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.jpg")
	if err := os.WriteFile(p, []byte("rawbatch's picture"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, size, mtime, err := HashFile(p)
	if err != nil {
		t.Fatal(err)
	}
	rec := &Record{Output: "x.jpg", OutputSize: size, OutputHash: h, OutputMTime: mtime}
	check := func(what string, want, wantUpdated bool) {
		t.Helper()
		ok, up, err := OutputMatches(rec, p)
		if err != nil || ok != want || (up != nil) != wantUpdated {
			t.Errorf("%s: match %v, updated %v, err %v; want %v, %v", what, ok, up != nil, err, want, wantUpdated)
		}
	}
	check("as written", true, false)
	// Touched: same content, another time → hashed, still ours.
	later := mtime.Add(time.Hour)
	os.Chtimes(p, later, later)
	check("touched", true, true)
	// Edited in place, same size.
	os.WriteFile(p, []byte("edited's  picture!"), 0o644)
	check("edited, same size", false, false)
	// Another size.
	os.WriteFile(p, []byte("retouched"), 0o644)
	check("another size", false, false)
	// An older record without a hash is compared by size.
	old := &Record{Output: "x.jpg", OutputSize: int64(len("retouched"))}
	if ok, _, err := OutputMatches(old, p); !ok || err != nil {
		t.Errorf("old record: %v %v", ok, err)
	}
	os.Remove(p)
	if _, _, err := OutputMatches(rec, p); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("gone: %v, want ErrNotExist", err)
	}
}
