package pipeline

import (
	"context"
	"fmt"
	"strings"
)

// Scope says how often a stage runs for one input file.
type Scope uint8

const (
	// PerFile stages run once per file, on the image every variant shares
	// (the planner may run a pointwise one once per downscaled variant
	// instead, on that variant's small image: PlanVariants).
	PerFile Scope = iota
	// PerVariant stages run once per output variant, on its own image.
	PerVariant
)

func (s Scope) String() string {
	if s == PerVariant {
		return "per variant"
	}
	return "per file"
}

// Kind says how a stage touches pixels; the planner reorders stages by it.
type Kind uint8

const (
	// IO stages read or write outside the float image: LibRaw's handle,
	// files.
	IO Kind = iota
	// Pointwise stages compute each output pixel from the same input pixel
	// alone; a linear one commutes exactly with a linear resize.
	Pointwise
	// Spatial stages compute output pixels from neighbourhoods or move
	// them (demosaic, resize, sharpening, orientation).
	Spatial
)

func (k Kind) String() string {
	switch k {
	case Pointwise:
		return "pointwise"
	case Spatial:
		return "spatial"
	}
	return "io"
}

// Stage is one step of the develop of a file, declared in its own file
// (pipeline/stage_*.go) and listed once in Stages.
type Stage struct {
	// Name is the stage's name in plans, Result.Timings and the report.
	Name  string
	Scope Scope
	Kind  Kind
	// Linear: the stage is a linear map of the pixel values (a matrix, a
	// gain), so that with Kind Pointwise it commutes with a resize.
	Linear bool
	// Version is the stage's output version: a developer bumps it (by one)
	// whenever a change makes the stage write other pixels or bytes for the
	// same settings, so that DevelopVersion, and with it every up-to-date
	// record, changes and existing outputs are converted again. 0 for a
	// stage never changed so.
	Version int
	// Cost returns the memory the stage needs when it runs as step m.step
	// (EstimateMemory adds it up); required, noBuffers for a stage that
	// works in place or makes a view.
	Cost func(m memCtx) StepMemory
	// Active reports whether the stage does anything for the settings; the
	// planner leaves a stage out of the plan when it reports false, so a
	// plan (and Result.Timings, the report's steps) lists what runs. nil:
	// always active. It is decided from the settings alone (a stage whose
	// use depends on the file, like the preview for --wb camera, stays
	// planned whenever the settings can need it, and its run function
	// decides).
	Active func(s Settings) bool
	// run executes the stage on j: on the shared image when j.cur is nil,
	// on variant j.cur's own image otherwise.
	run func(ctx context.Context, j *job) error
	// Row, set for a pointwise stage that can run inside a fused pass
	// (the executor's one pass over the image for a run of such steps,
	// StagePlan's Step.Pass; docs/pipeline.md), prepares the step about to
	// run on j as run would, without touching pixels, and returns its
	// kernel: applied in place to rows of the image the step works on, in
	// stage-list order after the pass's earlier kernels (nil: the step
	// changes no pixel). ok false: the step cannot fuse for this file
	// (decided before anything is done), and run runs it alone.
	Row func(j *job, p *fusePass) (k rowKernel, ok bool)
	// Band, set for a stage that can run on row bands in a streamed
	// conversion (stream.go, docs/pipeline.md "Streaming"), reports
	// whether the step can for j, deciding before anything runs (no pixel
	// touched, nothing recorded on j; it may note on s what later steps'
	// forms need, like the demosaic's input or the crop's region), and
	// returns the step's band form, which runs at the step's turn instead
	// of run. A stage that keeps no row window has a margin of 0; others
	// declare theirs in the form (stream.addFilter's lookahead).
	Band func(j *job, s *stream) (bandPrepare, bool)
	// versionIfActive: the stage is part of DevelopHash's DevelopVersion
	// only for settings it is active for (a stage added after records
	// were written that does nothing unless asked: those records stay
	// valid).
	versionIfActive bool
	// fuses reports whether a step of the stage for variant v (zero for a
	// shared step) may be planned into a fused pass with settings s; nil:
	// whenever Row is set.
	fuses func(s Settings, v Variant) bool
}

// activeStages is Stages without the stages inactive for s (Stage.Active).
func activeStages(s Settings) []*Stage {
	out := make([]*Stage, 0, len(Stages))
	for i := range Stages {
		if Stages[i].Active == nil || Stages[i].Active(s) {
			out = append(out, &Stages[i])
		}
	}
	return out
}

// Stages is the develop, in order: the one list of what runs. The planner
// (PlanVariants) derives each variant's sequence of steps from it; formulas
// and sources are in docs/pipeline.md. Every PerFile stage comes before
// every PerVariant one.
var Stages = []Stage{
	openStage,          // LibRaw: open, identify (and the stage cache's lookup)
	previewStage,       // the embedded preview, decoded and reduced, when a setting needs it
	unpackStage,        // LibRaw: unpack the raw data
	whiteLevelStage,    // white level per CFA channel from the data (RescaleRaw)
	opcodesRawStage,    // DNG OpcodeList1/2 on the CFA data (GainMap)
	whiteBalanceStage,  // choose the multipliers LibRaw applies to the CFA data
	demosaicStage,      // LibRaw: black level, WB, demosaic → linear camera RGB float32 (or the cached copy)
	cropStage,          // the camera's picture area (--crop camera), in place
	highlightsStage,    // clipped areas: clip to white or reconstruct
	opcodesStage,       // DNG OpcodeList3 on camera RGB (FixVignetteRadial, WarpRectilinear, GainMap)
	denoiseStage,       // ISO-adaptive wavelet noise reduction of luminance and colour (--denoise)
	lensStage,          // lensfun: vignetting, distortion, TCA on camera RGB
	sharpenStage,       // capture sharpening: small-radius unsharp mask on luminance (--capture-sharpen)
	anchorStage,        // the preview-anchored exposure correction, measured once on the full camera image
	editCropStage,      // the file's own crop from its XMP, turned by its angle (--sidecar geometry)
	cameraMatrixStage,  // camera RGB → linear working space (Rec.2020, D65)
	exposureStage,      // × 2^(EV + BaselineExposure)
	toneStage,          // tone curve, scene- to display-referred
	previewSourceStage, // or a variant made from the embedded preview, display-referred (source=preview)
	resizeStage,        // Lanczos-3 to the variant's size, in linear light
	outputSpaceStage,   // working space → the variant's linear colour space, sharpen, clip to [0,1]
	orientationStage,   // rotate/mirror upright, once (a view read by quantise)
	quantiseStage,      // the space's transfer function + rounding to 8 or 16 bits
	encodeStage,        // JPEG, TIFF, WebP, PNG with ICC profile and EXIF, to a temporary file
}

// noBuffers is the Cost of a stage that allocates nothing beside its input
// (it works in place, or makes a view).
func noBuffers(memCtx) StepMemory { return StepMemory{} }

// Step is one run of a stage in a StagePlan.
type Step struct {
	// Stage is the stage's name (Stages).
	Stage string
	// Variant is the name of the variant the step is the own step of; ""
	// for a shared step, which runs once for every variant after it that
	// does not have that stage as its own step.
	Variant string
	// W, H: the size in pixels of the image the step works on (before
	// orientation); the decoded size for shared steps.
	W, H int
	// Name is the step's name in Result.Timings and the report: the stage
	// name for shared steps and for every step of a single-variant file,
	// "VARIANT/STAGE" for a variant's own step otherwise.
	Name string

	stage *Stage
	v     int // index of the variant in the list planned; -1 when shared
	// For the memory estimate (set for output-space and later steps):
	// takesShared: the variant converts the shared full-size image in
	// place (no later variant renders from it); reuses: it shares the
	// image an earlier variant of its rendition made; keep: a later
	// variant shares its image.
	takesShared, reuses, keep bool
	// renderFused: the variant's output-space step is in a fused pass, so
	// it reads the shared (or its resized) image in place and makes no
	// image of its own; lastFull: the step is of the last full-size
	// variant, the last to read the shared image.
	renderFused, lastFull bool
	// encoder is a whole-frame format's encode step's encoder working
	// memory in bytes (encoderBytes), shown by String (the other
	// encoders' is small or streamed: the step's line is unchanged).
	encoder int64
	// Stream: the step is part of a streamed conversion when the file
	// allows (markStream; the file's decode decides, job.streams): from
	// demosaic to encode, row bands go to the encoder, no full-size
	// float image is made.
	Stream bool
	// Pass numbers, from 1, the fused pass the step runs in (markPasses):
	// consecutive steps with the same Pass run as one pass over the image
	// (runPass); 0 for a step that runs alone.
	Pass int
}

// Shared reports whether the step is shared by several variants (run once).
func (st Step) Shared() bool { return st.Variant == "" }

// StagePlan is the sequence of steps that converts one file to its variants.
type StagePlan struct {
	// W, H: the decoded size in pixels (DecodedSize).
	W, H int
	// HalfSizeTier: the half-size tier decodes the file at half size
	// (PlanFile, WithHalfSizeTier); W×H is that half size.
	HalfSizeTier bool
	// Variants are the variants' names in the order they run.
	Variants []string
	// Steps in the order they run, each once.
	Steps []Step

	order []int // Variants as indices into the variants planned
}

// PlanStages is PlanFile for all of s's variants (Settings.OutputVariants).
func PlanStages(fi FileInfo, s Settings) StagePlan {
	return PlanFile(fi, s.OutputVariants(), s)
}

// PlanFile is the plan of converting a file described by fi to the
// variants vs with settings s, as ConvertOutputs plans it before the
// file is open: PlanVariants at DecodedSize, at half size when the
// half-size tier takes the file (WithHalfSizeTier: HalfSizeTier is
// set), the variants' sources as PlannedSources predicts them.
func PlanFile(fi FileInfo, vs []Variant, s Settings) StagePlan {
	s, tier := WithHalfSizeTier(fi, s, vs)
	w, h := DecodedSize(fi, s)
	p := PlanVariants(w, h, PlannedSources(fi, vs, s), s)
	p.HalfSizeTier = tier
	return p
}

// PlanVariants returns the plan that converts a decoded image of w×h
// pixels to the variants vs with the settings s. The rules:
//
//   - Only the stages active for s (Stage.Active) are planned.
//   - PerFile stages run once, as shared steps, at w×h.
//   - A variant whose size (Variant.Fit) is not w×h (downscaled, or
//     enlarged with upscale), or that is HDR (Variant.HDR: its tone
//     differs), is resized (an HDR one at w×h: copied) from the demosaiced
//     camera image:
//     its resize step comes before the run of Pointwise PerFile stages that
//     precede resize in Stages (camera matrix, exposure, tone), which then
//     are its own steps at its size. This is exact for the linear ones; the
//     tone curve (not linear) is so applied to the pixels shown.
//   - Resized variants run first, then the full-size ones; within each,
//     variants of one rendition (same space, size and sharpening) are kept
//     together, groups in the order of their first variant.
//   - The pointwise PerFile stages run shared, once, before the first
//     full-size variant (none when every variant is resized); a full-size
//     variant has no resize step.
//   - Every other PerVariant stage is an own step of each variant.
//   - A variant made from the embedded preview (Source SourcePreview)
//     has the preview-source step and its PerVariant steps after resize,
//     right after the shared open step, before any other; when every
//     variant is, the plan has no other shared step (no raw decode).
func PlanVariants(w, h int, vs []Variant, s Settings) StagePlan {
	p := StagePlan{W: w, H: h}
	var stages []*Stage
	for _, st := range activeStages(s) {
		if st.Name != previewSourceStage.Name {
			stages = append(stages, st)
		}
	}
	// first: the first PerVariant stage, which must be resize; hoist: the
	// start of the run of pointwise PerFile stages just before it.
	first := len(stages)
	for i, st := range stages {
		if st.Scope == PerVariant {
			first = i
			break
		}
	}
	hoist := first
	for hoist > 0 && stages[hoist-1].Scope == PerFile && stages[hoist-1].Kind == Pointwise {
		hoist--
	}
	// resized: the variant renders from its own copy of the camera
	// image (a resize step, then its own camera matrix, exposure and
	// tone): its size is not w×h, or it is HDR (its tone is the HDR
	// rendition's, hdrToneRow).
	resized := func(v Variant) bool {
		dw, dh := v.Fit(w, h)
		return dw != w || dh != h || v.hdrRendition()
	}
	multi := len(vs) > 1
	add := func(i int, vi int, vw, vh int) {
		st := Step{Stage: stages[i].Name, W: vw, H: vh, Name: stages[i].Name, stage: stages[i], v: vi}
		if vi >= 0 {
			st.Variant = vs[vi].Name
			if multi {
				st.Name = st.Variant + "/" + st.Name
			}
		}
		p.Steps = append(p.Steps, st)
	}
	var fromPreview, small, full []int
	for i, v := range vs {
		switch {
		case v.Source == SourcePreview:
			fromPreview = append(fromPreview, i)
		case resized(v):
			small = append(small, i)
		default:
			full = append(full, i)
		}
	}
	// variantSteps adds variant vi's PerVariant steps after resize.
	variantSteps := func(vi int, vw, vh int) {
		for i := first + 1; i < len(stages); i++ {
			add(i, vi, vw, vh)
		}
	}
	start := 0
	if len(fromPreview) > 0 {
		// The variants made from the embedded preview, right after the
		// file is opened (stages[0], open): no raw step is theirs.
		add(0, -1, w, h)
		start = 1
		for _, vi := range fromPreview {
			vw, vh := vs[vi].Fit(w, h)
			st := Step{Stage: previewSourceStage.Name, W: vw, H: vh, Name: previewSourceStage.Name, stage: &previewSourceStage, v: vi, Variant: vs[vi].Name}
			if multi {
				st.Name = st.Variant + "/" + st.Name
			}
			p.Steps = append(p.Steps, st)
			variantSteps(vi, vw, vh)
		}
	}
	if len(small)+len(full) > 0 {
		for i := start; i < hoist; i++ {
			add(i, -1, w, h)
		}
	}
	p.order = append(append(fromPreview, groupByRendition(vs, small)...), groupByRendition(vs, full)...)
	for _, vi := range p.order[len(fromPreview) : len(fromPreview)+len(small)] {
		vw, vh := vs[vi].Fit(w, h)
		add(first, vi, vw, vh) // resize
		for i := hoist; i < first; i++ {
			add(i, vi, vw, vh)
		}
		variantSteps(vi, vw, vh)
	}
	if len(full) > 0 {
		for i := hoist; i < first; i++ {
			add(i, -1, w, h)
		}
		for _, vi := range p.order[len(fromPreview)+len(small):] {
			variantSteps(vi, w, h)
		}
	}
	for _, vi := range p.order {
		p.Variants = append(p.Variants, vs[vi].Name)
	}
	p.markRenditions(vs, len(fromPreview)+len(small))
	p.markPasses(vs, s)
	p.markStream(vs, s)
	for i, st := range p.Steps {
		if st.Stage == encodeStage.Name && st.v >= 0 && wholeFrame(vs[st.v].Format) {
			p.Steps[i].encoder = encoderBytes(vs[st.v], st.W, st.H)
		}
	}
	return p
}

// groupByRendition orders the variants idx of vs so that those of one
// rendition (renderKey) are next to each other, groups in the order of
// their first variant: a shared rendition is then kept only while its own
// variants are written, never beside other variants' images.
func groupByRendition(vs []Variant, idx []int) []int {
	var keys []string
	groups := map[string][]int{}
	for _, i := range idx {
		k := renderKey(vs[i])
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], i)
	}
	out := make([]int, 0, len(idx))
	for _, k := range keys {
		out = append(out, groups[k]...)
	}
	return out
}

// markRenditions sets the sharing facts of the full-size variants' steps
// (the order after the nSmall resized ones), as stageOutputSpace decides
// them at run time: a variant reuses an earlier one's image of the same
// rendition, keeps its own for a later one, and takes over the shared
// image when no later variant of another rendition renders from it.
// Resized variants always make their own image.
func (p *StagePlan) markRenditions(vs []Variant, nSmall int) {
	full := p.order[nSmall:]
	for n, vi := range full {
		key := renderKey(vs[vi])
		var reuses, keep, takes bool
		for _, e := range full[:n] {
			reuses = reuses || renderKey(vs[e]) == key
		}
		takes = !reuses
		for _, l := range full[n+1:] {
			lk := renderKey(vs[l])
			keep = keep || lk == key
			if lk != key {
				takes = false
			}
		}
		for i := range p.Steps {
			if p.Steps[i].v == vi {
				p.Steps[i].takesShared, p.Steps[i].reuses, p.Steps[i].keep = takes, reuses, keep
			}
		}
	}
}

// previewOnly reports whether every variant of p is made from the
// embedded preview (no raw data decoded).
func (p StagePlan) previewOnly() bool {
	for _, vi := range p.order {
		if !p.fromPreview(vi) {
			return false
		}
	}
	return len(p.order) > 0
}

// fromPreview reports whether variant vi (an index into the variants
// planned) is made from the embedded preview: its first step is
// preview-source.
func (p StagePlan) fromPreview(vi int) bool {
	for _, st := range p.Steps {
		if st.v == vi {
			return st.Stage == previewSourceStage.Name
		}
	}
	return false
}

// Sequence returns the steps variant name goes through, in order: the
// shared steps before its own steps that it uses, then its own.
func (p StagePlan) Sequence(name string) []Step {
	own := map[string]bool{}
	for _, st := range p.Steps {
		if st.Variant == name {
			own[st.Stage] = true
		}
	}
	var out []Step
	for _, st := range p.Steps {
		if st.Variant == name || st.Shared() && !own[st.Stage] {
			out = append(out, st)
		}
	}
	return out
}

// Names returns the names of the steps in the order they run (what
// Result.Timings names).
func (p StagePlan) Names() []string {
	out := make([]string, len(p.Steps))
	for i, st := range p.Steps {
		out[i] = st.Name
	}
	return out
}

// String is the plan as text, one step a line, for --dry-run: the decoded
// size and whether the half-size tier halves it (or that no raw data is
// decoded, every variant being made from the embedded preview), then the step's name, its size, whether it is shared
// by the variants after it, the fused pass it runs in ("pass N"), and an
// AVIF or JPEG XL encode step's encoder working memory ("encoder 540
// MiB", encoderBytes).
func (p StagePlan) String() string {
	var b strings.Builder
	if p.previewOnly() {
		fmt.Fprintf(&b, "no raw decode, every variant from the embedded preview; variants in order: %s\n", strings.Join(p.Variants, ", "))
	} else {
		half := ""
		if p.HalfSizeTier {
			half = " at half size (--half-size-tier auto: every variant at most half the picture)"
		}
		fmt.Fprintf(&b, "decoded %d×%d%s; variants in order: %s\n", p.W, p.H, half, strings.Join(p.Variants, ", "))
	}
	for _, st := range p.Steps {
		who := "shared"
		if !st.Shared() {
			who = st.Variant
		}
		if st.Pass > 0 {
			who = fmt.Sprintf("%-8s pass %d", who, st.Pass)
		}
		if st.encoder > 0 {
			who = fmt.Sprintf("%-8s encoder %.0f MiB", who, float64(st.encoder)/(1<<20))
		}
		fmt.Fprintf(&b, "  %-26s %-11s %s\n", st.Name, fmt.Sprintf("%d×%d", st.W, st.H), who)
	}
	var streamed []string
	for _, st := range p.Steps {
		if st.Stream {
			streamed = append(streamed, st.Name)
		}
	}
	if len(streamed) > 0 {
		fmt.Fprintf(&b, "  streamed in row bands, when the file needs no whole image: %s\n", strings.Join(streamed, ", "))
	}
	return b.String()
}
