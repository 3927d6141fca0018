package batch

import "github.com/rawbatch/rawbatch/pipeline"

// pendingVariants are the variants of t's pending outputs (outs[i] with
// pending[i]), in order: what its conversion is asked to make.
func pendingVariants(outs []Output, pending map[int]bool) []pipeline.Variant {
	var vs []pipeline.Variant
	for i, o := range outs {
		if pending[i] {
			vs = append(vs, o.Variant)
		}
	}
	return vs
}

// pendingStagePlan is the stage plan the conversion of t would run for
// the variants vs of its pending outputs, as the executor plans them
// (pipeline.PlanFile: the half-size tier, the decoded size, the sources
// the header predicts); nil without any.
func pendingStagePlan(t Task, vs []pipeline.Variant, s pipeline.Settings) *pipeline.StagePlan {
	if len(vs) == 0 {
		return nil
	}
	p := pipeline.PlanFile(t.Info, vs, s)
	return &p
}

// StagePlanGroup is one distinct stage plan of a dry run and how many of
// its files would run it.
type StagePlanGroup struct {
	Plan  pipeline.StagePlan
	Files int
}

// StagePlans groups the stage plans of files (PlannedFile.Stages) that
// are the same (the same StagePlan.String: decoded size, variants in
// order, steps with their sizes), in the order of each plan's first file.
// numbers[i] is the 1-based number of files[i]'s group, 0 for a file with
// no plan (it would not be converted).
func StagePlans(files []PlannedFile) (groups []StagePlanGroup, numbers []int) {
	numbers = make([]int, len(files))
	byText := map[string]int{}
	for i, f := range files {
		if f.Stages == nil {
			continue
		}
		text := f.Stages.String()
		n, ok := byText[text]
		if !ok {
			groups = append(groups, StagePlanGroup{Plan: *f.Stages})
			n = len(groups)
			byText[text] = n
		}
		groups[n-1].Files++
		numbers[i] = n
	}
	return groups, numbers
}

// ReportStagePlan is one distinct stage plan in a dry run's report
// (Report.StagePlans).
type ReportStagePlan struct {
	// Plan is its number (1-based), as files[].stage_plan and the dry
	// run's text name it; Files how many files would run it.
	Plan  int `json:"plan"`
	Files int `json:"files"`
	// DecodedWidth, DecodedHeight: the decoded size in pixels.
	DecodedWidth  int `json:"decoded_width"`
	DecodedHeight int `json:"decoded_height"`
	// Variants are the variants' names in the order they would run;
	// Steps the steps' names in order (pipeline.Step.Name: the names a
	// run's files[].steps have).
	Variants []string `json:"variants"`
	Steps    []string `json:"steps"`
}

// AddStagePlans adds the distinct stage plans of a dry run's files to
// rep, and to each of rep.Files the number of its plan: rep.Files[i] is
// the file whose input is inputs[i], numbers what StagePlans returned for
// files, and files[j].Task.Input the input of numbers[j].
func AddStagePlans(rep *Report, inputs []string, files []PlannedFile, groups []StagePlanGroup, numbers []int) {
	for i, g := range groups {
		rep.StagePlans = append(rep.StagePlans, ReportStagePlan{Plan: i + 1, Files: g.Files,
			DecodedWidth: g.Plan.W, DecodedHeight: g.Plan.H, Variants: g.Plan.Variants, Steps: g.Plan.Names()})
	}
	byInput := map[string]int{}
	for j, f := range files {
		if numbers[j] > 0 {
			byInput[f.Task.Input] = numbers[j]
		}
	}
	for i := range rep.Files {
		if i < len(inputs) {
			rep.Files[i].StagePlan = byInput[inputs[i]]
		}
	}
}
