package batch

import (
	"testing"

	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/pipeline/sidecar"
)

// TestDevelopFor: each --sidecar mode takes what it reads of a file's
// develop settings and nothing else; As Shot and Auto keep --wb; a crop
// of the whole picture unturned is none.
func TestDevelopFor(t *testing.T) {
	ev := 0.7
	d := &sidecar.Develop{Orientation: 6, Crop: &sidecar.Crop{Has: true, Left: 0.1, Top: 0.2, Right: 0.9, Bottom: 0.8, Angle: 2},
		Exposure: &ev, WhiteBalance: &sidecar.WhiteBalance{Mode: "Custom", Temperature: 3200, Tint: -5}}
	m := sidecar.Meta{Rating: "3", Develop: d}
	crop := &pipeline.EditCrop{Top: 0.2, Left: 0.1, Bottom: 0.8, Right: 0.9, Angle: 2}
	for _, c := range []struct {
		mode string
		want pipeline.Edit
	}{
		{"off", pipeline.Edit{}},
		{"meta", pipeline.Edit{}},
		{"geometry", pipeline.Edit{Orientation: 6, Crop: crop}},
		{"basic", pipeline.Edit{Orientation: 6, Crop: crop, Exposure: 0.7, Temperature: 3200, Tint: -5}},
	} {
		s := pipeline.DefaultSettings()
		s.Sidecar = c.mode
		got := developFor(s, m).Edit
		if got.Key() != c.want.Key() {
			t.Errorf("%s: %+v, want %+v", c.mode, got, c.want)
		}
	}
	s := pipeline.DefaultSettings()
	s.Sidecar = "basic"
	for _, mode := range []string{"As Shot", "Auto"} {
		d.WhiteBalance.Mode = mode
		if e := developFor(s, m).Edit; e.Temperature != 0 {
			t.Errorf("%s: temperature %g taken", mode, e.Temperature)
		}
	}
	d.Crop = &sidecar.Crop{Has: true, Right: 1, Bottom: 1}
	if e := developFor(s, m).Edit; e.Crop != nil {
		t.Errorf("a crop of the whole picture: %+v", e.Crop)
	}
	// The records see it: the task's settings hash changes with the edit.
	r := &Runner{Settings: s, SettingsHash: SettingsHash(s)}
	a := r.taskSettings(Task{XMP: m})
	ev = 1.2
	if r.taskSettings(Task{XMP: m}) == a {
		t.Error("an exposure change leaves the task's settings hash")
	}
	r.Settings.Sidecar = "geometry"
	g := r.taskSettings(Task{XMP: m})
	ev = 0.1
	if r.taskSettings(Task{XMP: m}) != g {
		t.Error("an exposure change under geometry changes the task's settings hash")
	}
}
