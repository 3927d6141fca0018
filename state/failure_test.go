package state

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A failure record matches the same content, settings and versions only;
// it is found again by a new Store (another run) and is not an output's
// record.
func TestKnownFailure(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "bad.dng")
	writeFile(t, in, "junk", old)
	h, size, mtime, err := HashFile(in)
	if err != nil {
		t.Fatal(err)
	}
	w := Want{Input: in, InputAbs: AbsInput(in), Rawbatch: "v1", LibRaw: "0.21"}
	if st.KnownFailure(w, "s1") != nil {
		t.Fatal("known failure without a record")
	}
	if err := st.SaveFailure(&Failure{Input: in, InputAbs: w.InputAbs, InputSize: size, InputMTime: mtime, InputHash: h,
		SettingsHash: "s1", Rawbatch: "v1", LibRaw: "0.21", Kind: "not-raw", Message: in + ": not a raw file"}); err != nil {
		t.Fatal(err)
	}
	st, _ = Open(filepath.Join(dir, "out"))
	if f := st.KnownFailure(w, "s1"); f == nil || f.Kind != "not-raw" {
		t.Fatalf("KnownFailure = %+v, want the saved one", f)
	}
	if len(st.Outputs()) != 0 {
		t.Fatalf("Outputs() = %v: a failure record read as an output's", st.Outputs())
	}
	if st.KnownFailure(w, "s2") != nil {
		t.Fatal("known failure with other settings")
	}
	w2 := w
	w2.LibRaw = "0.22"
	if st.KnownFailure(w2, "s1") != nil {
		t.Fatal("known failure with another LibRaw")
	}
	// Touched: the same content is hashed and still known.
	now := time.Now()
	os.Chtimes(in, now, now)
	if st.KnownFailure(w, "s1") == nil {
		t.Fatal("touched file not known by its hash")
	}
	// Changed content (same size): tried again.
	writeFile(t, in, "JUNK", old.Add(time.Second))
	st, _ = Open(filepath.Join(dir, "out"))
	if st.KnownFailure(w, "s1") != nil {
		t.Fatal("changed file still known")
	}
	st.RemoveFailure(w.InputAbs)
	if _, err := st.LoadFailure(w.InputAbs); err == nil {
		t.Fatal("failure record not removed")
	}
}

// The failure record of an input named with bytes that are not UTF-8, two
// in a row, is found again (the JSON stores them as U+FFFD).
func TestKnownFailureNotUTF8(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "b\xe9\xe9d.dng")
	writeFile(t, in, "junk", old)
	h, size, mtime, err := HashFile(in)
	if err != nil {
		t.Fatal(err)
	}
	w := Want{Input: in, InputAbs: AbsInput(in), Rawbatch: "v1", LibRaw: "0.21"}
	if err := st.SaveFailure(&Failure{Input: in, InputAbs: w.InputAbs, InputSize: size, InputMTime: mtime, InputHash: h,
		SettingsHash: "s1", Rawbatch: "v1", LibRaw: "0.21", Kind: "not-raw"}); err != nil {
		t.Fatal(err)
	}
	if f := st.KnownFailure(w, "s1"); f == nil || f.InputAbs != w.InputAbs {
		t.Fatalf("KnownFailure = %+v, want the saved one under its exact path", f)
	}
}
