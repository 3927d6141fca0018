package state

import (
	"fmt"
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
