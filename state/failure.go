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
	"path/filepath"
	"time"

	"github.com/rawbatch/rawbatch/internal/fileperm"
)

// failuresDir is the directory, in the state directory, of the failure
// records; failureExt their extension (not recordExt, so that the
// readers of every output record, Outputs, pass them by).
const (
	failuresDir = "failures"
	failureExt  = ".failure"
)

// Failure is what OUTDIR remembers of an input whose conversion failed
// for what it holds (corrupt, not a raw file, ...): its content and the
// settings it failed with, so that a later run given --known-failures
// skip can tell the same failure again (Store.KnownFailure) from a file
// that changed or settings that did. One per input, keyed by its absolute
// path (InputAbs); failed.jsonl, rewritten by every run, is not this
// memory.
type Failure struct {
	Version int `json:"version"`
	// Input as given, and InputAbs (AbsInput), the key.
	Input    string `json:"input"`
	InputAbs string `json:"input_abs"`
	// The input's size, modification time and content hash when it
	// failed (HashFile).
	InputSize  int64     `json:"input_size"`
	InputMTime time.Time `json:"input_mtime"`
	InputHash  string    `json:"input_hash"`
	// SettingsHash identifies the settings of every output it was to
	// make; Rawbatch and LibRaw the versions that failed.
	SettingsHash string `json:"settings_hash"`
	Rawbatch     string `json:"rawbatch"`
	LibRaw       string `json:"libraw"`
	// Kind is the failure's kind (the report's), Message its text.
	Kind    string    `json:"kind"`
	Message string    `json:"message"`
	Failed  time.Time `json:"failed"`
}

// failurePath is the failure record of the input whose absolute path is
// inputAbs: state/failures/<SHA-256 of it>.failure.
func (s *Store) failurePath(inputAbs string) string {
	sum := sha256.Sum256([]byte(inputAbs))
	return filepath.Join(s.dir, failuresDir, hex.EncodeToString(sum[:])+failureExt)
}

// SaveFailure writes f as the failure record of f.InputAbs, atomically,
// replacing an earlier one. Version 0 is written as CurrentVersion, a
// zero Failed as time.Now().
func (s *Store) SaveFailure(f *Failure) error {
	if f == nil || f.InputAbs == "" {
		return errors.New("state: save failure: no input")
	}
	rec := *f
	if rec.Version == 0 {
		rec.Version = CurrentVersion
	}
	if rec.Failed.IsZero() {
		rec.Failed = time.Now()
	}
	data, err := json.MarshalIndent(&rec, "", "\t")
	if err != nil {
		return fmt.Errorf("state: save failure of %q: %w", rec.Input, err)
	}
	dir := filepath.Join(s.dir, failuresDir)
	if err := os.Mkdir(dir, recordDirPermissions); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("state: save failure of %q: %w", rec.Input, err)
	}
	for _, d := range []string{s.dir, dir} {
		if err := fileperm.CheckDir(d); err != nil {
			return fmt.Errorf("state: save failure of %q: %w", rec.Input, err)
		}
	}
	if err := writeAtomic(s.failurePath(rec.InputAbs), append(data, '\n')); err != nil {
		return fmt.Errorf("state: save failure of %q: %w", rec.Input, err)
	}
	return nil
}

// LoadFailure reads the failure record of the input whose absolute path
// is inputAbs; an error wrapping fs.ErrNotExist when there is none.
func (s *Store) LoadFailure(inputAbs string) (*Failure, error) {
	f, err := os.Open(s.failurePath(inputAbs))
	if err != nil {
		return nil, fmt.Errorf("state: load failure of %q: %w", inputAbs, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRecordBytes+1))
	if err != nil {
		return nil, fmt.Errorf("state: load failure of %q: %w", inputAbs, err)
	}
	var r Failure
	if len(data) > maxRecordBytes || json.Unmarshal(data, &r) != nil || jsonForm(r.InputAbs) != jsonForm(inputAbs) {
		return nil, fmt.Errorf("state: load failure of %q: %w", inputAbs, ErrCorrupt)
	}
	// The key is the exact path; the JSON holds a path that is not UTF-8
	// with U+FFFD for its bytes (the record is found by the key, the
	// field only names it).
	r.InputAbs = inputAbs
	return &r, nil
}

// RemoveFailure removes the failure record of inputAbs, if any.
func (s *Store) RemoveFailure(inputAbs string) {
	os.Remove(s.failurePath(inputAbs))
}

// KnownFailure returns the failure record of w's input when it failed
// before with the same content (the same size and modification time,
// else the same hash), the same settings (settingsHash) and the same
// rawbatch and LibRaw versions; nil otherwise: a file that changed, or
// other settings or versions, is to be tried again.
func (s *Store) KnownFailure(w Want, settingsHash string) *Failure {
	f, err := s.LoadFailure(w.InputAbs)
	if err != nil || f.Version != CurrentVersion || f.SettingsHash != settingsHash || f.Rawbatch != w.Rawbatch || f.LibRaw != w.LibRaw {
		return nil
	}
	st, err := os.Stat(w.Input)
	if err != nil || !st.Mode().IsRegular() || st.Size() != f.InputSize {
		return nil
	}
	if st.ModTime().Equal(f.InputMTime) && f.InputMTime.Before(f.Failed.Add(-RacyWindow)) {
		return f
	}
	if !s.sameContent(&Record{InputHash: f.InputHash, InputSize: f.InputSize}, w.Input) {
		return nil
	}
	return f
}
