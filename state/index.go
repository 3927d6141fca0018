package state

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
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
