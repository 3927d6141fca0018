package main

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// synthsize DST W H: write a synthetic DNG of W×H pixels (a grey field
// with one red patch), for scripts that need a decoded image of a size.
func cmdSynthSize(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: synthsize DST W H")
	}
	w, err := strconv.Atoi(args[1])
	ts.Check(err)
	h, err := strconv.Atoi(args[2])
	ts.Check(err)
	c := synthdng.Chart{W: w, H: h, Background: [3]float64{0.18, 0.18, 0.18},
		Patches: []synthdng.Patch{{X0: 0, Y0: 0, X1: w / 4, Y1: h / 4, SRGBLinear: [3]float64{0.6, 0.05, 0.05}}}}
	cw, ch, scene := synthdng.ChartScene(c, 1, synthdng.DefaultColorMatrix, 1)
	ts.Check(synthdng.WriteFile(ts.MkAbs(args[0]), synthdng.Spec{Width: cw, Height: ch, BlackLevel: 256,
		WhiteLevel: 16383, Scene: scene}))
}

// planned REPORT INPUT [VARIANT...]: the steps the report says INPUT's
// conversion ran (its "steps", in order) are exactly the stage plan of
// INPUT with those variants (pipeline.PlanStages; --variant specs, none
// for the default single output), and for each variant the steps that
// concern it are its planned sequence (StagePlan.Sequence), in order.
func cmdPlanned(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: planned REPORT INPUT [VARIANT...]")
	}
	var rep struct {
		Files []struct {
			Input string
			Steps []string
		}
	}
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &rep))
	var ran []string
	found := false
	for _, f := range rep.Files {
		if f.Input == args[1] {
			ran, found = f.Steps, true
		}
	}
	if !found {
		ts.Fatalf("%s: no file %s", args[0], args[1])
	}
	s := pipeline.DefaultSettings()
	for _, spec := range args[2:] {
		v, err := pipeline.ParseVariant(spec)
		ts.Check(err)
		s.Variants = append(s.Variants, v)
	}
	fi, err := pipeline.ReadInfo(ts.MkAbs(args[1]))
	ts.Check(err)
	plan := pipeline.PlanStages(fi, s)
	if !slices.Equal(ran, plan.Names()) {
		ts.Fatalf("%s ran\n  %s\nplanned\n  %s", args[1], strings.Join(ran, " "), strings.Join(plan.Names(), " "))
	}
	for _, name := range plan.Variants {
		var want []string
		for _, st := range plan.Sequence(name) {
			want = append(want, st.Name)
		}
		// The steps that ran for this variant: shared ones and its own,
		// minus shared steps it does not use (the full-size variants'
		// shared pointwise steps, for a resized variant).
		var got []string
		for _, r := range ran {
			if slices.Contains(want, r) {
				got = append(got, r)
			}
		}
		if !slices.Equal(got, want) {
			ts.Fatalf("variant %s ran %q, planned %q", name, got, want)
		}
		ts.Logf("%s: %s", name, strings.Join(want, " "))
	}
}
