package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// synthcam DST MAKE MODEL ISO [LENS]: write a small synthetic chart DNG
// (as synthdng, orientation 1) whose EXIF names the camera MAKE and MODEL,
// the ISO speed ISO (0: none) and the lens LENS (LensModel).
func cmdSynthCam(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 4 && len(args) != 5 {
		ts.Fatalf("usage: synthcam DST MAKE MODEL ISO [LENS]")
	}
	iso, err := strconv.Atoi(args[3])
	ts.Check(err)
	c := synthdng.Chart{W: 48, H: 32, Background: [3]float64{0.18, 0.18, 0.18},
		Patches: []synthdng.Patch{{X0: 0, Y0: 0, X1: 8, Y1: 8, SRGBLinear: [3]float64{0.6, 0.05, 0.05}}}}
	w, h, scene := synthdng.ChartScene(c, 1, synthdng.DefaultColorMatrix, 1)
	spec := synthdng.Spec{Width: w, Height: h, BlackLevel: 256,
		WhiteLevel: 16383, Orientation: 1, Scene: scene, Make: args[1], Model: args[2], ISO: iso}
	if len(args) == 5 {
		spec.Tags = append(spec.Tags, synthdng.Tag{Dir: tifftag.DirExif, ID: tifftag.LensModel, ASCII: args[4]})
	}
	ts.Check(synthdng.WriteFile(ts.MkAbs(args[0]), spec))
}

// presetof REPORT INPUT PRESET [EV]: the --report JSON file REPORT has
// INPUT (its input path exactly) converted, skipped or planned with the
// config preset PRESET ("-": none), and, with EV, an exposure_ev of EV
// (within 0.01: the preset's exposure reached the develop).
func cmdPresetOf(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 && len(args) != 4 {
		ts.Fatalf("usage: presetof REPORT INPUT PRESET [EV]")
	}
	var r struct {
		Files []struct {
			Input      string   `json:"input"`
			Preset     *string  `json:"preset"`
			ExposureEV *float64 `json:"exposure_ev"`
		} `json:"files"`
	}
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &r))
	for _, f := range r.Files {
		if f.Input != args[1] {
			continue
		}
		got := "-"
		if f.Preset != nil {
			got = *f.Preset
		}
		if got != args[2] {
			ts.Fatalf("%s: preset %s in the report, want %s", args[1], got, args[2])
		}
		if len(args) == 4 {
			want, err := strconv.ParseFloat(args[3], 64)
			ts.Check(err)
			if f.ExposureEV == nil || math.Abs(*f.ExposureEV-want) > 0.01 {
				ev := "none"
				if f.ExposureEV != nil {
					ev = fmt.Sprint(*f.ExposureEV)
				}
				ts.Fatalf("%s: exposure_ev %s, want %g", args[1], ev, want)
			}
		}
		return
	}
	ts.Fatalf("%s is not in %s", args[1], args[0])
}
