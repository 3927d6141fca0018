package batch

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/state"
)

func TestPresetMatchCameraWhole(t *testing.T) {
	m := PresetMatch{Camera: "Canon EOS 6D"}
	for _, c := range []struct {
		camera string
		want   bool
	}{
		{"Canon EOS 6D", true},
		{"Canon EOS 6D Mark II", false}, // darktable's auto-presets would take it
		{"Canon EOS 6", false},
		{"canon eos 6d", false},
		{"", false},
	} {
		if got := m.Matches(PresetFile{Rel: "a.cr2", Camera: c.camera}); got != c.want {
			t.Errorf("camera %q: match %v, want %v", c.camera, got, c.want)
		}
	}
}

func TestPresetMatchFields(t *testing.T) {
	f := PresetFile{Rel: "wedding/IMG_1.CR2", Camera: "Canon EOS 6D", Lens: "EF24-105mm f/4L IS USM", ISO: 6400}
	for _, c := range []struct {
		m    PresetMatch
		want bool
	}{
		{PresetMatch{}, true},
		{PresetMatch{Lens: "EF24-105mm f/4L IS USM"}, true},
		{PresetMatch{Lens: "EF24-105mm"}, false},
		{PresetMatch{HasISO: true, ISOMin: 3200}, true},
		{PresetMatch{HasISO: true, ISOMin: 3200, ISOMax: 6400}, true},
		{PresetMatch{HasISO: true, ISOMax: 3200}, false},
		{PresetMatch{HasISO: true, ISOMin: 6401}, false},
		{PresetMatch{Glob: "wedding/**"}, true},
		{PresetMatch{Glob: "*.cr2"}, true}, // base name, case-insensitive as --include
		{PresetMatch{Glob: "studio/**"}, false},
		{PresetMatch{Camera: "Canon EOS 6D", HasISO: true, ISOMin: 3200, Glob: "wedding/**"}, true},
		{PresetMatch{Camera: "Canon EOS 6D", HasISO: true, ISOMax: 800}, false},
	} {
		if got := c.m.Matches(f); got != c.want {
			t.Errorf("%s: match %v, want %v", c.m, got, c.want)
		}
	}
	if (PresetMatch{HasISO: true, ISOMin: 100}).Matches(PresetFile{Rel: "x.dng"}) {
		t.Error("an ISO range matched a file whose header gives no ISO")
	}
}

func TestParseISORange(t *testing.T) {
	for _, c := range []struct {
		in     string
		lo, hi int
	}{{"3200", 3200, 3200}, {"3200-", 3200, 0}, {"-800", 0, 800}, {"400-1600", 400, 1600}, {" 100 - 200 ", 100, 200}} {
		lo, hi, err := ParseISORange(c.in)
		if err != nil || lo != c.lo || hi != c.hi {
			t.Errorf("%q: %d, %d, %v; want %d, %d", c.in, lo, hi, err, c.lo, c.hi)
		}
	}
	for _, bad := range []string{"", "-", "high", "1600-400", "0", "3200.5", "-5-"} {
		if _, _, err := ParseISORange(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestMatchPresetMostSpecific(t *testing.T) {
	six := Preset{Name: "6d", Match: PresetMatch{Camera: "Canon EOS 6D"}}
	high := Preset{Name: "6d-high", Match: PresetMatch{Camera: "Canon EOS 6D", HasISO: true, ISOMin: 3200}}
	wedding := Preset{Name: "wedding", Match: PresetMatch{Glob: "wedding/**"}}
	for _, c := range []struct {
		ps   []Preset
		f    PresetFile
		want string
	}{
		{[]Preset{six, high}, PresetFile{Rel: "a.cr2", Camera: "Canon EOS 6D", ISO: 100}, "6d"},
		{[]Preset{six, high}, PresetFile{Rel: "a.cr2", Camera: "Canon EOS 6D", ISO: 6400}, "6d-high"},
		{[]Preset{high, six}, PresetFile{Rel: "a.cr2", Camera: "Canon EOS 6D", ISO: 6400}, "6d-high"},
		{[]Preset{six, high}, PresetFile{Rel: "a.cr2", Camera: "Canon EOS 6D Mark II", ISO: 6400}, ""},
		{[]Preset{high, wedding}, PresetFile{Rel: "wedding/a.nef", Camera: "NIKON D70", ISO: 6400}, "wedding"},
		{[]Preset{wedding, high}, PresetFile{Rel: "wedding/a.cr2", Camera: "Canon EOS 6D", ISO: 6400}, "6d-high"},
	} {
		if err := CheckPresets(c.ps); err != nil {
			t.Fatal(err)
		}
		p, err := MatchPreset(c.ps, c.f)
		got := ""
		if p != nil {
			got = p.Name
		}
		if err != nil || got != c.want {
			t.Errorf("%+v: preset %q (%v), want %q", c.f, got, err, c.want)
		}
	}
}

func TestMatchPresetTieAtMatch(t *testing.T) {
	ps := []Preset{
		{Name: "a", Match: PresetMatch{Glob: "wedding/**"}},
		{Name: "b", Match: PresetMatch{Glob: "*.cr2"}},
		{Name: "c", Match: PresetMatch{Glob: "studio/**"}},
	}
	if err := CheckPresets(ps); err != nil {
		t.Fatalf("different globs are not compared at start: %v", err)
	}
	_, err := MatchPreset(ps, PresetFile{Rel: "wedding/x.cr2"})
	if err == nil || !strings.Contains(err.Error(), `"a"`) || !strings.Contains(err.Error(), `"b"`) {
		t.Fatalf("a file two equally specific presets match: %v, want an error naming both", err)
	}
	// A more specific preset decides it.
	ps = append(ps, Preset{Name: "d", Match: PresetMatch{Glob: "wedding/**", Camera: "Canon EOS 6D"}})
	p, err := MatchPreset(ps, PresetFile{Rel: "wedding/x.cr2", Camera: "Canon EOS 6D"})
	if err != nil || p == nil || p.Name != "d" {
		t.Fatalf("got %v, %v; want d", p, err)
	}
}

func TestCheckPresetsTies(t *testing.T) {
	six := PresetMatch{Camera: "Canon EOS 6D"}
	high := PresetMatch{HasISO: true, ISOMin: 3200}
	for _, c := range []struct {
		name string
		ps   []Preset
		tie  bool
	}{
		{"same camera", []Preset{{Name: "a", Match: six}, {Name: "b", Match: six}}, true},
		{"other cameras", []Preset{{Name: "a", Match: six}, {Name: "b", Match: PresetMatch{Camera: "Canon EOS 6D Mark II"}}}, false},
		{"camera and ISO", []Preset{{Name: "a", Match: six}, {Name: "b", Match: high}}, true},
		{"covered by a third", []Preset{{Name: "a", Match: six}, {Name: "b", Match: high},
			{Name: "c", Match: PresetMatch{Camera: "Canon EOS 6D", HasISO: true, ISOMin: 1600}}}, false},
		{"third covers less", []Preset{{Name: "a", Match: six}, {Name: "b", Match: high},
			{Name: "c", Match: PresetMatch{Camera: "Canon EOS 6D", HasISO: true, ISOMin: 6400}}}, true},
		{"ISO ranges apart", []Preset{{Name: "a", Match: PresetMatch{HasISO: true, ISOMax: 1600}}, {Name: "b", Match: PresetMatch{HasISO: true, ISOMin: 3200}}}, false},
		{"ISO ranges meet", []Preset{{Name: "a", Match: PresetMatch{HasISO: true, ISOMax: 3200}}, {Name: "b", Match: high}}, true},
		{"two catch-alls", []Preset{{Name: "a"}, {Name: "b"}}, true},
		{"same glob", []Preset{{Name: "a", Match: PresetMatch{Glob: "x/**"}}, {Name: "b", Match: PresetMatch{Glob: "X/**"}}}, true},
		{"more specific", []Preset{{Name: "a", Match: six}, {Name: "b", Match: PresetMatch{Camera: "Canon EOS 6D", HasISO: true, ISOMin: 3200}}}, false},
	} {
		err := CheckPresets(c.ps)
		if (err != nil) != c.tie {
			t.Errorf("%s: %v, want a tie: %v", c.name, err, c.tie)
		}
		if err != nil && (!strings.Contains(err.Error(), `"a"`) || !strings.Contains(err.Error(), `"b"`)) {
			t.Errorf("%s: %v does not name both presets", c.name, err)
		}
	}
	if err := CheckPresets([]Preset{{Name: "a", Match: six}, {Name: "a", Match: high}}); err == nil {
		t.Error("two presets of one name: no error")
	}
}

// TestPresetsConvertHashAndQueue: a task a preset applies to is converted
// with the preset's settings, recorded under their hash (a changed preset
// converts again its files, and only them), and queued for another host
// with them, their hash and the preset's name.
func TestPresetsConvertHashAndQueue(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	touch(t, filepath.Join(in, "a.dng"), []byte("not really a raw"))
	touch(t, filepath.Join(in, "b.dng"), []byte("not really a raw"))
	store, err := state.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	s := pipeline.DefaultSettings()
	presets := func(ev float64) []Preset {
		ps := pipeline.DefaultSettings()
		ps.Exposure = ev
		return []Preset{{Name: "a-only", Match: PresetMatch{Glob: "a.dng"}, Settings: ps}}
	}
	run := func(ps []Preset) (map[string]float64, *Runner, *Plan) {
		p, err := PlanBatch([]string{in}, out, ".jpg")
		if err != nil {
			t.Fatal(err)
		}
		if p.ApplyPresets(ps, s, 0, false, nil, 1, 1) {
			t.Error("ApplyPresets read headers for a glob")
		}
		ex := &fakeExecutor{}
		for range 2 {
			ex.steps = append(ex.steps, func(j Job) Outcome { return writeOutputs(t, j) })
		}
		r := &Runner{Settings: s, Jobs: 1, Executor: ex, State: store, OutDir: out, SettingsHash: SettingsHash(s)}
		r.Run(context.Background(), p)
		got := map[string]float64{}
		for _, j := range ex.jobs {
			got[filepath.Base(string(j.Input))] = j.Settings.Exposure
		}
		return got, r, p
	}
	if got, _, _ := run(presets(1)); !reflect.DeepEqual(got, map[string]float64{"a.dng": 1, "b.dng": 0}) {
		t.Fatalf("exposures converted with %v, want a.dng's preset's 1 and b.dng's run's 0", got)
	}
	if got, _, _ := run(presets(1)); len(got) != 0 {
		t.Fatalf("unchanged: converted %v again", got)
	}
	got, r, p := run(presets(2))
	if !reflect.DeepEqual(got, map[string]float64{"a.dng": 2}) {
		t.Fatalf("preset changed: converted %v, want a.dng alone with 2", got)
	}
	for _, task := range p.Tasks {
		q := r.QueueTask(task)
		b, err := json.Marshal(q)
		if err != nil {
			t.Fatal(err)
		}
		var back QueuedTask
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		want, name := 0.0, ""
		if filepath.Base(task.Input) == "a.dng" {
			want, name = 2, "a-only"
		}
		if back.Settings.Exposure != want || back.Preset != name || back.Task().Preset != name {
			t.Errorf("%s queued with exposure %g, preset %q; want %g, %q", task.Input, back.Settings.Exposure, back.Preset, want, name)
		}
		if err := back.Check("test"); err != nil {
			t.Errorf("%s: a worker refuses it: %v", task.Input, err)
		}
	}
}

// TestApplyPresetsRecordedCamera: with presets that match on the camera
// (and globs) alone, a file whose records name its camera is matched by
// them, its header left unread (a fake raw that would fail to read); a
// preset on the ISO needs the header, read.
func TestApplyPresetsRecordedCamera(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	touch(t, filepath.Join(in, "a.dng"), []byte("not really a raw"))
	s := pipeline.DefaultSettings()
	six := Preset{Name: "6d", Match: PresetMatch{Camera: "Canon EOS 6D"}, Settings: s}
	recorded := func(Task) string { return "Canon EOS 6D" }
	p, err := PlanBatch([]string{in}, out, ".jpg")
	if err != nil {
		t.Fatal(err)
	}
	if p.ApplyPresets([]Preset{six}, s, 0, false, recorded, 1, 1) {
		t.Error("reported every file inspected, with one left to its records")
	}
	if task := p.Tasks[0]; task.Err != nil || task.Info.Header != nil || task.Preset != "6d" {
		t.Fatalf("camera preset, camera recorded: err %v, header read %v, preset %q; want no read, preset 6d", task.Err, task.Info.Header != nil, task.Preset)
	}
	p, _ = PlanBatch([]string{in}, out, ".jpg")
	iso := Preset{Name: "iso", Match: PresetMatch{Camera: "Canon EOS 6D", HasISO: true, ISOMin: 100}, Settings: s}
	if !p.ApplyPresets([]Preset{six, iso}, s, 0, false, recorded, 1, 1) {
		t.Error("an ISO preset: not inspected")
	}
	if task := p.Tasks[0]; task.Err == nil || task.Preset != "" {
		t.Fatalf("an ISO preset: err %v, preset %q; want the header read (failing: not a raw) and no preset", task.Err, task.Preset)
	}
}

// TestRecordedCamera: the camera of a record written from the input as
// it is now, and none for a changed input, a racy record or another
// input's.
func TestRecordedCamera(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	a := filepath.Join(in, "a.dng")
	touch(t, a, []byte("not really a raw"))
	store, err := state.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanBatch([]string{in}, out, ".jpg")
	if err != nil {
		t.Fatal(err)
	}
	task := p.Tasks[0]
	r := &Runner{State: store, OutDir: out}
	save := func(mod func(*state.Record)) {
		rec := &state.Record{Input: a, InputAbs: state.AbsInput(a), InputSize: task.Size, InputMTime: task.ModTime,
			InputChecked: task.ModTime.Add(time.Minute), Output: task.OutputRel, Camera: "Canon EOS 6D"}
		mod(rec)
		if err := store.Save(rec); err != nil {
			t.Fatal(err)
		}
	}
	if got := r.RecordedCamera(task); got != "" {
		t.Errorf("no record: %q", got)
	}
	for _, c := range []struct {
		name string
		mod  func(*state.Record)
		want string
	}{
		{"as now", func(*state.Record) {}, "Canon EOS 6D"},
		{"size changed", func(r *state.Record) { r.InputSize++ }, ""},
		{"time changed", func(r *state.Record) { r.InputMTime = r.InputMTime.Add(-time.Hour) }, ""},
		{"racy", func(r *state.Record) { r.InputChecked = r.InputMTime.Add(time.Second) }, ""},
		{"another input", func(r *state.Record) { r.InputAbs = "/elsewhere/a.dng" }, ""},
	} {
		save(c.mod)
		if got := r.RecordedCamera(task); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
