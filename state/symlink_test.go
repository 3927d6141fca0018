package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A .rawbatch or .rawbatch/state that is a symbolic link is refused by
// Open, with an error naming it: records would land wherever it points.
func TestOpenRefusesSymlinkedDirs(t *testing.T) {
	for _, which := range []string{".rawbatch", ".rawbatch/state"} {
		out := t.TempDir()
		elsewhere := t.TempDir()
		link := filepath.Join(out, filepath.FromSlash(which))
		if err := os.MkdirAll(filepath.Dir(link), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(elsewhere, link); err != nil {
			t.Fatal(err)
		}
		_, err := Open(out)
		if err == nil || !strings.Contains(err.Error(), link) || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("%s a symlink: Open = %v, want a refusal naming it", which, err)
		}
		if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
			t.Errorf("%s a symlink: Open created %v in its target", which, ents)
		}
	}
}

// A record's fan-out directory planted as a symbolic link is refused by
// Save; nothing is written where it points.
func TestSaveRefusesSymlinkedFanOut(t *testing.T) {
	out := t.TempDir()
	st, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.RecordPath("a.jpg")
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Dir(p)); err != nil {
		t.Fatal(err)
	}
	err = st.Save(&Record{Output: "a.jpg"})
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Save through a symlinked fan-out directory = %v, want a refusal", err)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("Save wrote %v into the symlink's target", ents)
	}
}
