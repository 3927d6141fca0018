package batch

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/pipeline/header"
	"github.com/rawbatch/rawbatch/state"
)

// A Preset is a config file's preset (presets:): develop settings applied
// to the files its Match matches. Of the presets matching a file, the one
// whose Match gives the most fields applies (MatchPreset).
type Preset struct {
	// Name names the preset in messages, the report and the console.
	Name  string
	Match PresetMatch
	// Settings are the run's settings with the preset's applied: the
	// settings of every file the preset applies to.
	Settings pipeline.Settings
}

// PresetMatch says which files a preset applies to: every field given
// must hold. The zero value matches every file.
type PresetMatch struct {
	// Camera is the camera's name as header.CameraName gives it from the
	// raw's EXIF Make and Model ("Canon EOS 6D", "NIKON D70", "SONY
	// ILCE-7M3", as `rawbatch inspect` shows it), compared whole and
	// case-sensitively: "Canon EOS 6D" is not "Canon EOS 6D Mark II".
	// "" matches any camera.
	Camera string
	// Lens is the lens's name as the raw's header gives it (header.EXIF.
	// Lens), compared whole and case-sensitively; "" matches any lens.
	Lens string
	// ISO, when HasISO, is the range of ISO speeds matched, both ends
	// included (ISOMax 0: no upper end); a file whose header gives no ISO
	// is not matched.
	ISOMin, ISOMax int
	HasISO         bool
	// Glob matches the file's path relative to its input root or its
	// base name (MatchGlob, as --include); "" matches any file.
	Glob string
}

// PresetFile is what a preset is matched against: the file's path
// relative to its input root, its camera name (header.CameraName), lens
// and ISO (0: unknown).
type PresetFile struct {
	Rel, Camera, Lens string
	ISO               int
}

// ParseISORange parses a preset's iso: "3200" (exactly), "3200-" (3200
// and above), "-800" (up to 800) or "400-1600" (both ends included).
// Errors: not whole numbers, below 1, min above max.
func ParseISORange(s string) (lo, hi int, err error) {
	s = strings.TrimSpace(s)
	a, b, ranged := strings.Cut(s, "-")
	num := func(t string) (int, error) {
		n, err := strconv.Atoi(strings.TrimSpace(t))
		if err != nil || n < 1 {
			return 0, fmt.Errorf("iso %q: want an ISO speed (3200) or a range (400-1600, 3200-, -800)", s)
		}
		return n, nil
	}
	if !ranged {
		lo, err = num(a)
		return lo, lo, err
	}
	if strings.TrimSpace(a) == "" && strings.TrimSpace(b) == "" {
		return 0, 0, fmt.Errorf("iso %q: want an ISO speed (3200) or a range (400-1600, 3200-, -800)", s)
	}
	if strings.TrimSpace(a) != "" {
		if lo, err = num(a); err != nil {
			return 0, 0, err
		}
	}
	if strings.TrimSpace(b) != "" {
		if hi, err = num(b); err != nil {
			return 0, 0, err
		}
	}
	if hi > 0 && lo > hi {
		return 0, 0, fmt.Errorf("iso %q: the range's lower end is above its upper end", s)
	}
	return lo, hi, nil
}

// Specificity is the number of fields m gives: of the presets matching a
// file, the one with the most applies.
func (m PresetMatch) Specificity() int {
	n := 0
	for _, given := range []bool{m.Camera != "", m.Lens != "", m.HasISO, m.Glob != ""} {
		if given {
			n++
		}
	}
	return n
}

// NeedsHeader reports whether m matches on what the raw's header says
// (camera, lens, ISO), so that the files' headers must be read to match it.
func (m PresetMatch) NeedsHeader() bool { return m.Camera != "" || m.Lens != "" || m.HasISO }

// isoRange returns m's ISO range, [1, +inf) when it gives none.
func (m PresetMatch) isoRange() (lo, hi int) {
	lo, hi = 1, math.MaxInt
	if m.HasISO {
		lo = max(1, m.ISOMin)
		if m.ISOMax > 0 {
			hi = m.ISOMax
		}
	}
	return lo, hi
}

// Matches reports whether f is one of m's files.
func (m PresetMatch) Matches(f PresetFile) bool {
	if m.Camera != "" && m.Camera != strings.TrimSpace(f.Camera) {
		return false
	}
	if m.Lens != "" && m.Lens != strings.TrimSpace(f.Lens) {
		return false
	}
	if m.HasISO {
		lo, hi := m.isoRange()
		if f.ISO < lo || f.ISO > hi {
			return false
		}
	}
	return m.Glob == "" || MatchGlob(m.Glob, f.Rel)
}

// String describes m as the config file gives it, for messages:
// "camera Canon EOS 6D, iso 3200-".
func (m PresetMatch) String() string {
	var parts []string
	if m.Camera != "" {
		parts = append(parts, "camera "+m.Camera)
	}
	if m.Lens != "" {
		parts = append(parts, "lens "+m.Lens)
	}
	if m.HasISO {
		r := ""
		if m.ISOMin > 0 {
			r = strconv.Itoa(m.ISOMin)
		}
		if m.ISOMin != m.ISOMax {
			r += "-"
			if m.ISOMax > 0 {
				r += strconv.Itoa(m.ISOMax)
			}
		}
		parts = append(parts, "iso "+r)
	}
	if m.Glob != "" {
		parts = append(parts, "glob "+m.Glob)
	}
	if len(parts) == 0 {
		return "every file"
	}
	return strings.Join(parts, ", ")
}

// overlaps reports whether a file could match both a and b as far as
// their fields tell without trying files: the cameras and lenses both give
// are the same and their ISO ranges meet. Two different globs are taken
// as apart (folders of a shoot: wedding/**, studio/**); a file both match
// is found when it is matched (MatchPreset).
func (a PresetMatch) overlaps(b PresetMatch) bool {
	if a.Camera != "" && b.Camera != "" && a.Camera != b.Camera ||
		a.Lens != "" && b.Lens != "" && a.Lens != b.Lens ||
		a.Glob != "" && b.Glob != "" && !strings.EqualFold(a.Glob, b.Glob) {
		return false
	}
	alo, ahi := a.isoRange()
	blo, bhi := b.isoRange()
	return max(alo, blo) <= min(ahi, bhi)
}

// covers reports whether every file matching both a and b matches c, as
// far as fields tell: each field c gives is one a or b gives, as strict
// (the same camera, lens or glob; an ISO range holding their common one).
func (c PresetMatch) covers(a, b PresetMatch) bool {
	either := func(cv, av, bv string) bool { return cv == "" || cv == av || cv == bv }
	glob := func(cv, av, bv string) bool { // globs match case-insensitively
		return cv == "" || strings.EqualFold(cv, av) || strings.EqualFold(cv, bv)
	}
	if !either(c.Camera, a.Camera, b.Camera) || !either(c.Lens, a.Lens, b.Lens) || !glob(c.Glob, a.Glob, b.Glob) {
		return false
	}
	if c.HasISO {
		alo, ahi := a.isoRange()
		blo, bhi := b.isoRange()
		clo, chi := c.isoRange()
		if clo > max(alo, blo) || chi < min(ahi, bhi) {
			return false
		}
	}
	return true
}

// CheckPresets returns an error for presets that cannot be told apart:
// two with the same name, or two as specific as each other (Specificity)
// that could both match a file (the same camera or lens where both give
// one, ISO ranges that meet, the same glob or not both a glob), unless a
// more specific preset covers every file both match. The error names both
// presets and says how to resolve it.
func CheckPresets(ps []Preset) error {
	for i, a := range ps {
		for _, b := range ps[:i] {
			if a.Name == b.Name {
				return fmt.Errorf("two presets are named %q: give each its own name", a.Name)
			}
		}
	}
	for i, a := range ps {
		for _, b := range ps[:i] {
			if a.Match.Specificity() != b.Match.Specificity() || !a.Match.overlaps(b.Match) {
				continue
			}
			covered := slices.ContainsFunc(ps, func(c Preset) bool {
				return c.Match.Specificity() > a.Match.Specificity() && c.Match.covers(a.Match, b.Match)
			})
			if !covered {
				return fmt.Errorf("presets %q (%s) and %q (%s) are as specific as each other and could both match one file: make their matches exclusive (another camera, lens or ISO range) or add a preset that matches on the fields of both",
					b.Name, b.Match, a.Name, a.Match)
			}
		}
	}
	return nil
}

// MatchPreset returns the preset of ps that applies to f: of those
// matching it, the most specific (Specificity); nil when none matches.
// Errors: two equally specific presets match f (CheckPresets lets some
// through: globs are not compared), naming both.
func MatchPreset(ps []Preset, f PresetFile) (*Preset, error) {
	var best *Preset
	tie := -1
	for i := range ps {
		p := &ps[i]
		if !p.Match.Matches(f) {
			continue
		}
		switch {
		case best == nil || p.Match.Specificity() > best.Match.Specificity():
			best, tie = p, -1
		case p.Match.Specificity() == best.Match.Specificity() && tie < 0:
			tie = i
		}
	}
	if tie >= 0 {
		return nil, fmt.Errorf("presets %q (%s) and %q (%s) both match it, and are as specific as each other: make their matches exclusive",
			best.Name, best.Match, ps[tie].Name, ps[tie].Match)
	}
	return best, nil
}

// presetFile is what the presets are matched against for t: its Rel and
// what its header (read by Inspect) says, else the camera its records
// hold (recorded, may be "").
func presetFile(t Task, recorded string) PresetFile {
	f := PresetFile{Rel: t.Rel, Camera: recorded}
	if h := t.Info.Header; h != nil {
		f.Camera, f.Lens, f.ISO = header.CameraName(h.EXIF.Make, h.EXIF.Model), h.EXIF.Lens, h.EXIF.ISO
	}
	return f
}

// ApplyPresets gives each task the preset of ps that applies to it
// (MatchPreset): Task.Preset names it, and the file is converted, hashed
// and estimated with the preset's settings. A file two presets match
// equally fails, naming both. Call it after ResolveNames (inspected:
// whether that inspected the tasks) and before Runner.Triage.
//
// When a preset matches on the header (camera, lens, ISO) and the tasks
// were not inspected yet, it reads their headers first (Inspect with s,
// threads and jobs; files modified within minAge and not settled are left
// for Triage, which skips them), but not those of the files whose camera
// recorded gives (Runner.RecordedCamera: records written from the input
// as it is now) when the presets match on no more than camera and glob:
// an unchanged card's nightly run reads no header. It reports whether
// every task it did not leave was inspected: then Plan.Inspect need not
// run again.
func (p *Plan) ApplyPresets(ps []Preset, s pipeline.Settings, minAge time.Duration, inspected bool, recorded func(Task) string, threads, jobs int) bool {
	if len(ps) == 0 {
		return inspected
	}
	cameras := make([]string, len(p.Tasks))
	if !inspected && slices.ContainsFunc(ps, func(pr Preset) bool { return pr.Match.NeedsHeader() }) {
		cameraOnly := !slices.ContainsFunc(ps, func(pr Preset) bool { return pr.Match.Lens != "" || pr.Match.HasISO })
		tmp := &Plan{Tasks: slices.Clone(p.Tasks), Headers: p.Headers, Ctx: p.Ctx}
		inspected = true
		for i, t := range tmp.Tasks {
			switch {
			case recent(t.ModTime, minAge) && !t.Settled:
				tmp.Tasks[i].Done = &FileResult{} // not read: still being written
			case cameraOnly && recorded != nil && t.Err == nil && t.Done == nil:
				if cameras[i] = recorded(t); cameras[i] != "" {
					tmp.Tasks[i].Done = &FileResult{} // not read: its records name its camera
					inspected = false
				}
			}
		}
		tmp.Inspect(s, threads, jobs)
		for i, t := range tmp.Tasks {
			if t.Done == nil {
				p.Tasks[i].Info, p.Tasks[i].Estimate, p.Tasks[i].estThreads, p.Tasks[i].Err = t.Info, t.Estimate, t.estThreads, t.Err
			}
		}
	}
	for i := range p.Tasks {
		t := &p.Tasks[i]
		if t.Err != nil || t.Done != nil {
			continue
		}
		pr, err := MatchPreset(ps, presetFile(*t, cameras[i]))
		if err != nil {
			t.Err = fmt.Errorf("%s: %w", t.Input, err)
			continue
		}
		if pr == nil {
			continue
		}
		t.Preset, t.presetSettings = pr.Name, &pr.Settings
		if t.Info.Header != nil { // estimated with the run's settings: again with the preset's
			t.Estimate = pipeline.EstimateMemory(t.Info, pr.Settings, max(1, t.estThreads))
			t.Err = pipeline.CheckOutputLimits(t.Input, t.Info, pr.Settings)
		}
	}
	return inspected
}

// UnmatchedPresets returns a warning for each preset of ps that applies
// to none of the plan's files although some were matched (ApplyPresets
// has run): a camera or lens spelt otherwise than the header has it is
// otherwise a silent no-op. When a file's camera or lens differs from the
// preset's only in case, the warning names it.
func (p *Plan) UnmatchedPresets(ps []Preset) []string {
	used := map[string]bool{}
	var cameras, lenses []string
	matched := 0
	for _, t := range p.Tasks {
		if t.Done != nil {
			continue
		}
		// A file that two presets match fails (ApplyPresets), but both
		// apply to it: neither is one that matches nothing.
		for _, pr := range ps {
			if pr.Match.Matches(presetFile(t, "")) {
				used[pr.Name] = true
			}
		}
		if t.Err != nil {
			continue
		}
		matched++
		used[t.Preset] = true
		if h := t.Info.Header; h != nil {
			cameras = append(cameras, header.CameraName(h.EXIF.Make, h.EXIF.Model))
			lenses = append(lenses, h.EXIF.Lens)
		}
	}
	if matched == 0 {
		return nil
	}
	var warns []string
	for _, pr := range ps {
		if used[pr.Name] {
			continue
		}
		w := fmt.Sprintf("preset %q (%s) applies to none of the %d files", pr.Name, pr.Match, matched)
		if c := sameButCase(pr.Match.Camera, cameras); c != "" {
			w += fmt.Sprintf("; did you mean camera %q? (matched whole and case-sensitively, as `rawbatch inspect` prints it)", c)
		} else if l := sameButCase(pr.Match.Lens, lenses); l != "" {
			w += fmt.Sprintf("; did you mean lens %q? (matched whole and case-sensitively, as `rawbatch inspect` prints it)", l)
		}
		warns = append(warns, w)
	}
	return warns
}

// sameButCase returns the first of names that equals want but for case,
// "" when none does (or want is "").
func sameButCase(want string, names []string) string {
	for _, n := range names {
		if want != "" && n != want && strings.EqualFold(n, want) {
			return n
		}
	}
	return ""
}

// RecordedCamera returns the camera name (header.CameraName) that OUTDIR's
// record of t's first output holds when that record was written from t's
// input as it is now: its absolute path, and a size and modification time
// that prove it unchanged (as Store.Check trusts them: not within
// state.RacyWindow of the hash). "" otherwise: no records, no record,
// another input's, a changed input, no camera recorded.
func (r *Runner) RecordedCamera(t Task) string {
	if r.State == nil || t.OutputRel == "" {
		return ""
	}
	rec, err := r.State.Load(t.OutputRel)
	if err != nil || rec.Claim || rec.InputAbs == "" || rec.InputAbs != t.absInput() {
		return ""
	}
	if rec.InputSize != t.Size || !rec.InputMTime.Equal(t.ModTime) || !rec.InputMTime.Before(rec.InputChecked.Add(-state.RacyWindow)) {
		return ""
	}
	return rec.Camera
}

// presetOr returns t's preset's settings (ApplyPresets), else run: the
// settings before the file's own edit, which a queued job carries.
func (t Task) presetOr(run pipeline.Settings) pipeline.Settings {
	if t.presetSettings != nil {
		return *t.presetSettings
	}
	return run
}

// settingsOf returns the settings t is converted with: presetOr's, with
// the file's own edit from its XMP (developFor).
func (t Task) settingsOf(run pipeline.Settings) pipeline.Settings {
	return developFor(t.presetOr(run), t.XMP)
}

// presetOr and settingsOf are Task's, with the run's settings.
func (r *Runner) presetOr(t Task) pipeline.Settings   { return t.presetOr(r.Settings) }
func (r *Runner) settingsOf(t Task) pipeline.Settings { return t.settingsOf(r.Settings) }

// settingsHashOf is the settings hash of t before its sidecar
// (taskSettings): its preset's settings' SettingsHash, else the run's
// SettingsHash, so that a changed preset converts again the files it
// applies to and only those.
func (r *Runner) settingsHashOf(t Task) string {
	if t.presetSettings != nil {
		return SettingsHash(*t.presetSettings)
	}
	return r.SettingsHash
}
