package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// OutputMatches reports whether the file at path is still the output that
// rec describes, so that rawbatch may replace it: same size, and then the
// same modification time (nanoseconds) or, when the time differs, the same
// content hash (rec.OutputHash). A record without OutputHash (older
// records) is compared by size only. When the time differs but the content
// is the same (the file was touched or copied back), updated is rec with
// the new OutputMTime, to Save so that the next call needs no hash.
// Errors: the stat or read error of path (wrapping fs.ErrNotExist when it
// is gone); path not a regular file is reported as not matching.
func OutputMatches(rec *Record, path string) (match bool, updated *Record, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return false, nil, fmt.Errorf("state: output %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() || fi.Size() != rec.OutputSize {
		return false, nil, nil
	}
	if rec.OutputHash == "" || fi.ModTime().Equal(rec.OutputMTime) {
		return true, nil, nil
	}
	h, _, mtime, err := HashFile(path)
	if err != nil {
		return false, nil, fmt.Errorf("state: output %s: %w", path, err)
	}
	if h != rec.OutputHash {
		return false, nil, nil
	}
	up := *rec
	up.OutputMTime = mtime
	return true, &up, nil
}

// Claim saves a claim record for the output outputRel (relative to OUTDIR):
// the output is about to be written from input (the path as given;
// inputAbs its absolute path, AbsInput) by process pid. The caller holds
// the output's lock, checked under it that no other input's record is
// there, and saves the output's real record (or removes the claim,
// Unclaim) before releasing it; a claim left by a killed run still names
// its input, so another input's run sees it (OtherInputError) instead of
// taking a half-recorded output for its own. Errors are those of Save.
func (s *Store) Claim(outputRel, input, inputAbs string, pid int) error {
	return s.Save(&Record{Input: input, InputAbs: inputAbs, Output: outputRel, Claim: true, ClaimPID: pid})
}

// Unclaim removes the record of outputRel if it is a claim (the
// conversion failed or was cancelled); a real record is left alone.
// Errors are those of Load (other than absent) and Remove.
func (s *Store) Unclaim(outputRel string) error {
	rec, err := s.Load(outputRel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrCorrupt) {
			return nil
		}
		return err
	}
	if !rec.Claim {
		return nil
	}
	return s.Remove(outputRel)
}
