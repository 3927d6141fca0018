// Package state keeps, per output file, a small record of what produced it,
// so that a re-run of rawbatch redoes only outputs whose input, settings or
// tool versions changed.
//
// Records live under OUTDIR/.rawbatch/state/, one JSON file per output, named
// by the SHA-256 of the output's path relative to OUTDIR, case-folded:
//
//	OUTDIR/.rawbatch/state/<first 2 hex>/<64 hex>.json
//
// so any output name (UTF-8, spaces, newlines, leading dashes) maps to a safe
// file name, and names that differ only in case (IMG_1.jpg, img_1.jpg: one
// file on exFAT, SMB and macOS volumes) share one record: the record of
// one is found when looking up the other. Records written before keys were
// case-folded (keyed by the exact path) are still found by their exact
// path, and moved to the folded key when saved again. Records are written atomically (temporary file in the same
// directory, fsync, rename, fsync of the directory), so a reader sees either
// the old record or the new one, never a partial file.
//
// [Store.Check] decides freshness cheaply: it reads the record, stats the
// output and the input, and hashes the input's content only when the input's
// size/mtime no longer prove it unchanged.
//
// Known limit: like make, rsync and git, Check trusts an unchanged (size,
// mtime) pair. A content change that keeps both the size and the nanosecond
// mtime of the input (e.g. a tool that restores the mtime after rewriting a
// file in place) is not detected unless the record is racy (see
// [Record.InputChecked]).
package state

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/rawbatch/rawbatch/internal/atomicfile"
	"github.com/rawbatch/rawbatch/internal/bytetext"
	"github.com/rawbatch/rawbatch/internal/filehash"
	"github.com/rawbatch/rawbatch/internal/fileperm"
)

// CurrentVersion is the record format version that Save writes and Check
// accepts.
const CurrentVersion = 1

// RacyWindow is how close (wall-clock) an input's mtime may be to the moment
// it was hashed before its (size, mtime) can no longer prove it unchanged: a
// write landing in the same timestamp tick right after the hash would keep
// the mtime. 2 s covers FAT's 2-second mtime granularity (memory cards).
const RacyWindow = 2 * time.Second

// TempMinAge is how old a temporary record file must be before CleanTemps
// removes it, so that a concurrent run's in-flight Save is left alone.
const TempMinAge = 10 * time.Minute

// Reasons reported in Verdict.Reason when an output is stale.
const (
	ReasonNoRecord       = "no record"
	ReasonCorruptRecord  = "no record (unreadable record ignored)"
	ReasonFormatChanged  = "record format changed"
	ReasonSettings       = "settings changed"
	ReasonVersions       = "rawbatch or LibRaw version changed"
	ReasonOutputChanged  = "output missing or changed"
	ReasonInputChanged   = "input changed"
	stateSubdir          = ".rawbatch/state"
	tempPrefix           = ".tmp-"
	recordExt            = ".json"
	maxRecordBytes       = 1 << 20
	recordDirPermissions = 0o777 // minus the umask, as mkdir(1)
)

var (
	// ErrChanging is wrapped by HashFile (and Check) when the file's size
	// or mtime changed while it was being read (filehash.ErrChanging).
	ErrChanging = filehash.ErrChanging

	// ErrCorrupt is wrapped by Load when a record file exists but cannot be
	// decoded or belongs to another output. Callers may treat it as absent;
	// the next Save overwrites it.
	ErrCorrupt = errors.New("corrupt state record")

	// ErrBadOutputPath is wrapped when an output path is empty, absolute or
	// leaves OUTDIR.
	ErrBadOutputPath = errors.New("output path must be relative to OUTDIR and stay inside it")
)

// Test hooks; nil outside tests.
var (
	testHookAfterRead    func(f *os.File)       // HashFile: after reading, before the second fstat
	testHookBeforeRename func(tmp string) error // Save: after fsync of the temp file, before rename
)

// Record describes one output and what produced it.
type Record struct {
	// Version is the record format version (CurrentVersion). Save fills in
	// CurrentVersion when zero.
	Version int `json:"version"`
	// Input is the input path as given, for humans and for noticing that an
	// output now comes from another path (which forces a hash).
	Input string `json:"input"`
	// InputAbs is the input's absolute path with symbolic links resolved,
	// to tell another input that maps to the same output (x.dng of
	// another card converted into the same OUTDIR); "" in older records.
	InputAbs string `json:"input_abs,omitempty"`
	// InputSize is the input's size in bytes.
	InputSize int64 `json:"input_size"`
	// InputMTime is the input's modification time, full (nanosecond)
	// precision.
	InputMTime time.Time `json:"input_mtime"`
	// InputHash is "xxh3:<16 hex>", XXH3-64 of the input's whole content
	// (see HashFile).
	InputHash string `json:"input_hash"`
	// InputChecked is the wall-clock time taken just before HashFile
	// computed InputHash. While InputMTime is within RacyWindow of it (or
	// after it), the (size, mtime) pair is not trusted and Check hashes the
	// input. Zero means unknown: the first Check hashes once and returns an
	// Updated record that has it.
	InputChecked time.Time `json:"input_checked"`
	// SettingsHash identifies every setting that changes this output; it is
	// computed by the caller (e.g. with HashSettings) and opaque here.
	SettingsHash string `json:"settings_hash"`
	// Rawbatch is the rawbatch version that wrote the output.
	Rawbatch string `json:"rawbatch"`
	// LibRaw is the LibRaw version that decoded the input.
	LibRaw string `json:"libraw"`
	// Output is the output path relative to OUTDIR, slash-separated and
	// cleaned (see RecordPath).
	Output string `json:"output"`
	// OutputSize is the output's size in bytes.
	OutputSize int64 `json:"output_size"`
	// OutputHash is "xxh3:<16 hex>", XXH3-64 of the output's content when
	// rawbatch wrote it, and OutputMTime the output's modification time
	// then: an output whose content no longer matches (another program
	// edited or replaced it) is not rawbatch's any more (OutputMatches).
	// "" and zero in older records, which are compared by size only.
	OutputHash  string    `json:"output_hash,omitempty"`
	OutputMTime time.Time `json:"output_mtime,omitzero"`
	// CaptureTime is the photograph's capture time as read from the
	// input's header (EXIF DateTimeOriginal, wall time
	// "2006:01:02 15:04:05.999999999"), and Camera its "Make Model"; with
	// them a different photograph at a path used before (a reformatted
	// card) is told from an edit of the same one. "" when unknown.
	CaptureTime string `json:"capture_time,omitempty"`
	Camera      string `json:"camera,omitempty"`
	// Claim marks a claim record (see Claim): the output is being written
	// from Input by the run with process id ClaimPID, under the output's
	// lock. It says only who may write the output, nothing about an
	// output file; the record written after the conversion replaces it.
	Claim    bool `json:"claim,omitempty"`
	ClaimPID int  `json:"claim_pid,omitempty"`
	// Written is when the output was written. Save fills in time.Now()
	// when zero.
	Written time.Time `json:"written"`
}

// Store reads and writes the records of one output directory.
// It is safe for concurrent use; concurrent Saves of the same output are
// last-writer-wins.
type Store struct {
	outDir string
	dir    string // OUTDIR/.rawbatch/state
	// hashes memoises the content hashes of inputs compared with a
	// record of another input (sameContent), by path, size and
	// modification time: one run asks several times per output.
	hashes sync.Map
}

// Open returns the Store of outDir, creating OUTDIR/.rawbatch/state (and its
// parents, mode 0777 minus the umask) if missing. Errors are those of
// os.MkdirAll, and fileperm.CheckDir's: OUTDIR/.rawbatch and its state
// directory must not be symbolic links nor directories of another user
// (records would be written wherever they point).
func Open(outDir string) (*Store, error) {
	if err := os.MkdirAll(outDir, recordDirPermissions); err != nil {
		return nil, fmt.Errorf("state: open %s: %w", outDir, err)
	}
	dir := outDir
	// One level at a time, each checked: MkdirAll would follow a symbolic
	// link planted at .rawbatch or state.
	for _, name := range strings.Split(stateSubdir, "/") {
		dir = filepath.Join(dir, name)
		if err := os.Mkdir(dir, recordDirPermissions); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("state: open %s: %w", outDir, err)
		}
		if err := fileperm.CheckDir(dir); err != nil {
			return nil, fmt.Errorf("state: open %s: %w", outDir, err)
		}
	}
	return &Store{outDir: outDir, dir: dir}, nil
}

// Dir returns the state directory, OUTDIR/.rawbatch/state.
func (s *Store) Dir() string { return s.dir }

// cleanRel normalises an output path relative to OUTDIR to the slash form
// used as the record key.
func cleanRel(outputRel string) (string, error) {
	if outputRel == "" || strings.IndexByte(outputRel, 0) >= 0 {
		return "", fmt.Errorf("%w: %q", ErrBadOutputPath, outputRel)
	}
	rel := path.Clean(filepath.ToSlash(outputRel))
	if filepath.IsAbs(outputRel) || path.IsAbs(rel) || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("%w: %q", ErrBadOutputPath, outputRel)
	}
	return rel, nil
}

// RecordPath returns the record file of an output given relative to OUTDIR:
// state/<first 2 hex>/<hex>.json, hex being the SHA-256 of the cleaned,
// slash-separated relative path, case-folded (names that differ only in
// case share it). It fails with ErrBadOutputPath for an empty,
// absolute or escaping path.
func (s *Store) RecordPath(outputRel string) (string, error) {
	rel, err := cleanRel(outputRel)
	if err != nil {
		return "", err
	}
	return s.recordPath(rel), nil
}

// recordPath is the record file of rel (cleaned), keyed case-folded.
func (s *Store) recordPath(rel string) string { return s.hashPath(foldKey(rel)) }

// exactPath is where records were kept before keys were case-folded.
func (s *Store) exactPath(rel string) string { return s.hashPath(rel) }

// foldKey folds the case of rel the way case-insensitive volumes do (lower
// case after upper case, as the locks and collision checks do), keeping
// bytes that are not UTF-8 as they are, so that such names stay apart.
func foldKey(rel string) string {
	var b strings.Builder
	for i := 0; i < len(rel); {
		r, n := utf8.DecodeRuneInString(rel[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteByte(rel[i])
		} else {
			b.WriteRune(unicode.ToLower(unicode.ToUpper(r)))
		}
		i += n
	}
	return b.String()
}

func (s *Store) hashPath(rel string) string {
	sum := sha256.Sum256([]byte(rel))
	h := hex.EncodeToString(sum[:])
	return filepath.Join(s.dir, h[:2], h+recordExt)
}

// Load reads the record of an output (path relative to OUTDIR): its own, or
// that of an output whose name differs only in case (Record.Output says
// which). Errors: wrapping os.ErrNotExist (fs.ErrNotExist) when there is none;
// wrapping ErrCorrupt when the file is not a decodable record of this output
// (callers may treat it as absent); ErrBadOutputPath; or the I/O error.
// A record of another format Version is returned as is (Check reports it
// stale).
func (s *Store) Load(outputRel string) (*Record, error) {
	rel, err := cleanRel(outputRel)
	if err != nil {
		return nil, err
	}
	p := s.recordPath(rel)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) && s.exactPath(rel) != p {
		p = s.exactPath(rel) // a record saved before keys were case-folded
		f, err = os.Open(p)
	}
	if err != nil {
		return nil, fmt.Errorf("state: load %q: %w", rel, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRecordBytes+1))
	if err != nil {
		return nil, fmt.Errorf("state: load %q: %w", rel, err)
	}
	if len(data) > maxRecordBytes {
		return nil, fmt.Errorf("state: load %q: %w: %s is over %d bytes", rel, ErrCorrupt, p, maxRecordBytes)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("state: load %q: %w: %s: %v", rel, ErrCorrupt, p, err)
	}
	switch {
	case foldKey(r.Output) == foldKey(rel):
	case foldKey(r.Output) == foldKey(jsonForm(rel)):
		// Written before paths were kept as bytes: the exact name is the
		// one asked for, and the record is saved back under it.
		r.Output = rel
	default:
		return nil, fmt.Errorf("state: load %q: %w: %s is the record of %q", rel, ErrCorrupt, p, r.Output)
	}
	return &r, nil
}

// Save writes r as the record of r.Output, atomically: a temporary file in
// the record's directory is written, fsynced, renamed over the record, and
// the directory is fsynced. A reader sees the old record or the new one,
// never a partial one; on error the old record (if any) is left and the
// temporary file removed. r is not modified: Version 0 is written as
// CurrentVersion, a zero Written as time.Now(), Output in its cleaned form.
// Errors: ErrBadOutputPath, or the I/O error.
func (s *Store) Save(r *Record) error {
	if r == nil {
		return errors.New("state: save: nil record")
	}
	rel, err := cleanRel(r.Output)
	if err != nil {
		return fmt.Errorf("state: save: %w", err)
	}
	rec := *r
	rec.Output = rel
	if rec.Version == 0 {
		rec.Version = CurrentVersion
	}
	if rec.Written.IsZero() {
		rec.Written = time.Now()
	}
	data, err := json.MarshalIndent(&rec, "", "\t")
	if err != nil {
		return fmt.Errorf("state: save %q: %w", rel, err)
	}
	data = append(data, '\n')

	p := s.recordPath(rel)
	sub := filepath.Dir(p)
	created := false
	if err := os.Mkdir(sub, recordDirPermissions); err == nil {
		created = true
	} else if !errors.Is(err, fs.ErrExist) {
		// The state dir itself may have been removed since Open.
		if err := os.Mkdir(s.dir, recordDirPermissions); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("state: save %q: %w", rel, err)
		}
		if err := os.Mkdir(sub, recordDirPermissions); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("state: save %q: %w", rel, err)
		}
		created = true
	}
	// The fan-out directory too must be our own, not a planted link.
	for _, d := range []string{s.dir, sub} {
		if err := fileperm.CheckDir(d); err != nil {
			return fmt.Errorf("state: save %q: %w", rel, err)
		}
	}
	if err := writeAtomic(p, data); err != nil {
		return fmt.Errorf("state: save %q: %w", rel, err)
	}
	if old := s.exactPath(rel); old != p {
		os.Remove(old) // its record from before keys were case-folded
	}
	if created {
		// Make the new fan-out directory's own entry durable.
		if err := syncDir(s.dir); err != nil {
			return fmt.Errorf("state: save %q: %w", rel, err)
		}
	}
	return nil
}

// writeAtomic writes a record file with atomicfile.Write (temporary
// record file, fsync, rename, fsync of the directory).
func writeAtomic(p string, data []byte) error {
	return atomicfile.Write(p, data, atomicfile.Options{Pattern: tempPrefix + "*" + recordExt, BeforeRename: testHookBeforeRename})
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Remove deletes the record of an output (path relative to OUTDIR). A missing
// record is not an error. Errors: ErrBadOutputPath, or the I/O error.
func (s *Store) Remove(outputRel string) error {
	rel, err := cleanRel(outputRel)
	if err != nil {
		return fmt.Errorf("state: remove: %w", err)
	}
	for _, p := range []string{s.recordPath(rel), s.exactPath(rel)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("state: remove %q: %w", rel, err)
		}
	}
	return nil
}

// CleanTemps removes temporary record files left by killed runs in the state
// directory's fan-out directories, and returns how many it removed. Only
// temporaries older than TempMinAge (by mtime) are removed, so a concurrent
// run's Save in flight is not disturbed. It goes on past errors and returns
// the first one.
func (s *Store) CleanTemps() (removed int, err error) {
	subs, err := os.ReadDir(s.dir)
	if err != nil {
		return 0, fmt.Errorf("state: clean temps: %w", err)
	}
	cutoff := time.Now().Add(-TempMinAge)
	var first error
	keep := func(e error) {
		if first == nil && e != nil && !errors.Is(e, fs.ErrNotExist) {
			first = fmt.Errorf("state: clean temps: %w", e)
		}
	}
	dirs := []string{s.dir}
	for _, e := range subs {
		if e.IsDir() && (len(e.Name()) == 2 || e.Name() == failuresDir) {
			dirs = append(dirs, filepath.Join(s.dir, e.Name()))
		}
	}
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			keep(err)
			continue
		}
		for _, e := range entries {
			if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), tempPrefix) {
				continue
			}
			info, err := e.Info()
			if err != nil {
				keep(err)
				continue
			}
			if !info.ModTime().Before(cutoff) {
				continue
			}
			if err := os.Remove(filepath.Join(d, e.Name())); err != nil {
				keep(err)
				continue
			}
			removed++
		}
	}
	return removed, first
}

// Want is what an output should be made from, as the caller knows it now.
type Want struct {
	Input        string // input path as given
	InputAbs     string // its absolute path, symbolic links resolved (AbsInput); "" skips the other-input check
	OutputRel    string // output path relative to OUTDIR (the record key)
	OutputPath   string // output path to stat; empty means OUTDIR/OutputRel
	SettingsHash string // hash of every setting that changes this output
	Rawbatch     string // rawbatch version
	LibRaw       string // LibRaw version
}

// OtherInputError is Check's error when the output was written from
// another input file that still exists: two inputs (x.dng on two cards)
// map to one output across runs, and converting would overwrite the
// other's picture.
type OtherInputError struct {
	Output string // the output, relative to OUTDIR
	Input  string // the input it was written from (absolute path)
	// Claim: the record is a claim (Store.Claim) left by a run that did
	// not finish, and the output file exists: it may hold that input's
	// picture.
	Claim bool
}

func (e *OtherInputError) Error() string {
	if e.Claim {
		return fmt.Sprintf("%s was being written from %s, another file that still exists, by a run that did not finish", e.Output, e.Input)
	}
	return fmt.Sprintf("%s was written from %s, another file that still exists", e.Output, e.Input)
}

// CheckOther returns an *OtherInputError when the record of w's output
// names another input that still exists, nil otherwise (no record, an
// older record, the same file under another name, an input that is
// gone, i.e. moved or renamed, or one that holds the same content as w's,
// i.e. a copy of the same card).
func (s *Store) CheckOther(w Want) error {
	rec, err := s.Load(w.OutputRel)
	if err != nil {
		return nil
	}
	if other := s.otherInput(rec, w); other != "" {
		return &OtherInputError{Output: rec.Output, Input: other, Claim: rec.Claim}
	}
	return nil
}

// otherInput returns rec's input when it is another existing file than
// w's, else "". A claim counts only while the output file exists: without
// it there is no picture to protect (its run is still converting, under
// the lock, or died before writing anything).
func (s *Store) otherInput(rec *Record, w Want) string {
	if rec.InputAbs == "" || w.InputAbs == "" || rec.InputAbs == w.InputAbs {
		return ""
	}
	if rec.Claim {
		out := w.OutputPath
		if out == "" {
			out = filepath.Join(s.outDir, filepath.FromSlash(rec.Output))
		}
		if _, err := os.Lstat(out); err != nil {
			return ""
		}
	}
	theirs, err := os.Stat(rec.InputAbs)
	if err != nil {
		return ""
	}
	if mine, err := os.Stat(w.Input); err == nil && os.SameFile(theirs, mine) {
		return ""
	}
	if !rec.Claim && s.sameContent(rec, w.Input) {
		return "" // a byte-identical copy (the same card at two paths)
	}
	return rec.InputAbs
}

// sameContent reports whether the file at path holds the content rec was
// written from (its size, then its hash).
func (s *Store) sameContent(rec *Record, path string) bool {
	if rec.InputHash == "" {
		return false
	}
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() != rec.InputSize {
		return false
	}
	key := fmt.Sprintf("%s\x00%d\x00%d", path, st.Size(), st.ModTime().UnixNano())
	if h, ok := s.hashes.Load(key); ok {
		return h == rec.InputHash
	}
	h, size, mtime, err := HashFile(path)
	if err != nil || size != st.Size() || !mtime.Equal(st.ModTime()) {
		return false
	}
	s.hashes.Store(key, h)
	return h == rec.InputHash
}

// twinOf reports whether rec was written from another input than w's that
// still exists and holds the same content (otherInput found no other
// input): the same card at two paths. Such a record is not moved to w's
// input, which would move it back and forth between the two.
func (s *Store) twinOf(rec *Record, w Want) bool {
	if rec.InputAbs == "" || w.InputAbs == "" || rec.InputAbs == w.InputAbs || rec.Claim {
		return false
	}
	theirs, err := os.Stat(rec.InputAbs)
	if err != nil {
		return false
	}
	mine, err := os.Stat(w.Input)
	return err == nil && !os.SameFile(theirs, mine)
}

// AbsInput returns path made absolute with symbolic links resolved (only
// made absolute when they cannot be), for Record.InputAbs and
// Want.InputAbs.
func AbsInput(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	return abs
}

// Verdict is Check's answer.
type Verdict struct {
	// Fresh reports that the output is up to date and can be skipped.
	Fresh bool
	// Reason says why the output is stale (one of the Reason constants);
	// empty when Fresh.
	Reason string
	// Hashed reports that the input's content was read and hashed.
	Hashed bool
	// Updated, when non-nil, is the record refreshed with the input's new
	// path/mtime/check time after a hash proved the content unchanged; Save
	// it so the next Check needs no hash.
	Updated *Record
}

// Check decides whether the output of w is up to date, reading the input only
// when needed. In order:
//   - a record naming another input that still exists, unless that input
//     and w's hold the same content (hashed), or such a claim while the
//     output file exists → *OtherInputError;
//   - no record (or an unreadable one, or a claim), other format Version, other
//     SettingsHash, other Rawbatch or LibRaw version → stale;
//   - output missing, not a regular file, or its size ≠ record's → stale;
//   - input size ≠ record's → stale, without hashing;
//   - same input path, size and mtime (nanoseconds), and the record not racy
//     (see Record.InputChecked) → fresh, without hashing;
//   - otherwise the input is hashed: same hash → fresh with Updated set
//     (without it when the record's input is another path that still
//     exists: a byte-identical copy); different → stale "input changed".
//
// Errors (with a zero Verdict): the record's I/O error other than absent or
// corrupt; ErrBadOutputPath; the output's stat error other than not-exist;
// the input's stat or read error; an error wrapping ErrChanging when the
// input changed while being hashed (retry later).
func (s *Store) Check(w Want) (Verdict, error) {
	rec, err := s.Load(w.OutputRel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Verdict{Reason: ReasonNoRecord}, nil
	case errors.Is(err, ErrCorrupt):
		return Verdict{Reason: ReasonCorruptRecord}, nil
	case err != nil:
		return Verdict{}, err
	}
	if other := s.otherInput(rec, w); other != "" {
		return Verdict{}, &OtherInputError{Output: rec.Output, Input: other, Claim: rec.Claim}
	}
	switch {
	case rec.Claim:
		return Verdict{Reason: ReasonNoRecord}, nil
	case rec.Version != CurrentVersion:
		return Verdict{Reason: ReasonFormatChanged}, nil
	case rec.SettingsHash != w.SettingsHash:
		return Verdict{Reason: ReasonSettings}, nil
	case rec.Rawbatch != w.Rawbatch || rec.LibRaw != w.LibRaw:
		return Verdict{Reason: ReasonVersions}, nil
	}

	outPath := w.OutputPath
	if outPath == "" {
		outPath = filepath.Join(s.outDir, filepath.FromSlash(rec.Output))
	}
	oi, err := os.Stat(outPath)
	if errors.Is(err, fs.ErrNotExist) {
		return Verdict{Reason: ReasonOutputChanged}, nil
	}
	if err != nil {
		return Verdict{}, fmt.Errorf("state: check %q: %w", rec.Output, err)
	}
	if !oi.Mode().IsRegular() || oi.Size() != rec.OutputSize {
		return Verdict{Reason: ReasonOutputChanged}, nil
	}

	ii, err := os.Stat(w.Input)
	if err != nil {
		return Verdict{}, fmt.Errorf("state: check %q: input: %w", rec.Output, err)
	}
	if !ii.Mode().IsRegular() {
		return Verdict{}, fmt.Errorf("state: check %q: input %s is not a regular file", rec.Output, w.Input)
	}
	if ii.Size() != rec.InputSize {
		return Verdict{Reason: ReasonInputChanged}, nil
	}
	// The fast path needs the same input by name; one moved or renamed
	// (another InputAbs) is hashed, and the updated record then names it,
	// so a later file at the old place is not taken for it.
	samePlace := w.InputAbs == "" || rec.InputAbs == w.InputAbs
	if (w.Input == rec.Input || jsonForm(w.Input) == rec.Input) && samePlace && ii.ModTime().Equal(rec.InputMTime) && !racy(rec) {
		return Verdict{Fresh: true}, nil
	}

	if s.twinOf(rec, w) && s.sameContent(rec, w.Input) {
		return Verdict{Fresh: true, Hashed: true}, nil
	}
	checked := time.Now()
	h, size, mtime, err := HashFile(w.Input)
	if err != nil {
		return Verdict{}, fmt.Errorf("state: check %q: %w", rec.Output, err)
	}
	if size != rec.InputSize || h != rec.InputHash {
		return Verdict{Reason: ReasonInputChanged, Hashed: true}, nil
	}
	up := *rec
	up.Input = w.Input
	if w.InputAbs != "" {
		up.InputAbs = w.InputAbs
	}
	up.InputMTime = mtime
	up.InputChecked = checked
	return Verdict{Fresh: true, Hashed: true, Updated: &up}, nil
}

// racy reports whether the record's (size, mtime) cannot prove the input
// unchanged: the mtime is within RacyWindow of (or after) the moment the
// hash was taken, so a later write could have kept the same mtime.
func racy(r *Record) bool {
	return !r.InputMTime.Before(r.InputChecked.Add(-RacyWindow))
}

// HashFile returns "xxh3:<16 hex>", the XXH3-64 of path's whole content read
// in a streamed way, with its size in bytes and modification time; an
// error wrapping ErrChanging when the file changed while being read (see
// filehash.File, which it is).
func HashFile(path string) (hash string, size int64, mtime time.Time, err error) {
	return filehash.File(path, testHookAfterRead)
}

// HashSettings returns "xxh3:<16 hex>", the XXH3-64 of parts joined
// unambiguously (filehash.Strings, which it is).
func HashSettings(parts ...string) string { return filehash.Strings(parts...) }

// jsonForm is s as a record written before paths were kept as bytes
// reads back: encoding/json stores each byte that is not UTF-8 as U+FFFD,
// one for each byte (strings.ToValidUTF8 would fold a run of them into
// one). Records are keyed by the exact bytes; only comparisons with such
// an older record use this form.
func jsonForm(s string) string {
	return bytetext.ReplaceInvalid(s, func(byte) string { return string(utf8.RuneError) })
}

// recordFields is Record without its methods.
type recordFields Record

// recordWire is a Record as JSON: its paths as strings, and where a path
// is not UTF-8 (a file name need not be), its exact bytes beside it
// (base64), since encoding/json would store such a byte as U+FFFD.
type recordWire struct {
	recordFields
	InputB64    []byte `json:"input_b64,omitempty"`
	InputAbsB64 []byte `json:"input_abs_b64,omitempty"`
	OutputB64   []byte `json:"output_b64,omitempty"`
}

// exactBytes returns s's bytes when s is not UTF-8, else nil.
func exactBytes(s string) []byte {
	if utf8.ValidString(s) {
		return nil
	}
	return []byte(s)
}

// MarshalJSON writes r with the exact bytes of each path that is not UTF-8
// in a *_b64 field beside it.
func (r Record) MarshalJSON() ([]byte, error) {
	return json.Marshal(recordWire{recordFields: recordFields(r),
		InputB64: exactBytes(r.Input), InputAbsB64: exactBytes(r.InputAbs), OutputB64: exactBytes(r.Output)})
}

// UnmarshalJSON reads r, each path from its exact bytes where the record
// has them.
func (r *Record) UnmarshalJSON(b []byte) error {
	var w recordWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = Record(w.recordFields)
	for _, f := range []struct {
		dst *string
		b   []byte
	}{{&r.Input, w.InputB64}, {&r.InputAbs, w.InputAbsB64}, {&r.Output, w.OutputB64}} {
		if w := f.b; w != nil {
			*f.dst = string(w)
		}
	}
	return nil
}
