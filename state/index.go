package state

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// Outputs returns the output of every record in the store (Record.Output,
// as recorded, slash-separated) with the absolute input it was written
// from (Record.InputAbs; claims included: their names are being written).
// It reads every record once; unreadable ones are passed over. Planning
// uses it to give colliding inputs, and {seq} numbers, the names their
// records hold.
func (s *Store) Outputs() map[string]string {
	m := map[string]string{}
	files, _ := filepath.Glob(filepath.Join(s.dir, "*", "*"+recordExt))
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		data, err := io.ReadAll(io.LimitReader(f, maxRecordBytes+1))
		f.Close()
		if err != nil || len(data) > maxRecordBytes {
			continue
		}
		var r Record
		if json.Unmarshal(data, &r) != nil || r.Output == "" || r.InputAbs == "" {
			continue
		}
		m[r.Output] = r.InputAbs
	}
	return m
}

// Records returns every output record in the store (claims left out),
// in no particular order; unreadable ones are passed over. The gallery
// lists them.
func (s *Store) Records() []Record {
	var out []Record
	files, _ := filepath.Glob(filepath.Join(s.dir, "*", "*"+recordExt))
	for _, p := range files {
		var r Record
		if readJSON(p, &r) && r.Output != "" && !r.Claim {
			out = append(out, r)
		}
	}
	return out
}

// Failures returns every failure record in the store (see Failure), in
// no particular order; unreadable ones are passed over.
func (s *Store) Failures() []Failure {
	var out []Failure
	files, _ := filepath.Glob(filepath.Join(s.dir, failuresDir, "*"+failureExt))
	for _, p := range files {
		var f Failure
		if readJSON(p, &f) && f.Input != "" {
			out = append(out, f)
		}
	}
	return out
}

// readJSON reads the record at p (at most maxRecordBytes, not following a
// symbolic link at its last element) into v; false when it cannot.
func readJSON(p string, v any) bool {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	data, err := io.ReadAll(io.LimitReader(f, maxRecordBytes+1))
	f.Close()
	return err == nil && len(data) <= maxRecordBytes && json.Unmarshal(data, v) == nil
}
