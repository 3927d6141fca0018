package state

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zeebo/xxh3"
)

// old is an input mtime well before any record's InputChecked, so that
// records of test inputs are not racy.
var old = time.Now().Add(-time.Hour).Truncate(time.Second).Add(123456789)

type fixture struct {
	t      *testing.T
	dir    string
	outDir string
	st     *Store
	want   Want
}

// newFixture makes an input (mtime = old), an output and a saved record that
// matches them, as a first run would.
func newFixture(t *testing.T, content string) *fixture {
	t.Helper()
	dir := t.TempDir()
	outDir := filepath.Join(dir, "out")
	st, err := Open(outDir)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in", "IMG_0001.CR3")
	if err := os.MkdirAll(filepath.Dir(in), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, in, content, old)
	f := &fixture{t: t, dir: dir, outDir: outDir, st: st, want: Want{
		Input:        in,
		OutputRel:    "sub/IMG_0001.jpg",
		SettingsHash: HashSettings("quality=92", "wb=camera"),
		Rawbatch:     "v0.3.0",
		LibRaw:       "0.21.1",
	}}
	f.makeOutput("JPEG bytes")
	f.saveRecord()
	return f
}

func writeFile(t *testing.T, p, content string, mtime time.Time) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if !mtime.IsZero() {
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fixture) outPath() string {
	return filepath.Join(f.outDir, filepath.FromSlash(f.want.OutputRel))
}

func (f *fixture) makeOutput(content string) {
	f.t.Helper()
	if err := os.MkdirAll(filepath.Dir(f.outPath()), 0o755); err != nil {
		f.t.Fatal(err)
	}
	writeFile(f.t, f.outPath(), content, time.Time{})
}

// saveRecord records the current input and output as a converter would.
func (f *fixture) saveRecord() *Record {
	f.t.Helper()
	checked := time.Now()
	h, size, mtime, err := HashFile(f.want.Input)
	if err != nil {
		f.t.Fatal(err)
	}
	oi, err := os.Stat(f.outPath())
	if err != nil {
		f.t.Fatal(err)
	}
	r := &Record{
		Input: f.want.Input, InputSize: size, InputMTime: mtime, InputHash: h, InputChecked: checked,
		SettingsHash: f.want.SettingsHash, Rawbatch: f.want.Rawbatch, LibRaw: f.want.LibRaw,
		Output: f.want.OutputRel, OutputSize: oi.Size(),
	}
	if err := f.st.Save(r); err != nil {
		f.t.Fatal(err)
	}
	return r
}

func (f *fixture) check(w Want) Verdict {
	f.t.Helper()
	v, err := f.st.Check(w)
	if err != nil {
		f.t.Fatalf("Check: %v", err)
	}
	return v
}

func wantStale(t *testing.T, v Verdict, reason string) {
	t.Helper()
	if v.Fresh || v.Reason != reason {
		t.Fatalf("verdict %+v, want stale %q", v, reason)
	}
}

func wantFresh(t *testing.T, v Verdict, hashed bool) {
	t.Helper()
	if !v.Fresh || v.Reason != "" || v.Hashed != hashed {
		t.Fatalf("verdict %+v, want fresh with Hashed=%v", v, hashed)
	}
}

func TestOpenCreatesStateDir(t *testing.T) {
	out := filepath.Join(t.TempDir(), "a", "b")
	st, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(out, ".rawbatch", "state"))
	if err != nil || !fi.IsDir() || st.Dir() != filepath.Join(out, ".rawbatch", "state") {
		t.Fatalf("state dir: %v %v %q", fi, err, st.Dir())
	}
	if fi.Mode().Perm()&0o700 != 0o700 {
		t.Fatalf("mode %v", fi.Mode())
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mt := time.Unix(1700000000, 123456789) // nanoseconds must survive
	in := &Record{
		Input: "/card/DCIM/IMG 1.NEF", InputSize: 25 << 20, InputMTime: mt,
		InputHash: "xxh3:0123456789abcdef", InputChecked: mt.Add(time.Hour),
		SettingsHash: "xxh3:fedcba9876543210", Rawbatch: "v1", LibRaw: "0.21.2",
		Output: "DCIM/IMG 1.jpg", OutputSize: 4 << 20, Written: mt.Add(2 * time.Hour),
	}
	if err := st.Save(in); err != nil {
		t.Fatal(err)
	}
	if in.Version != 0 {
		t.Fatal("Save modified its argument")
	}
	got, err := st.Load("DCIM/IMG 1.jpg")
	if err != nil {
		t.Fatal(err)
	}
	wantRec := *in
	wantRec.Version = CurrentVersion
	if got.Version != 1 || !sameRecord(got, &wantRec) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, wantRec)
	}
	if got.InputMTime.UnixNano() != mt.UnixNano() {
		t.Fatalf("mtime lost precision: %d vs %d", got.InputMTime.UnixNano(), mt.UnixNano())
	}
	// Equivalent spellings of the output path share the record.
	if _, err := st.Load("DCIM/./x/../IMG 1.jpg"); err != nil {
		t.Fatalf("cleaned path: %v", err)
	}
	// Overwrite.
	in2 := *in
	in2.OutputSize = 7
	if err := st.Save(&in2); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Load(in.Output); got == nil || got.OutputSize != 7 {
		t.Fatalf("after overwrite: %+v", got)
	}
	// Zero Written is filled in.
	in3 := *in
	in3.Output, in3.Written = "other.jpg", time.Time{}
	if err := st.Save(&in3); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Load("other.jpg"); got == nil || time.Since(got.Written) > time.Minute {
		t.Fatalf("Written not filled: %+v", got)
	}
	// Remove, twice.
	for range 2 {
		if err := st.Remove(in.Output); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Load(in.Output); !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("after Remove: %v", err)
	}
}

func sameRecord(a, b *Record) bool {
	return a.Version == b.Version && a.Input == b.Input && a.InputSize == b.InputSize &&
		a.InputMTime.Equal(b.InputMTime) && a.InputHash == b.InputHash &&
		a.InputChecked.Equal(b.InputChecked) && a.SettingsHash == b.SettingsHash &&
		a.Rawbatch == b.Rawbatch && a.LibRaw == b.LibRaw && a.Output == b.Output &&
		a.OutputSize == b.OutputSize && a.Written.Equal(b.Written)
}

func TestLoadAbsent(t *testing.T) {
	st, _ := Open(t.TempDir())
	_, err := st.Load("nope.jpg")
	if !errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("got %v", err)
	}
}

func TestBadOutputPaths(t *testing.T) {
	st, _ := Open(t.TempDir())
	for _, p := range []string{"", ".", "/abs/x.jpg", "..", "../x.jpg", "a/../../x.jpg", "a\x00b"} {
		if _, err := st.RecordPath(p); !errors.Is(err, ErrBadOutputPath) {
			t.Errorf("RecordPath(%q): %v", p, err)
		}
		if err := st.Save(&Record{Output: p}); !errors.Is(err, ErrBadOutputPath) {
			t.Errorf("Save(%q): %v", p, err)
		}
		if _, err := st.Load(p); !errors.Is(err, ErrBadOutputPath) {
			t.Errorf("Load(%q): %v", p, err)
		}
	}
}

// listFiles returns every file under dir, relative, sorted by walk order.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSaveLeavesOnlyFinalFile(t *testing.T) {
	st, _ := Open(t.TempDir())
	rp, _ := st.RecordPath("a.jpg")
	wantRel, _ := filepath.Rel(st.Dir(), rp)
	var seen []string
	testHookBeforeRename = func(tmp string) error {
		// Before the rename the temp file is complete and sits beside the
		// final name, in the same directory (so rename is atomic).
		if filepath.Dir(tmp) != filepath.Dir(rp) || !strings.HasPrefix(filepath.Base(tmp), tempPrefix) {
			t.Errorf("temp %s not beside %s", tmp, rp)
		}
		seen = append(seen, tmp)
		return nil
	}
	defer func() { testHookBeforeRename = nil }()
	for i := range 3 {
		if err := st.Save(&Record{Output: "a.jpg", OutputSize: int64(i)}); err != nil {
			t.Fatal(err)
		}
		if files := listFiles(t, st.Dir()); len(files) != 1 || files[0] != wantRel {
			t.Fatalf("after save %d: files %q, want only %q", i, files, wantRel)
		}
	}
	if len(seen) != 3 {
		t.Fatalf("hook ran %d times", len(seen))
	}
}

func TestSaveFailureKeepsOldRecordAndNoTemp(t *testing.T) {
	st, _ := Open(t.TempDir())
	if err := st.Save(&Record{Output: "a.jpg", OutputSize: 1}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("killed before rename")
	testHookBeforeRename = func(string) error { return boom }
	err := st.Save(&Record{Output: "a.jpg", OutputSize: 2})
	testHookBeforeRename = nil
	if !errors.Is(err, boom) {
		t.Fatalf("Save: %v", err)
	}
	r, err := st.Load("a.jpg")
	if err != nil || r.OutputSize != 1 {
		t.Fatalf("old record not kept: %+v %v", r, err)
	}
	if files := listFiles(t, st.Dir()); len(files) != 1 {
		t.Fatalf("leftover files: %q", files)
	}
}

// A reader racing with writers sees a whole old or whole new record, never a
// partial or empty one.
func TestConcurrentLoadNeverSeesPartialRecord(t *testing.T) {
	st, _ := Open(t.TempDir())
	big := strings.Repeat("x", 64<<10) // a record large enough to need several writes
	mk := func(i int) *Record {
		return &Record{Output: "a.jpg", Input: big, OutputSize: int64(i)}
	}
	if err := st.Save(mk(0)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := st.Save(mk(i)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 300 {
		r, err := st.Load("a.jpg")
		if err != nil {
			t.Errorf("Load during Save: %v", err)
			break
		}
		if r.Input != big {
			t.Errorf("partial record")
			break
		}
	}
	close(stop)
	wg.Wait()
}

func TestCorruptRecordIsAbsent(t *testing.T) {
	f := newFixture(t, "raw data")
	rp, _ := f.st.RecordPath(f.want.OutputRel)
	for _, garbage := range []string{"", "{not json", "\x00\x01\x02", `{"version":1,"output":"someone/else.jpg"}`, `[1,2,3]`} {
		if err := os.WriteFile(rp, []byte(garbage), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := f.st.Load(f.want.OutputRel)
		if !errors.Is(err, ErrCorrupt) || errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Load(%q): %v, want ErrCorrupt", garbage, err)
		}
		wantStale(t, f.check(f.want), ReasonCorruptRecord)
	}
	// An oversized record is corrupt, not read whole.
	if err := os.WriteFile(rp, bytes.Repeat([]byte(" "), maxRecordBytes+10), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Load(f.want.OutputRel); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("oversized: %v", err)
	}
	// Saving over a corrupt record repairs it.
	f.saveRecord()
	wantFresh(t, f.check(f.want), false)
}

func TestRecordPathsOfOddNames(t *testing.T) {
	st, _ := Open(t.TempDir())
	names := []string{
		"a.jpg", "a b.jpg", "\xff.jpg", "\xfe.jpg", " a.jpg", "a.jpg ", "-a.jpg", "--rm -rf.jpg", "-",
		"sub/a.jpg", "sub\\a.jpg", "sub/-n.jpg", "line\nbreak.jpg", "tab\there.jpg", "\r.jpg",
		"日本語/写真.jpg", "café.jpg", "cafe\u0301.jpg", "emoji 📷.jpg", "*?<>|\".jpg", "$(x).jpg",
		strings.Repeat("long", 200) + ".jpg",
	}
	safe := regexp.MustCompile(`^[0-9a-f]{2}/[0-9a-f]{64}\.json$`)
	seen := map[string]string{}
	for _, n := range names {
		p, err := st.RecordPath(n)
		if err != nil {
			t.Fatalf("%q: %v", n, err)
		}
		rel, err := filepath.Rel(st.Dir(), p)
		if err != nil {
			t.Fatal(err)
		}
		rel = filepath.ToSlash(rel)
		if !safe.MatchString(rel) || rel[:2] != rel[3:5] {
			t.Errorf("%q → unsafe record path %q", n, rel)
		}
		if prev, dup := seen[rel]; dup {
			t.Errorf("%q and %q share record %s", n, prev, rel)
		}
		seen[rel] = n
		// And they really work as records.
		if err := st.Save(&Record{Output: n, Input: n}); err != nil {
			t.Fatalf("Save %q: %v", n, err)
		}
	}
	for _, n := range names {
		r, err := st.Load(n)
		if err != nil || r.Output != n || r.Input != n {
			t.Errorf("Load %q: %+v %v", n, r, err)
		}
	}
}

// Names that differ only in case are one file on exFAT, SMB and macOS
// volumes: they share one record, so the record of IMG_1.jpg is found when
// looking up img_1.jpg. A record saved under the exact-case key (before keys
// were case-folded) is still found, and moved to the folded key when saved.
func TestRecordsCaseFolded(t *testing.T) {
	dir := t.TempDir()
	st, _ := Open(dir)
	if err := st.Save(&Record{Output: "sub/IMG_1.jpg", Input: "c1/IMG_1.dng"}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"sub/img_1.jpg", "SUB/IMG_1.JPG", "sub/IMG_1.jpg"} {
		r, err := st.Load(n)
		if err != nil || r.Output != "sub/IMG_1.jpg" {
			t.Errorf("Load %q: %+v %v", n, r, err)
		}
	}
	a, _ := st.RecordPath("sub/IMG_1.jpg")
	b, _ := st.RecordPath("sub/img_1.jpg")
	if a != b {
		t.Errorf("record paths %s and %s differ", a, b)
	}
	if err := st.Remove("sub/img_1.jpg"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Load("sub/IMG_1.jpg"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load after Remove: %v", err)
	}

	// An old record, keyed by the exact path.
	old := st.exactPath("Old.jpg")
	os.MkdirAll(filepath.Dir(old), 0o755)
	if err := os.WriteFile(old, []byte(`{"version":1,"input":"x.dng","output":"Old.jpg"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := st.Load("Old.jpg")
	if err != nil || r.Input != "x.dng" {
		t.Fatalf("Load of an exact-key record: %+v %v", r, err)
	}
	if err := st.Save(r); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the exact-key record is left after Save: %v", err)
	}
	if r, err := st.Load("old.JPG"); err != nil || r.Input != "x.dng" {
		t.Errorf("Load after Save: %+v %v", r, err)
	}
}

func TestCheckNoRecord(t *testing.T) {
	f := newFixture(t, "raw")
	w := f.want
	w.OutputRel = "other.jpg"
	wantStale(t, f.check(w), ReasonNoRecord)
}

func TestCheckMatchingIsFreshWithoutHashing(t *testing.T) {
	f := newFixture(t, "raw data")
	wantFresh(t, f.check(f.want), false)
	// Explicit OutputPath is honoured too.
	w := f.want
	w.OutputPath = f.outPath()
	wantFresh(t, f.check(w), false)
}

func TestCheckMTimeOnlyTouchHashesOnceThenNot(t *testing.T) {
	f := newFixture(t, "raw data")
	newM := old.Add(17 * time.Minute)
	if err := os.Chtimes(f.want.Input, newM, newM); err != nil {
		t.Fatal(err)
	}
	v := f.check(f.want)
	wantFresh(t, v, true)
	if v.Updated == nil || !v.Updated.InputMTime.Equal(newM) {
		t.Fatalf("Updated = %+v, want mtime %v", v.Updated, newM)
	}
	// Without saving Updated, the next check hashes again...
	wantFresh(t, f.check(f.want), true)
	// ...after saving it, it does not.
	if err := f.st.Save(v.Updated); err != nil {
		t.Fatal(err)
	}
	wantFresh(t, f.check(f.want), false)
}

func TestCheckContentChanged(t *testing.T) {
	f := newFixture(t, "raw data")
	writeFile(t, f.want.Input, "RAW DATA", old.Add(time.Minute)) // same size, new mtime
	v := f.check(f.want)
	wantStale(t, v, ReasonInputChanged)
	if !v.Hashed {
		t.Fatal("same-size change must be found by hashing")
	}
	// A size change is conclusive without hashing.
	writeFile(t, f.want.Input, "raw data, longer", old)
	v = f.check(f.want)
	wantStale(t, v, ReasonInputChanged)
	if v.Hashed {
		t.Fatal("size change should not need a hash")
	}
}

// Documents the known limit: a content change that keeps size and mtime is
// not seen once the record is not racy (as with make, rsync, git).
func TestCheckSameSizeAndMTimeChangeIsUndetected(t *testing.T) {
	f := newFixture(t, "raw data")
	writeFile(t, f.want.Input, "RAW DATA", old)
	wantFresh(t, f.check(f.want), false)
}

// An input modified right after it was hashed may keep its mtime (coarse
// timestamps); such a racy record is checked by hash until it is old enough.
func TestCheckRacyRecordIsHashed(t *testing.T) {
	f := newFixture(t, "raw data")
	now := time.Now()
	writeFile(t, f.want.Input, "raw data", now)
	r := f.saveRecord() // InputChecked ≈ mtime: racy
	if !racy(r) {
		t.Fatal("record should be racy")
	}
	// Content rewritten in the same timestamp tick: caught.
	writeFile(t, f.want.Input, "RAW DATA", now)
	v := f.check(f.want)
	wantStale(t, v, ReasonInputChanged)
	// Unchanged racy input: fresh by hash, and Updated stays racy while the
	// mtime is recent.
	writeFile(t, f.want.Input, "raw data", now)
	v = f.check(f.want)
	wantFresh(t, v, true)
	// Zero InputChecked (unknown) is racy too; Updated fixes it.
	writeFile(t, f.want.Input, "raw data", old)
	r = f.saveRecord()
	r.InputChecked = time.Time{}
	if err := f.st.Save(r); err != nil {
		t.Fatal(err)
	}
	v = f.check(f.want)
	wantFresh(t, v, true)
	if v.Updated == nil || v.Updated.InputChecked.IsZero() {
		t.Fatalf("Updated %+v", v.Updated)
	}
	if err := f.st.Save(v.Updated); err != nil {
		t.Fatal(err)
	}
	wantFresh(t, f.check(f.want), false)
}

func TestCheckInputPathChangedHashes(t *testing.T) {
	f := newFixture(t, "raw data")
	moved := filepath.Join(f.dir, "moved.CR3")
	if err := os.Rename(f.want.Input, moved); err != nil {
		t.Fatal(err)
	}
	w := f.want
	w.Input = moved
	v := f.check(w)
	wantFresh(t, v, true)
	if v.Updated == nil || v.Updated.Input != moved {
		t.Fatalf("Updated %+v", v.Updated)
	}
	// Another file with the same size and mtime under the new path is caught.
	writeFile(t, moved, "RAW DATA", old)
	wantStale(t, f.check(w), ReasonInputChanged)
}

func TestCheckSettingsAndVersions(t *testing.T) {
	f := newFixture(t, "raw data")
	for _, c := range []struct {
		mod    func(*Want)
		reason string
	}{
		{func(w *Want) { w.SettingsHash = HashSettings("quality=80", "wb=camera") }, ReasonSettings},
		{func(w *Want) { w.Rawbatch = "v0.3.1" }, ReasonVersions},
		{func(w *Want) { w.LibRaw = "0.22.0" }, ReasonVersions},
	} {
		w := f.want
		c.mod(&w)
		wantStale(t, f.check(w), c.reason)
	}
	// Record format version.
	r, _ := f.st.Load(f.want.OutputRel)
	r.Version = CurrentVersion + 1
	if err := f.st.Save(r); err != nil {
		t.Fatal(err)
	}
	wantStale(t, f.check(f.want), ReasonFormatChanged)
}

func TestCheckOutputDeletedOrTruncated(t *testing.T) {
	f := newFixture(t, "raw data")
	if err := os.Truncate(f.outPath(), 3); err != nil {
		t.Fatal(err)
	}
	wantStale(t, f.check(f.want), ReasonOutputChanged)
	if err := os.Remove(f.outPath()); err != nil {
		t.Fatal(err)
	}
	wantStale(t, f.check(f.want), ReasonOutputChanged)
	// A directory where the output should be.
	if err := os.Mkdir(f.outPath(), 0o755); err != nil {
		t.Fatal(err)
	}
	wantStale(t, f.check(f.want), ReasonOutputChanged)
}

func TestCheckInputMissingIsError(t *testing.T) {
	f := newFixture(t, "raw data")
	os.Remove(f.want.Input)
	if _, err := f.st.Check(f.want); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("got %v", err)
	}
}

func TestCheckInputChangingIsError(t *testing.T) {
	f := newFixture(t, "raw data")
	writeFile(t, f.want.Input, "RAW DATA", old.Add(time.Minute))
	testHookAfterRead = func(*os.File) { appendTo(t, f.want.Input, "more") }
	defer func() { testHookAfterRead = nil }()
	if _, err := f.st.Check(f.want); !errors.Is(err, ErrChanging) {
		t.Fatalf("got %v", err)
	}
}

func appendTo(t *testing.T, p, s string) {
	t.Helper()
	a, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// writeRandom writes n pseudo-random bytes to p, 1 MiB at a time.
func writeRandom(t testing.TB, p string, n int, seed uint64) {
	t.Helper()
	w, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, seed))
	chunk := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, len(chunk))
		for i := 0; i < k; i += 8 {
			v := r.Uint64()
			for j := 0; j < 8 && i+j < k; j++ {
				chunk[i+j] = byte(v >> (8 * j))
			}
		}
		if _, err := w.Write(chunk[:k]); err != nil {
			t.Fatal(err)
		}
		n -= k
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestHashFileStreams50MB(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.raw")
	const size = 50 << 20
	writeRandom(t, p, size+12345, 1) // not a multiple of the buffer
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	h, n, mt, err := HashFile(p)
	runtime.ReadMemStats(&m1)
	if err != nil {
		t.Fatal(err)
	}
	alloc := m1.TotalAlloc - m0.TotalAlloc
	t.Logf("HashFile of %d bytes allocated %d bytes", n, alloc)
	if alloc >= 4<<20 {
		t.Fatalf("HashFile allocated %d bytes, want < 4 MiB (streamed)", alloc)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("xxh3:%016x", xxh3.Hash(data)); h != want {
		t.Fatalf("hash %s, want %s", h, want)
	}
	fi, _ := os.Stat(p)
	if n != int64(len(data)) || !mt.Equal(fi.ModTime()) {
		t.Fatalf("size %d mtime %v, want %d %v", n, mt, len(data), fi.ModTime())
	}
}

func TestHashFileSmallAndEmpty(t *testing.T) {
	dir := t.TempDir()
	for _, s := range []string{"", "a", strings.Repeat("0123456789", 100000)} {
		p := filepath.Join(dir, "f")
		writeFile(t, p, s, time.Time{})
		h, n, _, err := HashFile(p)
		if err != nil || n != int64(len(s)) || h != fmt.Sprintf("xxh3:%016x", xxh3.HashString(s)) {
			t.Fatalf("len %d: %s %d %v", len(s), h, n, err)
		}
	}
	if _, _, _, err := HashFile(dir); err == nil {
		t.Fatal("hashing a directory should fail")
	}
	if _, _, _, err := HashFile(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
}

func TestHashFileChangingWhileRead(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f.raw")
	writeFile(t, p, strings.Repeat("x", 1<<20), old)
	defer func() { testHookAfterRead = nil }()
	for name, hook := range map[string]func(*os.File){
		"appended": func(*os.File) { appendTo(t, p, "more") },
		"touched": func(*os.File) {
			m := old.Add(time.Second)
			if err := os.Chtimes(p, m, m); err != nil {
				t.Fatal(err)
			}
		},
		"truncated": func(*os.File) {
			if err := os.Truncate(p, 10); err != nil {
				t.Fatal(err)
			}
		},
	} {
		writeFile(t, p, strings.Repeat("x", 1<<20), old)
		testHookAfterRead = hook
		if _, _, _, err := HashFile(p); !errors.Is(err, ErrChanging) {
			t.Errorf("%s: got %v, want ErrChanging", name, err)
		}
	}
	testHookAfterRead = nil
	writeFile(t, p, "stable", old)
	if _, _, _, err := HashFile(p); err != nil {
		t.Fatalf("stable file: %v", err)
	}
}

// A real writer appending while HashFile reads: every result is either a
// consistent hash or ErrChanging, and appends landing mid-read are reported.
func TestHashFileWithConcurrentAppender(t *testing.T) {
	p := filepath.Join(t.TempDir(), "growing.raw")
	writeRandom(t, p, 8<<20, 2)
	done := make(chan error, 1)
	go func() {
		a, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			done <- err
			return
		}
		defer a.Close()
		chunk := bytes.Repeat([]byte("y"), 4096)
		for range 300 {
			if _, err := a.Write(chunk); err != nil {
				done <- err
				return
			}
			time.Sleep(time.Millisecond)
		}
		done <- nil
	}()
	hashes, changing := 0, 0
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		default:
		}
		_, _, _, err := HashFile(p)
		hashes++
		if errors.Is(err, ErrChanging) {
			changing++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d of %d hashes saw the file changing", changing, hashes)
	if changing == 0 {
		t.Fatal("appends during hashing were never reported as ErrChanging")
	}
}

func TestHashSettingsUnambiguous(t *testing.T) {
	cases := [][]string{
		{}, {""}, {"", ""}, {"ab", "c"}, {"a", "bc"}, {"abc"}, {"a\x00", "b"}, {"a", "\x00b"},
		{"quality=92", "wb=camera"}, {"wb=camera", "quality=92"},
	}
	seen := map[string]int{}
	re := regexp.MustCompile(`^xxh3:[0-9a-f]{16}$`)
	for i, c := range cases {
		h := HashSettings(c...)
		if !re.MatchString(h) {
			t.Fatalf("%q → %q", c, h)
		}
		if j, dup := seen[h]; dup {
			t.Errorf("%q and %q hash alike", c, cases[j])
		}
		seen[h] = i
		if HashSettings(c...) != h {
			t.Fatal("not deterministic")
		}
	}
}

func TestCleanTemps(t *testing.T) {
	st, _ := Open(t.TempDir())
	if err := st.Save(&Record{Output: "keep.jpg"}); err != nil {
		t.Fatal(err)
	}
	rp, _ := st.RecordPath("keep.jpg")
	sub := filepath.Dir(rp)
	long := time.Now().Add(-2 * TempMinAge)
	var stale []string
	for i, d := range []string{sub, sub, st.Dir()} {
		p := filepath.Join(d, fmt.Sprintf("%s%d%s", tempPrefix, i, recordExt))
		writeFile(t, p, "{partial", long)
		stale = append(stale, p)
	}
	fresh := filepath.Join(sub, tempPrefix+"inflight"+recordExt)
	writeFile(t, fresh, "{partial", time.Time{})
	n, err := st.CleanTemps()
	if err != nil || n != len(stale) {
		t.Fatalf("CleanTemps = %d, %v; want %d", n, err, len(stale))
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s not removed", p)
		}
	}
	for _, p := range []string{fresh, rp} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
	if n, err := st.CleanTemps(); n != 0 || err != nil {
		t.Fatalf("second CleanTemps = %d, %v", n, err)
	}
}

// setup1000 makes 1000 small inputs with matching outputs and records, as a
// finished first run leaves them, and returns the Store and the Wants.
func setup1000(tb testing.TB) (*Store, []Want) {
	tb.Helper()
	dir := tb.TempDir()
	st, err := Open(filepath.Join(dir, "out"))
	if err != nil {
		tb.Fatal(err)
	}
	settings := HashSettings("quality=92")
	wants := make([]Want, 1000)
	// Saves fsync twice each; run them on 8 goroutines.
	var wg sync.WaitGroup
	errs := make(chan error, len(wants))
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(wants); i += 8 {
				if err := make1(dir, st, settings, i, &wants[i]); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		tb.Fatal(err)
	}
	return st, wants
}

// make1 makes input i, its output and its record.
func make1(dir string, st *Store, settings string, i int, want *Want) error {
	in := filepath.Join(dir, fmt.Sprintf("IMG_%04d.NEF", i))
	if err := os.WriteFile(in, []byte(fmt.Sprintf("raw %d %s", i, strings.Repeat("z", 4096))), 0o644); err != nil {
		return err
	}
	if err := os.Chtimes(in, old, old); err != nil {
		return err
	}
	rel := fmt.Sprintf("IMG_%04d.jpg", i)
	if err := os.WriteFile(filepath.Join(dir, "out", rel), []byte("jpeg"), 0o644); err != nil {
		return err
	}
	checked := time.Now()
	h, size, mt, err := HashFile(in)
	if err != nil {
		return err
	}
	if err := st.Save(&Record{Input: in, InputSize: size, InputMTime: mt, InputHash: h, InputChecked: checked,
		SettingsHash: settings, Rawbatch: "v1", LibRaw: "0.21", Output: rel, OutputSize: 4}); err != nil {
		return err
	}
	*want = Want{Input: in, OutputRel: rel, SettingsHash: settings, Rawbatch: "v1", LibRaw: "0.21"}
	return nil
}

func checkAllFresh(tb testing.TB, st *Store, wants []Want) {
	for _, w := range wants {
		v, err := st.Check(w)
		if err != nil || !v.Fresh || v.Hashed {
			tb.Fatalf("%s: %+v %v", w.OutputRel, v, err)
		}
	}
}

// BenchmarkCheck1000Fresh times Check over 1000 small inputs whose records
// and outputs match: one op is all 1000 checks (no hashing).
func BenchmarkCheck1000Fresh(b *testing.B) {
	st, wants := setup1000(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		checkAllFresh(b, st, wants)
	}
}

// A name with several bytes in a row that are not UTF-8 keeps its exact
// bytes through Save and Load (output_b64, input_b64); a record written
// before paths were kept as bytes (U+FFFD, one per byte) is still that
// name's record, and is saved back under the exact name's key, not beside
// it under the U+FFFD form's.
func TestRecordBytesNotUTF8(t *testing.T) {
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	name, in := "c\xe9\xe9d.jpg", "in/c\xe9\xe9d.dng"
	if err := st.Save(&Record{Output: name, Input: in, InputAbs: "/abs/" + in}); err != nil {
		t.Fatal(err)
	}
	r, err := st.Load(name)
	if err != nil || r.Output != name || r.Input != in || r.InputAbs != "/abs/"+in {
		t.Fatalf("Load: %q %q %q, %v; want the exact bytes", r.Output, r.Input, r.InputAbs, err)
	}
	// An older record: the paths as encoding/json alone stores them.
	oldName := "e\xff\xfef.jpg"
	oldJSON := `{"version": 1, "input": "in/e\ufffd\ufffdf.dng", "output": "e\ufffd\ufffdf.jpg"}`
	p := st.recordPath(oldName)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(oldJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err = st.Load(oldName)
	if err != nil || r.Output != oldName {
		t.Fatalf("Load of an older record: %+v, %v; want it, named %q", r, err, oldName)
	}
	if err := st.Save(r); err != nil {
		t.Fatal(err)
	}
	var n int
	filepath.WalkDir(st.dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return nil
	})
	if n != 2 {
		t.Errorf("%d record files after saving the older record back, want 2 (one per output)", n)
	}
	if jsonForm("c\xe9\xe9d") != "c\ufffd\ufffdd" {
		t.Errorf("jsonForm folds a run of bytes: %q", jsonForm("c\xe9\xe9d"))
	}
}

// A byte-identical copy of the recorded input at another path, while
// that input still exists, is up to date and leaves the record naming the
// first path; a different file there is another input.
func TestCheckIdenticalCopyIsNotAnotherInput(t *testing.T) {
	f := newFixture(t, "raw data")
	f.want.InputAbs = AbsInput(f.want.Input)
	f.saveRecord()
	rec, err := f.st.Load(f.want.OutputRel)
	if err != nil {
		t.Fatal(err)
	}
	rec.InputAbs = f.want.InputAbs
	if err := f.st.Save(rec); err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(f.dir, "copy.CR3")
	writeFile(t, copyPath, "raw data", time.Time{})
	w := f.want
	w.Input, w.InputAbs = copyPath, AbsInput(copyPath)
	if err := f.st.CheckOther(w); err != nil {
		t.Fatalf("CheckOther of an identical copy: %v", err)
	}
	v := f.check(w)
	wantFresh(t, v, true)
	if v.Updated != nil {
		t.Fatalf("Updated %+v: the record would move to the copy", v.Updated)
	}
	// Another picture of the same size at the copy's path.
	writeFile(t, copyPath, "RAW DATA", time.Time{})
	st, err := Open(f.outDir) // a new run: no memoised hash
	if err != nil {
		t.Fatal(err)
	}
	var other *OtherInputError
	if _, err := st.Check(w); !errors.As(err, &other) {
		t.Fatalf("Check of another file: %v, want *OtherInputError", err)
	}
}
