package pipeline

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/pipeline/rawerr"
)

// Report is the JSON record of a run (`rawbatch convert --report FILE`).
type Report struct {
	Summary ReportSummary `json:"summary"`
	Files   []FileReport  `json:"files"`
}

// ReportSummary counts the files of a run by status. Decodes counts the
// LibRaw decodes made.
type ReportSummary struct {
	Converted int `json:"converted"`
	Skipped   int `json:"skipped"`
	Failed    int `json:"failed"`
	Locked    int `json:"locked"`
	Decodes   int `json:"decodes"`
}

// FileReport is one input of a run.
type FileReport struct {
	Input  string `json:"input"`
	Status Status `json:"status"`
	// Reason says why a file failed, was skipped or locked.
	Reason  string   `json:"reason,omitempty"`
	Outputs []string `json:"outputs"`
	// TimingsMS is each stage's wall time in milliseconds.
	TimingsMS map[string]float64 `json:"timings_ms,omitempty"`
	// EstimatedBytes is the memory estimate of the file, with the worker
	// process's own WorkerRSS when it ran in one, as the scheduler counts
	// it; PeakBytes the worker process's measured peak RSS (both bytes, 0
	// if unknown).
	EstimatedBytes int64 `json:"estimated_bytes"`
	PeakBytes      int64 `json:"peak_bytes"`
	DurationMS     int64 `json:"duration_ms"`
	// Messages are what the decoder printed (LibRaw, libjpeg).
	Messages string `json:"messages,omitempty"`
	// Warnings are the file's non-fatal notes (Result.Warnings), e.g. no
	// colour matrix for the camera.
	Warnings []string `json:"warnings,omitempty"`
}

// BuildReport summarises results.
func BuildReport(results []FileResult) Report {
	rep := Report{Files: make([]FileReport, 0, len(results))}
	for _, fr := range results {
		f := FileReport{Input: fr.Input, Status: fr.Status, Outputs: []string{},
			EstimatedBytes: fr.Estimate.Total, PeakBytes: fr.PeakBytes,
			DurationMS: fr.Duration.Milliseconds(), Messages: fr.Messages}
		if fr.PeakBytes > 0 && fr.Estimate.Total > 0 { // measured in a worker
			f.EstimatedBytes += WorkerRSS
		}
		if fr.Err != nil {
			f.Reason = fr.Err.Error()
		} else if fr.Reason != "" {
			f.Reason = fr.Reason
		}
		if fr.Status == StatusConverted {
			f.Warnings = fr.Result.Warnings
			for _, v := range fr.Result.Variants {
				f.Outputs = append(f.Outputs, v.Path)
			}
			if len(fr.Result.Variants) == 0 {
				f.Outputs = append(f.Outputs, fr.Output)
			}
			f.TimingsMS = map[string]float64{}
			for _, st := range fr.Result.Timings {
				f.TimingsMS[st.Stage] = float64(st.Duration) / float64(time.Millisecond)
			}
		}
		if fr.Decoded {
			rep.Summary.Decodes++
		}
		switch fr.Status {
		case StatusConverted:
			rep.Summary.Converted++
		case StatusFailed:
			rep.Summary.Failed++
		case StatusLocked:
			rep.Summary.Locked++
		default:
			rep.Summary.Skipped++
		}
		rep.Files = append(rep.Files, f)
	}
	return rep
}

// WriteJSON writes v as indented JSON to path atomically (temporary file in
// the same directory, fsync, rename).
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(path, append(b, '\n'))
}

// WriteFailed rewrites OUTDIR/.rawbatch/failed.jsonl: one JSON object per
// failed file of this run ({"input", "reason", "kind"}), empty when none.
func WriteFailed(outDir string, results []FileResult) error {
	var b []byte
	for _, fr := range results {
		if fr.Status != StatusFailed {
			continue
		}
		line, _ := json.Marshal(struct {
			Input  string `json:"input"`
			Reason string `json:"reason"`
			Kind   string `json:"kind"`
		}{fr.Input, errText(fr.Err), errKind(fr.Err)})
		b = append(append(b, line...), '\n')
	}
	dir := filepath.Join(outDir, ".rawbatch")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, "failed.jsonl"), b)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// writeAtomic writes data to path through a temporary file and a rename.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), TempPrefix+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	syncDir(filepath.Dir(path))
	return nil
}

// errKind names the kind of a failure for failed.jsonl: rawerr's kinds,
// "over-budget", "crashed", "timeout", or "error".
func errKind(err error) string {
	switch {
	case errors.Is(err, budget.ErrOverBudget):
		return "over-budget"
	case errors.Is(err, ErrCrashed):
		return "crashed"
	case errors.Is(err, ErrTimeout):
		return "timeout"
	}
	return rawerr.Kind(err)
}
