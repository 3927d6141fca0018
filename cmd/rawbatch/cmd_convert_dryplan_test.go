package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/rawbatch/rawbatch/pipeline"
)

// dryplan REPORT N INPUT [VARIANT...]: a dry run's report says INPUT
// would run stage plan N, and that plan's decoded size, variants and steps
// are exactly the planner's for INPUT with those variants
// (pipeline.PlanStages; --variant specs, none for the default output); the
// dry run's stdout prints it once as "stage plan N (...): " followed by
// the planner's text (StagePlan.String).
func cmdDryPlan(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 3 {
		ts.Fatalf("usage: dryplan REPORT N INPUT [VARIANT...]")
	}
	var rep struct {
		Files []struct {
			Input     string `json:"input"`
			StagePlan int    `json:"stage_plan"`
		} `json:"files"`
		StagePlans []struct {
			Plan          int      `json:"plan"`
			DecodedWidth  int      `json:"decoded_width"`
			DecodedHeight int      `json:"decoded_height"`
			Variants      []string `json:"variants"`
			Steps         []string `json:"steps"`
		} `json:"stage_plans"`
	}
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &rep))
	var n int
	fmt.Sscan(args[1], &n)
	s := pipeline.DefaultSettings()
	for _, spec := range args[3:] {
		v, err := pipeline.ParseVariant(spec)
		ts.Check(err)
		s.Variants = append(s.Variants, v)
	}
	fi, err := pipeline.ReadInfo(ts.MkAbs(args[2]))
	ts.Check(err)
	plan := pipeline.PlanStages(fi, s)
	i := slices.IndexFunc(rep.Files, func(f struct {
		Input     string `json:"input"`
		StagePlan int    `json:"stage_plan"`
	}) bool {
		return f.Input == args[2]
	})
	if i < 0 || rep.Files[i].StagePlan != n {
		ts.Fatalf("%s: file %s (index %d) has no stage plan %d", args[0], args[2], i, n)
	}
	if n < 1 || n > len(rep.StagePlans) || rep.StagePlans[n-1].Plan != n {
		ts.Fatalf("%s: no stage_plans entry %d", args[0], n)
	}
	got := rep.StagePlans[n-1]
	if got.DecodedWidth != plan.W || got.DecodedHeight != plan.H || !slices.Equal(got.Variants, plan.Variants) || !slices.Equal(got.Steps, plan.Names()) {
		ts.Fatalf("%s: stage plan %d is %dx%d %q\n  %s\nplanned %dx%d %q\n  %s", args[0], n, got.DecodedWidth, got.DecodedHeight, got.Variants,
			strings.Join(got.Steps, " "), plan.W, plan.H, plan.Variants, strings.Join(plan.Names(), " "))
	}
	out := ts.ReadFile("stdout")
	head := fmt.Sprintf("stage plan %d (", n)
	at := strings.Index(out, head)
	if at < 0 || strings.Count(out, head) != 1 {
		ts.Fatalf("stdout prints %q %d times, want once:\n%s", head, strings.Count(out, head), out)
	}
	text := out[at:]
	text = text[strings.Index(text, "): ")+3:]
	if !strings.HasPrefix(text, plan.String()) {
		ts.Fatalf("stdout prints stage plan %d as\n%s\nplanned\n%s", n, text, plan.String())
	}
}
