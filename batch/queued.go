package batch

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/pipeline/sidecar"
)

// QueuedTask is a Task as a job of the multi-host mode carries it to a
// worker on another host (a queue.Job's Payload is it as JSON, its paths
// as bytes: MarshalJSON): what the worker needs to convert the file
// exactly as `rawbatch convert` would on the submitting host, after its
// planning (walk, names, collisions, settle, up-to-date triage,
// Relocate). Paths are as the submitter saw them (shared storage: the
// same mount on every host, or mapped with PathMap).
type QueuedTask struct {
	// Input, Rel, Output, OutputRel, Stem and Paths are the Task's.
	Input     string   `json:"input"`
	Rel       string   `json:"rel"`
	Output    string   `json:"output"`
	OutputRel string   `json:"output_rel"`
	Stem      string   `json:"stem"`
	Paths     []Output `json:"paths,omitempty"`
	// Outputs are the files of each variant as planned (Relocate may have
	// moved them to STEM-N); empty: made from Settings' variants.
	Outputs []Output `json:"outputs,omitempty"`
	// Size (bytes) and ModTime are the input's when it was planned: the
	// worker's changed-input check compares them.
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mtime"`
	// OutDir is the output directory (its records and locks).
	OutDir string `json:"outdir"`
	// Settings are the conversion's settings (the file's preset's, when
	// one applies: Preset names it); SettingsHash the
	// submitter's SettingsHash of them (a worker whose own hash of
	// Settings differs runs another develop and refuses the job: Check);
	// Version the submitter's rawbatch version.
	Settings     pipeline.Settings `json:"settings"`
	SettingsHash string            `json:"settings_hash"`
	Version      string            `json:"version"`
	Preset       string            `json:"preset,omitempty"`
	// The runner flags that change what is written (Runner's fields of
	// the same names); Timeout and LockWait in nanoseconds (0: default).
	Force      bool `json:"force,omitempty"`
	Overwrite  bool `json:"overwrite,omitempty"`
	NoRecreate bool `json:"no_recreate,omitempty"`
	EditedKeep bool `json:"edited_keep,omitempty"`
	// KnownFailuresSkip: Runner.KnownFailuresSkip.
	KnownFailuresSkip bool          `json:"known_failures_skip,omitempty"`
	Timeout           time.Duration `json:"timeout,omitempty"`
	LockWait          time.Duration `json:"lock_wait,omitempty"`
	// NoSettle: Runner.NoSettle (the submitter's --min-age 0).
	NoSettle bool `json:"no_settle,omitempty"`
	// Estimate is the submitter's memory estimate of the conversion in a
	// worker process, at one thread, in bytes (WorkerBytes).
	Estimate int64 `json:"estimate"`
	// NewPhoto is the warning of a task Relocate moved to STEM-N;
	// OtherGone: it takes the name of another photograph's deleted export.
	NewPhoto  string `json:"new_photo,omitempty"`
	OtherGone bool   `json:"other_gone,omitempty"`
	// XMP is the Task's: what the input's sidecar said when it was
	// planned, in the outputs' settings hash on the worker as on the
	// submitter.
	XMP sidecar.Meta `json:"xmp"`
}

// queuedFields is QueuedTask without its methods.
type queuedFields QueuedTask

// queuedWire is a QueuedTask as JSON: every path as bytes (base64), as the
// worker wire sends them (a file name need not be UTF-8, and encoding/json
// would replace such a byte by U+FFFD); the other fields as tagged.
type queuedWire struct {
	queuedFields
	Input     []byte         `json:"input"`
	Rel       []byte         `json:"rel"`
	Output    []byte         `json:"output"`
	OutputRel []byte         `json:"output_rel"`
	Stem      []byte         `json:"stem"`
	OutDir    []byte         `json:"outdir"`
	Paths     []queuedOutput `json:"paths,omitempty"`
	Outputs   []queuedOutput `json:"outputs,omitempty"`
}

// queuedOutput is an Output as JSON, its paths as bytes.
type queuedOutput struct {
	Variant   pipeline.Variant
	Path, Rel []byte
}

func outputsToWire(os []Output) []queuedOutput {
	if os == nil {
		return nil
	}
	w := make([]queuedOutput, len(os))
	for i, o := range os {
		w[i] = queuedOutput{Variant: o.Variant, Path: []byte(o.Path), Rel: []byte(o.Rel)}
	}
	return w
}

func outputsFromWire(w []queuedOutput) []Output {
	if w == nil {
		return nil
	}
	os := make([]Output, len(w))
	for i, o := range w {
		os[i] = Output{Variant: o.Variant, Path: string(o.Path), Rel: string(o.Rel)}
	}
	return os
}

// MarshalJSON writes q with its paths as bytes (queuedWire).
func (q QueuedTask) MarshalJSON() ([]byte, error) {
	return json.Marshal(queuedWire{queuedFields: queuedFields(q),
		Input: []byte(q.Input), Rel: []byte(q.Rel), Output: []byte(q.Output), OutputRel: []byte(q.OutputRel),
		Stem: []byte(q.Stem), OutDir: []byte(q.OutDir), Paths: outputsToWire(q.Paths), Outputs: outputsToWire(q.Outputs)})
}

// UnmarshalJSON reads a QueuedTask written by MarshalJSON.
func (q *QueuedTask) UnmarshalJSON(b []byte) error {
	var w queuedWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*q = QueuedTask(w.queuedFields)
	q.Input, q.Rel, q.Output, q.OutputRel = string(w.Input), string(w.Rel), string(w.Output), string(w.OutputRel)
	q.Stem, q.OutDir = string(w.Stem), string(w.OutDir)
	q.Paths, q.Outputs = outputsFromWire(w.Paths), outputsFromWire(w.Outputs)
	return nil
}

// QueueTask returns t, planned by r (after Triage, Inspect and Relocate),
// as a job's task: t's paths and plan, its settings (its preset's, else
// r's; the worker applies the file's own edit from XMP, as here) and
// their hash, r's version and the flags that change what is
// written.
func (r *Runner) QueueTask(t Task) QueuedTask {
	return QueuedTask{Input: t.Input, Rel: t.Rel, Output: t.Output, OutputRel: t.OutputRel, Stem: t.Stem,
		Paths: t.Paths, Outputs: t.Outputs, Size: t.Size, ModTime: t.ModTime, OutDir: r.OutDir,
		Settings: r.presetOr(t), SettingsHash: r.settingsHashOf(t), Version: r.Version, Preset: t.Preset,
		Force: r.Force, Overwrite: r.Overwrite, NoRecreate: r.NoRecreate, EditedKeep: r.EditedKeep, KnownFailuresSkip: r.KnownFailuresSkip, Timeout: r.Timeout, LockWait: r.LockWait, NoSettle: r.NoSettle,
		Estimate: WorkerBytes(t.Estimate), NewPhoto: t.newPhoto, OtherGone: t.otherGone, XMP: t.XMP}
}

// Task returns q as a Task to plan and run on a worker (Runner.Triage,
// Plan.Inspect, Runner.Run): its header and estimate are read again there.
// The input was settled by the submitter (Settled).
func (q QueuedTask) Task() Task {
	return Task{Input: q.Input, Rel: q.Rel, Output: q.Output, OutputRel: q.OutputRel, Stem: q.Stem,
		Paths: q.Paths, Outputs: q.Outputs, Size: q.Size, ModTime: q.ModTime, Settled: true,
		newPhoto: q.NewPhoto, otherGone: q.OtherGone, relocated: true, XMP: q.XMP, Preset: q.Preset}
}

// Configure sets r's fields that q decides (Settings, SettingsHash,
// Version, OutDir and the flags that change what is written); the local
// ones (Exe, CacheDir, Grace, State, Locks, ...) are the worker's.
func (q QueuedTask) Configure(r *Runner) {
	r.Settings, r.SettingsHash, r.Version, r.OutDir = q.Settings, q.SettingsHash, q.Version, q.OutDir
	r.Force, r.Overwrite, r.NoRecreate, r.Timeout, r.LockWait = q.Force, q.Overwrite, q.NoRecreate, q.Timeout, q.LockWait
	r.EditedKeep, r.KnownFailuresSkip, r.NoSettle = q.EditedKeep, q.KnownFailuresSkip, q.NoSettle
}

// ErrOtherDevelop: a queued task was submitted by a rawbatch whose develop
// (settings hash) differs from this one's; every host must run the same
// rawbatch version.
var ErrOtherDevelop = errors.New("submitted with another rawbatch develop")

// Check returns an error wrapping ErrOtherDevelop, naming the input and
// both versions, when SettingsHash of q's Settings computed here is not
// the submitter's (another rawbatch version, another develop), else nil.
// version is this rawbatch's.
func (q QueuedTask) Check(version string) error {
	if h := SettingsHash(q.Settings); h != q.SettingsHash {
		return fmt.Errorf("%s: %w: submitted with rawbatch %s's develop (settings hash %s), this worker runs rawbatch %s (%s); run the same rawbatch version on every host",
			q.Input, ErrOtherDevelop, q.Version, q.SettingsHash, version, h)
	}
	return nil
}

// PathMap maps the paths of queued tasks as the submitter named them to
// this host's (hosts that mount the shared storage at different places:
// `rawbatch work --path-map FROM=TO`). The first entry whose From is a
// whole-component prefix of a path applies.
type PathMap []PathMapping

// PathMapping is one FROM=TO entry of a PathMap (cleaned absolute or
// relative paths).
type PathMapping struct{ From, To string }

// ParsePathMapping parses FROM=TO. Errors: no "=", an empty side.
func ParsePathMapping(s string) (PathMapping, error) {
	from, to, ok := strings.Cut(s, "=")
	if !ok || from == "" || to == "" {
		return PathMapping{}, fmt.Errorf("path mapping %q: want FROM=TO (two non-empty paths)", s)
	}
	return PathMapping{From: filepath.Clean(from), To: filepath.Clean(to)}, nil
}

// Path returns p mapped: To in place of the first From that is p or a
// directory above it; p itself when none is.
func (m PathMap) Path(p string) string {
	if p == "" {
		return p
	}
	for _, e := range m {
		if p == e.From {
			return e.To
		}
		prefix := strings.TrimSuffix(e.From, string(filepath.Separator)) + string(filepath.Separator)
		if strings.HasPrefix(p, prefix) {
			return filepath.Join(e.To, p[len(prefix):])
		}
	}
	return p
}

// Reverse returns m with each entry's sides swapped: it maps this host's
// paths back to the submitter's.
func (m PathMap) Reverse() PathMap {
	out := make(PathMap, len(m))
	for i, e := range m {
		out[i] = PathMapping{From: e.To, To: e.From}
	}
	return out
}

// ReverseReport returns report, a JobReport as JSON made on this host,
// with its input and output paths mapped back to the submitter's
// (Reverse), so that the submitter's report names the files as its host
// knows them; report itself when m is empty or report is not a JobReport.
func (m PathMap) ReverseReport(report []byte) []byte {
	if len(m) == 0 || len(report) == 0 {
		return report
	}
	var jr JobReport
	if json.Unmarshal(report, &jr) != nil {
		return report
	}
	back := m.Reverse()
	f := &jr.File
	if f.Input != "" {
		in := f.Input
		if b, err := base64.StdEncoding.DecodeString(f.InputB64); err == nil && f.InputB64 != "" {
			in = string(b)
		}
		f.Input, f.InputB64 = ReportPath(back.Path(in))
	}
	for i := range f.Outputs {
		o := &f.Outputs[i]
		p := o.Path
		if o.PathB64 != "" { // the exact bytes of a path that is not UTF-8
			if b, err := base64.StdEncoding.DecodeString(o.PathB64); err == nil {
				p = string(b)
			}
		}
		o.Path, o.PathB64 = ReportPath(back.Path(p))
	}
	b, err := json.Marshal(jr)
	if err != nil {
		return report
	}
	return b
}

// ReverseText returns s, a message made on this host (a failure's
// reason), with the paths under each entry's To written as the
// submitter's (under From).
func (m PathMap) ReverseText(s string) string {
	sep := string(filepath.Separator)
	for _, e := range m {
		to := strings.TrimSuffix(e.To, sep)
		if to == "" || to == "." {
			continue
		}
		s = strings.ReplaceAll(s, to+sep, strings.TrimSuffix(e.From, sep)+sep)
	}
	return s
}

// Apply returns q with its paths (Input, Output, Stem, OutDir, Paths,
// Outputs) mapped; the paths relative to OUTDIR stay as they are.
func (m PathMap) Apply(q QueuedTask) QueuedTask {
	if len(m) == 0 {
		return q
	}
	q.Input, q.Output, q.Stem, q.OutDir = m.Path(q.Input), m.Path(q.Output), m.Path(q.Stem), m.Path(q.OutDir)
	mapOutputs := func(os []Output) []Output {
		if os == nil {
			return nil
		}
		out := make([]Output, len(os))
		for i, o := range os {
			o.Path = m.Path(o.Path)
			out[i] = o
		}
		return out
	}
	q.Paths, q.Outputs = mapOutputs(q.Paths), mapOutputs(q.Outputs)
	return q
}

// IsTransient reports whether err is a failure worth retrying later (the
// runner's own retries use the same test): ErrTransient, no space left,
// interrupted or would-block system calls, I/O timeouts.
func IsTransient(err error) bool { return transient(err) }

// ErrFenced marks a conversion whose outputs were written but not
// committed because Runner.Fence refused (the worker's lease was lost):
// no record was written; the outputs stay for the next delivery.
var ErrFenced = errors.New("not committed: the job's lease was lost (fenced)")

// JobReport is what a worker keeps of one conversion for the submitter's
// report (queue.Status.Result as JSON): the file's report entry and
// whether LibRaw decoded it.
type JobReport struct {
	File    FileReport `json:"file"`
	Decoded bool       `json:"decoded,omitempty"`
}

// JobReportOf returns fr's JobReport (BuildReport's entry of fr).
func JobReportOf(fr FileResult) JobReport {
	return JobReport{File: BuildReport([]FileResult{fr}).Files[0], Decoded: fr.Decoded}
}

// BuildReportOf summarises the entries of jobs as BuildReport summarises
// results: Summary (decodes from Decoded), Files, and Warnings with each
// file's warnings.
func BuildReportOf(jobs []JobReport) Report {
	rep := Report{Files: make([]FileReport, 0, len(jobs)), Warnings: []ReportWarning{}, Settings: map[string]any{}}
	for _, j := range jobs {
		f := j.File
		if f.Outputs == nil {
			f.Outputs = []ReportOutput{}
		}
		for _, w := range f.Warnings {
			rep.Warnings = append(rep.Warnings, ReportWarning{Input: f.Input, InputB64: f.InputB64, Message: w})
		}
		rep.Summary.count(f.Status, j.Decoded)
		rep.Files = append(rep.Files, f)
	}
	return rep
}

// StorageAway reports whether err, from opening or writing an output
// directory, says the shared storage is away for a while (unmounted, the
// server down or unreachable) rather than refusing for good: a missing
// path (ENOENT: the mount gone), ESTALE, EIO, ENOTCONN, EHOSTDOWN,
// ETIMEDOUT, and what IsTransient reports (ENOSPC, ErrTransient, ...). A
// refusal (EACCES, EPERM, EROFS, ENOTDIR, ...) is permanent: retrying
// finds it again.
func StorageAway(err error) bool {
	for _, e := range []error{os.ErrNotExist, syscall.ESTALE, syscall.EIO, syscall.ENOTCONN, syscall.EHOSTDOWN, syscall.ETIMEDOUT} {
		if errors.Is(err, e) {
			return true
		}
	}
	return IsTransient(err)
}
