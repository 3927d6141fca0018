package batch

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/rawbatch/rawbatch/pipeline"

	"github.com/rawbatch/rawbatch/internal/atomicfile"
	"github.com/rawbatch/rawbatch/internal/fileperm"
	"github.com/rawbatch/rawbatch/internal/rawerr"
)

// Report is the JSON record of a run (`rawbatch convert --report FILE`),
// or of its plan with --dry-run. docs/report.schema.json is its JSON
// Schema and docs/reruns.md describes it. BuildReport fills Summary,
// Files and the files' warnings; the command fills the rest.
type Report struct {
	// RawbatchVersion and LibRawVersion are the versions that made it.
	RawbatchVersion string `json:"rawbatch_version"`
	LibRawVersion   string `json:"libraw_version"`
	// DryRun: the report is a plan (`--dry-run`); nothing was written.
	DryRun bool `json:"dry_run"`
	// Settings are the resolved convert settings by flag name (flag >
	// environment > config file > default), as strings, numbers, booleans
	// or lists of strings.
	Settings map[string]any `json:"settings"`
	// SettingsHash is SettingsHash of the run's settings: the per-file
	// settings and the develop's stages, which every output's hash in
	// the up-to-date records starts from (each adds its variant's format,
	// size, quality, ...: outputHash); MemBudgetBytes the resolved memory
	// budget in bytes.
	SettingsHash   string `json:"settings_hash"`
	MemBudgetBytes int64  `json:"mem_budget_bytes"`
	// StartTime is when the run started (RFC 3339, UTC, to the
	// millisecond); DurationMS how long it took, in milliseconds.
	StartTime  string `json:"start_time"`
	DurationMS int64  `json:"duration_ms"`
	// ExitStatus is rawbatch's exit status for this run (0, 3 or 130);
	// Interrupted reports a SIGINT, SIGTERM or SIGHUP.
	ExitStatus  int           `json:"exit_status"`
	Interrupted bool          `json:"interrupted"`
	Summary     ReportSummary `json:"summary"`
	// Warnings are the run's warnings: the plan's (collision renames,
	// files reached twice), each file's (with its input), the run's own.
	Warnings []ReportWarning `json:"warnings"`
	Files    []FileReport    `json:"files"`
	// StagePlans are a dry run's distinct stage plans (AddStagePlans).
	StagePlans []ReportStagePlan `json:"stage_plans,omitempty"`
}

// ReportSummary counts the files of a run by status. Decodes counts the
// LibRaw decodes made; Planned the files a dry run would convert.
type ReportSummary struct {
	Converted int `json:"converted"`
	Skipped   int `json:"skipped"`
	Failed    int `json:"failed"`
	Locked    int `json:"locked"`
	Planned   int `json:"planned"`
	Decodes   int `json:"decodes"`
}

// ReportWarning is one warning; Input (with InputB64) names the file it
// is about, when it is about one.
type ReportWarning struct {
	Input    string `json:"input,omitempty"`
	InputB64 string `json:"input_b64,omitempty"`
	Message  string `json:"message"`
}

// ReportOutput is one output file of an input.
type ReportOutput struct {
	// Path is the file's path for display; PathB64, set only when the
	// path is not valid UTF-8, is its exact bytes in standard base64
	// (Path then shows each invalid byte as \xNN).
	Path    string `json:"path"`
	PathB64 string `json:"path_b64,omitempty"`
	// Variant is the variant's name ("" for the single default output).
	Variant string `json:"variant,omitempty"`
	// Written: this run wrote the file; false for an output already up
	// to date, or one a dry run would write.
	Written bool `json:"written"`
	// Source is "preview" for an output this run made from the embedded
	// preview, "raw" for one that asked for source=auto and was made
	// from the raw data, SourceReason then saying why the preview did
	// not qualify (pipeline.VariantResult).
	Source       string `json:"source,omitempty"`
	SourceReason string `json:"source_reason,omitempty"`
}

// StatusPlanned is the status of a file a dry run would convert (in a
// --dry-run report only).
const StatusPlanned Status = "planned"

// FileReport is one input of a run.
type FileReport struct {
	// Input is the input's path for display; InputB64, set only when it is
	// not valid UTF-8, its exact bytes in standard base64.
	Input    string `json:"input"`
	InputB64 string `json:"input_b64,omitempty"`
	Status   Status `json:"status"`
	// Kind is the kind of a failure, as in failed.jsonl: empty,
	// not-raw, unsupported, corrupt, over-budget, crashed, timeout or
	// error; empty unless Status is failed.
	Kind string `json:"kind,omitempty"`
	// Reason says why a file failed, was skipped or locked.
	Reason string `json:"reason,omitempty"`
	// Outputs are the input's output files: written, up to date, or
	// planned; none for a failed or locked file.
	Outputs []ReportOutput `json:"outputs"`
	// Warnings are the file's warnings.
	Warnings []string `json:"warnings,omitempty"`
	// TimingsMS is each stage's wall time in milliseconds.
	TimingsMS map[string]float64 `json:"timings_ms,omitempty"`
	// Steps names the timed steps in the order they ran (the file's
	// stage plan, pipeline.PlanVariants).
	Steps []string `json:"steps,omitempty"`
	// StagePlan is, in a dry run's report, the number of the stage plan
	// the file would run (Report.StagePlans; 0: none).
	StagePlan int `json:"stage_plan,omitempty"`
	// EstimatedBytes is the memory estimate of the file, with the worker
	// process's own WorkerRSS when it ran in one, as the scheduler counts
	// it; PeakBytes the worker process's measured peak RSS (both bytes, 0
	// if unknown).
	EstimatedBytes int64 `json:"estimated_bytes"`
	PeakBytes      int64 `json:"peak_bytes"`
	DurationMS     int64 `json:"duration_ms"`
	// Threads is the thread count the conversion ran with (FileResult.
	// Threads: LibRaw's OpenMP threads and its worker's GOMAXPROCS,
	// decided as the file was admitted; 0, left out: it did not start).
	Threads int `json:"threads,omitempty"`
	// ThreadsMax is the most threads it ran on (FileResult.ThreadsMax):
	// above Threads when cores other files freed were given to it while
	// it ran; left out when it did not start.
	ThreadsMax int `json:"threads_max,omitempty"`
	// Messages are what the decoder printed (LibRaw, libjpeg).
	Messages string `json:"messages,omitempty"`
	// Preset names the config preset the file was converted with
	// (Task.Preset); "" none.
	Preset string `json:"preset,omitempty"`
	// WhiteBalance is the white balance used and why (converted files).
	WhiteBalance *pipeline.WhiteBalanceUsed `json:"white_balance,omitempty"`
	// Crop is the part of LibRaw's visible area the outputs cover and
	// where it came from (converted files; docs/crop.md).
	Crop *pipeline.Crop `json:"crop,omitempty"`
	// ExposureEV is the exposure applied in EV and ExposureSource its terms
	// (pipeline.Result.Exposure); converted files only.
	ExposureEV     *float64 `json:"exposure_ev,omitempty"`
	ExposureSource string   `json:"exposure_source,omitempty"`
	// DNGOpcodes is what was done with a converted DNG's opcode lists.
	DNGOpcodes *pipeline.OpcodesResult `json:"dng_opcodes,omitempty"`
	// Denoise and CaptureSharpen are the noise reduction and capture
	// sharpening applied and why (converted files).
	Denoise        *pipeline.DenoiseUsed `json:"denoise,omitempty"`
	CaptureSharpen *pipeline.SharpenUsed `json:"capture_sharpen,omitempty"`
	// Demosaic is the demosaic the file actually got (pipeline.Result.
	// Demosaic: "rcd", LibRaw's "ahd", "vng", ..., "xtrans", or "none" for
	// a half-size decode or a file without a CFA), also when served from
	// the stage cache; converted files only.
	Demosaic string `json:"demosaic,omitempty"`
	// Streamed: the conversion ran from demosaic to encode in row bands,
	// without a full-size image (pipeline.Result.Streamed); false when it
	// made the whole image. Set for every converted file, nil (left out)
	// for the others.
	Streamed *bool `json:"streamed,omitempty"`
	// HalfSizeTier: the half-size tier decoded the file at half size, its
	// variants all being at most half the picture
	// (pipeline.Result.HalfSizeTier; --half-size-tier).
	HalfSizeTier bool `json:"half_size_tier,omitempty"`
	// Lens is the lens correction: the profile used, or why none (converted
	// files, unless --lens off).
	Lens *pipeline.LensCorrection `json:"lens,omitempty"`
	// Rating (-1 rejected .. 5), Label ("Red", ...) and Pick ("pick",
	// "reject") are what the file's XMP says (a DNG's own packet, its
	// sidecar's fields over it; Task.XMP); left out when it says nothing
	// or sidecars are off.
	Rating *int   `json:"rating,omitempty"`
	Label  string `json:"label,omitempty"`
	Pick   string `json:"pick,omitempty"`
	// Edit is the file's own edit its outputs were made with (its
	// sidecar's, --sidecar geometry or basic); converted files that have
	// one only.
	Edit *EditReport `json:"edit,omitempty"`
}

// EditReport is a file's own edit (pipeline.Edit) in the report:
// Orientation the EXIF orientation that replaced the file's (1..8),
// Crop the crop rectangle (fractions of the image as stored, turned by
// AngleDeg degrees clockwise), ExposureEV the exposure added in EV, and
// TemperatureK and Tint the white balance that replaced --wb (kelvin,
// Camera Raw's tint); each left out when the edit does not set it.
type EditReport struct {
	Orientation  int             `json:"orientation,omitempty"`
	Crop         *EditCropReport `json:"crop,omitempty"`
	ExposureEV   float64         `json:"exposure_ev,omitempty"`
	TemperatureK float64         `json:"temperature_k,omitempty"`
	Tint         float64         `json:"tint,omitempty"`
}

// EditCropReport is pipeline.EditCrop in the report.
type EditCropReport struct {
	Left     float64 `json:"left"`
	Top      float64 `json:"top"`
	Right    float64 `json:"right"`
	Bottom   float64 `json:"bottom"`
	AngleDeg float64 `json:"angle_deg"`
}

// editReport returns e in the report's terms, nil for none.
func editReport(e *pipeline.Edit) *EditReport {
	if e == nil {
		return nil
	}
	r := &EditReport{Orientation: e.Orientation, ExposureEV: e.Exposure}
	if e.Temperature > 0 {
		r.TemperatureK, r.Tint = e.Temperature, e.Tint
	}
	if c := e.Crop; c != nil {
		r.Crop = &EditCropReport{Left: c.Left, Top: c.Top, Right: c.Right, Bottom: c.Bottom, AngleDeg: c.Angle}
	}
	return r
}

// ReportPath returns path for display in a report and, when path is not
// valid UTF-8, its exact bytes in standard base64 (else ""). The display
// form shows each byte that is not UTF-8 as \xNN.
func ReportPath(path string) (display, b64 string) {
	if utf8.ValidString(path) {
		return path, ""
	}
	return pipeline.Text(path).Escaped(), base64.StdEncoding.EncodeToString([]byte(path))
}

// ReportText is s with each byte that is not UTF-8 shown as \xNN, as
// ReportPath's display form (pipeline.Text.Escaped): for the texts of a
// report that may hold a file name (reasons, warnings).
func ReportText(s string) string { return pipeline.Text(s).Escaped() }

// reportOutputs lists fr's output files: each of the task's outputs,
// Written when this run wrote it; of a file that did not finish, those
// its worker had put in place (FileResult.Kept).
func reportOutputs(fr FileResult) []ReportOutput {
	outs := []ReportOutput{}
	// What the run wrote, by variant name and by path.
	written := map[string]bool{}
	source := map[string]pipeline.VariantResult{}
	if fr.Status == StatusConverted {
		for _, v := range fr.Result.Variants {
			written["name:"+v.Name] = true
			written[v.Path] = true
			source[v.Name] = v
		}
		if len(fr.Result.Variants) == 0 {
			written[fr.Output] = true
		}
	}
	add := func(path, variant string) {
		o := ReportOutput{Variant: variant, Written: written[path] || (variant != "" && written["name:"+variant])}
		if o.Written {
			o.Source, o.SourceReason = source[variant].Source, ReportText(source[variant].SourceReason)
		}
		o.Path, o.PathB64 = ReportPath(path)
		outs = append(outs, o)
	}
	for _, p := range fr.Kept {
		written[p] = true
	}
	switch {
	case len(fr.Kept) > 0:
		for _, p := range fr.Kept {
			add(p, outputVariant(fr, p))
		}
	case fr.Status == StatusFailed, fr.Status == StatusLocked, fr.Status == StatusKnownFailure:
	case fr.Status == StatusSkipped && fr.Reason != "up to date":
	case fr.Status == StatusPlanned && fr.Pending != nil:
		for _, i := range fr.Pending {
			add(fr.Outputs[i].Path, fr.Outputs[i].Variant.Name)
		}
	case len(fr.Outputs) > 0:
		for _, o := range fr.Outputs {
			add(o.Path, o.Variant.Name)
		}
	case fr.Output != "":
		add(fr.Output, "")
	}
	return outs
}

// outputVariant is the variant name of fr's output at path ("" when
// none is).
func outputVariant(fr FileResult, path string) string {
	for _, o := range fr.Outputs {
		if o.Path == path {
			return o.Variant.Name
		}
	}
	return ""
}

// BuildReport summarises results: Summary, Files, and Warnings with each
// file's warnings.
func BuildReport(results []FileResult) Report {
	rep := Report{Files: make([]FileReport, 0, len(results)), Warnings: []ReportWarning{}, Settings: map[string]any{}}
	for _, fr := range results {
		f := FileReport{Status: fr.Status, Outputs: reportOutputs(fr),
			EstimatedBytes: fr.Estimate.Total, PeakBytes: fr.PeakBytes,
			DurationMS: fr.Duration.Milliseconds(), Messages: fr.Messages, Preset: fr.Preset, Threads: fr.Threads, ThreadsMax: fr.ThreadsMax}
		f.Input, f.InputB64 = ReportPath(fr.Input)
		if r, err := strconv.Atoi(fr.XMP.Rating); err == nil {
			f.Rating = &r
		}
		f.Label, f.Pick = ReportText(fr.XMP.Label), fr.XMP.Pick
		if fr.NeedBytes > 0 { // Runner.Need: what the scheduler held
			f.EstimatedBytes = fr.NeedBytes
		} else if fr.Estimate.Total > 0 && (fr.PeakBytes > 0 || fr.Status == StatusPlanned) { // in a worker
			f.EstimatedBytes = WorkerBytes(fr.Estimate)
		}
		// Texts that name files show bytes that are not UTF-8 as \xNN,
		// as the paths do (JSON would turn them into U+FFFD).
		if fr.Err != nil && (fr.Status != StatusSkipped || fr.Reason == "") {
			f.Reason = ReportText(fr.Err.Error())
		} else if fr.Reason != "" {
			f.Reason = ReportText(fr.Reason)
		}
		f.Messages = ReportText(f.Messages)
		if fr.Status == StatusFailed || fr.Status == StatusKnownFailure {
			f.Kind = rawerr.Kind(fr.Err)
		}
		for _, w := range fr.Result.Warnings {
			w = ReportText(w)
			f.Warnings = append(f.Warnings, w)
			rep.Warnings = append(rep.Warnings, ReportWarning{Input: f.Input, InputB64: f.InputB64, Message: w})
		}
		if fr.Status == StatusConverted {
			f.WhiteBalance = fr.Result.WhiteBalance
			f.DNGOpcodes = fr.Result.Opcodes
			f.Lens = fr.Result.Lens
			f.Crop = fr.Result.Crop
			f.Edit = editReport(fr.Result.Edit)
			ev := fr.Result.Exposure.EV
			f.ExposureEV, f.ExposureSource = &ev, fr.Result.Exposure.Source
			f.Denoise, f.CaptureSharpen = fr.Result.Denoise, fr.Result.CaptureSharpen
			f.Demosaic = fr.Result.Demosaic
			streamed := fr.Result.Streamed
			f.Streamed = &streamed
			f.HalfSizeTier = fr.Result.HalfSizeTier
			f.TimingsMS = map[string]float64{}
			for _, st := range fr.Result.Timings {
				f.TimingsMS[st.Stage] = float64(st.Duration) / float64(time.Millisecond)
				f.Steps = append(f.Steps, st.Stage)
			}
		}
		rep.Summary.count(fr.Status, fr.Decoded)
		rep.Files = append(rep.Files, f)
	}
	return rep
}

// count adds a file of status st to s (decoded: LibRaw decoded it).
func (s *ReportSummary) count(st Status, decoded bool) {
	if decoded {
		s.Decodes++
	}
	switch st {
	case StatusConverted:
		s.Converted++
	case StatusFailed:
		s.Failed++
	case StatusLocked:
		s.Locked++
	case StatusPlanned:
		s.Planned++
	default:
		s.Skipped++
	}
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
// failed file of this run ({"input", "input_b64", "reason", "kind"}), empty
// when none. Paths and reasons are shown as in the report (ReportPath,
// ReportText): input_b64, only when the input is not valid UTF-8, holds its
// exact bytes in standard base64.
func WriteFailed(outDir string, results []FileResult) error {
	var b []byte
	for _, fr := range results {
		if fr.Status != StatusFailed {
			continue
		}
		input, inputB64 := ReportPath(fr.Input)
		line, _ := json.Marshal(struct {
			Input    string `json:"input"`
			InputB64 string `json:"input_b64,omitempty"`
			Reason   string `json:"reason"`
			Kind     string `json:"kind"`
		}{input, inputB64, ReportText(errText(fr.Err)), rawerr.Kind(fr.Err)})
		b = append(append(b, line...), '\n')
	}
	dir := filepath.Join(outDir, ".rawbatch")
	if err := os.MkdirAll(outDir, 0o777); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	// Not through a .rawbatch planted as a symbolic link or by another user.
	if err := fileperm.CheckDir(dir); err != nil {
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

// writeAtomic writes data to path with atomicfile.Write, through one of
// rawbatch's temporary files (pipeline.CreateTemp: locked, so a cleaner leaves it
// alone). A failed fsync of the directory after the rename is not an
// error here: the file is written.
func writeAtomic(path string, data []byte) error {
	err := atomicfile.Write(path, data, atomicfile.Options{
		Create: func(string, string) (*os.File, error) { return pipeline.CreateTemp(path) },
	})
	if errors.Is(err, atomicfile.ErrDirSync) {
		return nil
	}
	return err
}

// FailureKind names the kind of a failure err as failed.jsonl and the
// report do: one of FailureKinds ("" for nil).
func FailureKind(err error) string { return rawerr.Kind(err) }

// FailureKinds lists every kind FailureKind can return for a non-nil
// error, "error" (anything else) last (rawerr.Kinds). docs/report.schema.json
// and docs/reruns.md list the same (a test compares them).
func FailureKinds() []string { return rawerr.Kinds() }
