package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rawbatch/rawbatch/internal/fileperm"
)

// TestWrite: the file gets the data and fileperm.File's mode, and no
// temporary file is left.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.json")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("new"), Options{Pattern: ".t-*"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "new" {
		t.Fatalf("content %q, %v", b, err)
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != fileperm.File() {
		t.Errorf("mode %v, want %v", fi.Mode().Perm(), fileperm.File())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("directory holds %d entries, want 1", len(ents))
	}
}

// TestWriteFailureKeepsOld: a failure before the rename (here the
// BeforeRename hook, which sees the complete temporary file) leaves the old
// content and removes the temporary file.
func TestWriteFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.json")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	var seen string
	err := Write(p, []byte("new"), Options{BeforeRename: func(tmp string) error {
		b, _ := os.ReadFile(tmp)
		seen = string(b)
		return boom
	}})
	if !errors.Is(err, boom) {
		t.Fatalf("Write: %v, want boom", err)
	}
	if seen != "new" {
		t.Errorf("temporary file held %q before the rename", seen)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("content %q after a failed write", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("directory holds %d entries, want 1 (temporary file left)", len(ents))
	}
}
