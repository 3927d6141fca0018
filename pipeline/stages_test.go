package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// timingNames returns the step names of res.Timings in order.
func timingNames(res Result) []string {
	var out []string
	for _, st := range res.Timings {
		out = append(out, st.Stage)
	}
	return out
}

// stepMemory returns the estimate's step named name.
func stepMemory(m Memory, name string) StepMemory {
	for _, s := range m.Steps {
		if s.Step == name {
			return s
		}
	}
	return StepMemory{}
}

// TestStagesWellFormed: every PerFile stage comes before every PerVariant
// one, the first PerVariant stages are preview-source (a variant made
// from the embedded preview starts there, with no shared step but open)
// and resize (PlanVariants moves it), and names are unique.
func TestStagesWellFormed(t *testing.T) {
	seen := map[string]bool{}
	perVariant := 0
	for i, st := range Stages {
		if seen[st.Name] {
			t.Errorf("stage %q listed twice", st.Name)
		}
		seen[st.Name] = true
		if st.run == nil || st.Cost == nil {
			t.Errorf("stage %q lacks its run function or its memory cost", st.Name)
		}
		if st.Scope == PerVariant && perVariant < 2 {
			if want := []string{previewSourceStage.Name, resizeStage.Name}[perVariant]; st.Name != want {
				t.Errorf("per-variant stage %d is %q (index %d), want %s", perVariant+1, st.Name, i, want)
			}
			perVariant++
		}
		if st.Scope == PerFile && perVariant > 0 {
			t.Errorf("per-file stage %q after a per-variant one", st.Name)
		}
	}
}

func variants(t *testing.T, specs ...string) []Variant {
	var vs []Variant
	for _, spec := range specs {
		v, err := ParseVariant(spec)
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v)
	}
	return vs
}

// TestPlanVariants: the planner's rules on a 4000×3000 image.
func TestPlanVariants(t *testing.T) {
	seq := func(p StagePlan, name string) string {
		var out []string
		for _, st := range p.Sequence(name) {
			out = append(out, st.Name)
		}
		return strings.Join(out, " ")
	}
	// One full-size JPEG: the list in order, no resize, names unprefixed.
	p := PlanVariants(4000, 3000, variants(t, "main=jpeg"), DefaultSettings())
	if got, want := strings.Join(p.Names(), " "), "open preview unpack white-level opcodes-raw white-balance demosaic crop highlights opcodes denoise lens capture-sharpen exposure-anchor camera-matrix exposure tone output-space orientation quantise encode"; got != want {
		t.Errorf("full JPEG:\n got %s\nwant %s", got, want)
	}
	// One thumbnail: resized before the pointwise stages, which run at
	// its size.
	p = PlanVariants(4000, 3000, variants(t, "thumb=webp,size=512"), DefaultSettings())
	if got, want := strings.Join(p.Names(), " "), "open preview unpack white-level opcodes-raw white-balance demosaic crop highlights opcodes denoise lens capture-sharpen exposure-anchor resize camera-matrix exposure tone output-space orientation quantise encode"; got != want {
		t.Errorf("512 px WebP:\n got %s\nwant %s", got, want)
	}
	resizeAt := slices.IndexFunc(p.Steps, func(st Step) bool { return st.Stage == "resize" })
	for _, st := range p.Steps[resizeAt:] {
		if st.W != 512 || st.H != 384 || st.Shared() {
			t.Errorf("thumbnail step %s: %d×%d shared=%v", st.Name, st.W, st.H, st.Shared())
		}
	}
	// Full TIFF16 and a 2048 px JPEG given in that order: the JPEG runs
	// first, with its own steps; the shared pointwise steps run once
	// after it, for the TIFF.
	p = PlanVariants(4000, 3000, variants(t, "print=tiff16", "web=jpeg,size=2048"), DefaultSettings())
	if got, want := strings.Join(p.Variants, " "), "web print"; got != want {
		t.Errorf("order %s, want %s", got, want)
	}
	if got, want := seq(p, "web"), "open preview unpack white-level opcodes-raw white-balance demosaic crop highlights opcodes denoise lens capture-sharpen exposure-anchor web/resize web/camera-matrix web/exposure web/tone web/output-space web/orientation web/quantise web/encode"; got != want {
		t.Errorf("web:\n got %s\nwant %s", got, want)
	}
	if got, want := seq(p, "print"), "open preview unpack white-level opcodes-raw white-balance demosaic crop highlights opcodes denoise lens capture-sharpen exposure-anchor camera-matrix exposure tone print/output-space print/orientation print/quantise print/encode"; got != want {
		t.Errorf("print:\n got %s\nwant %s", got, want)
	}
	// Renditions grouped: a and c share space, size and sharpening.
	p = PlanVariants(4000, 3000, variants(t, "a=jpeg", "b=png16,space=adobergb", "c=tiff8"), DefaultSettings())
	if got, want := strings.Join(p.Variants, " "), "a c b"; got != want {
		t.Errorf("renditions: order %s, want %s", got, want)
	}
	// Stages inactive for the settings are not planned: the exposure
	// anchor does nothing with --look neutral or --tone none; the preview
	// stays for --wb camera (its fallback fits the preview, which only the
	// file's multipliers tell), and goes with any other --wb.
	full := "open preview unpack white-level opcodes-raw white-balance demosaic crop highlights opcodes denoise lens capture-sharpen exposure-anchor camera-matrix exposure tone output-space orientation quantise encode"
	for _, tc := range []struct {
		name string
		set  func(*Settings)
		want string
	}{
		{"--look neutral", func(s *Settings) { s.Look = LookNeutral }, strings.Replace(full, " exposure-anchor", "", 1)},
		{"--tone none", func(s *Settings) { s.Tone = ToneNone }, strings.Replace(full, " exposure-anchor", "", 1)},
		{"--look neutral --wb auto", func(s *Settings) { s.Look, s.WhiteBalance = LookNeutral, WhiteBalance{Mode: "auto"} },
			strings.Replace(strings.Replace(full, " exposure-anchor", "", 1), " preview", "", 1)},
		{"--exposure-anchor none --wb daylight", func(s *Settings) { s.ExposureAnchor, s.WhiteBalance = AnchorNone, WhiteBalance{Mode: "daylight"} },
			strings.Replace(strings.Replace(full, " exposure-anchor", "", 1), " preview", "", 1)},
		{"--look camera --wb auto", func(s *Settings) { s.Look, s.WhiteBalance = LookCamera, WhiteBalance{Mode: "auto"} }, full},
		{"--dng-opcodes off", func(s *Settings) { s.DNGOpcodes = OpcodesOff },
			strings.Replace(strings.Replace(full, " opcodes-raw", "", 1), " opcodes", "", 1)},
		{"--denoise off", func(s *Settings) { s.Denoise = DenoiseOff }, strings.Replace(full, " denoise", "", 1)},
		{"--capture-sharpen off", func(s *Settings) { s.CaptureSharpen = CaptureSharpenOff }, strings.Replace(full, " capture-sharpen", "", 1)},
		{"--lens off", func(s *Settings) { s.Lens = LensOff }, strings.Replace(full, " lens", "", 1)},
		{"--crop sensor", func(s *Settings) { s.Crop = CropSensor }, strings.Replace(full, " crop", "", 1)},
	} {
		s := DefaultSettings()
		tc.set(&s)
		if got := strings.Join(PlanVariants(4000, 3000, variants(t, "main=jpeg"), s).Names(), " "); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// TestPlanString: the text form lists every step with its size, who it
// is for and the fused pass it runs in, and the steps that stream.
func TestPlanString(t *testing.T) {
	p := PlanVariants(4000, 3000, variants(t, "print=tiff16", "web=jpeg,size=2048"), DefaultSettings())
	s := p.String()
	lines := strings.Split(s, "\n")
	if lines[0] != "decoded 4000×3000; variants in order: web, print" {
		t.Errorf("first line %q", lines[0])
	}
	for _, want := range []string{"web/resize 2048×1536 web", "web/tone 2048×1536 web pass 1", "camera-matrix 4000×3000 shared pass 2", "print/quantise 4000×3000 print pass 2", "print/encode 4000×3000 print"} {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.Join(strings.Fields(l), " ") == want }) {
			t.Errorf("text form lacks %q:\n%s", want, s)
		}
	}
	// The heading, a line a step, and the line naming the streamed steps
	// (two variants stream).
	if n := strings.Count(s, "\n"); n != len(p.Steps)+2 || !strings.Contains(s, "streamed in row bands, when the file needs no whole image: demosaic,") {
		t.Errorf("%d lines for %d steps:\n%s", n, len(p.Steps), s)
	}
}

// TestTimingsAreThePlan: the steps a conversion runs (Result.Timings) are
// exactly its plan's, in order, for several variant sets.
func TestTimingsAreThePlan(t *testing.T) {
	dir := t.TempDir()
	in := writeSynthetic(t, dir, 96, 64)
	fi, err := ReadInfo(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range [][]string{
		{"main=jpeg"},
		{"thumb=webp,size=32"},
		{"print=tiff16", "web=jpeg,size=48"},
		{"a=jpeg", "b=png16,space=adobergb", "c=tiff8", "d=png8,size=50%"},
	} {
		vs := variants(t, set...)
		s := DefaultSettings()
		s.Variants = vs
		var outs []OutputSpec
		for _, v := range vs {
			outs = append(outs, OutputSpec{Variant: v, Path: filepath.Join(dir, v.Name+"."+v.Format)})
		}
		res, err := ConvertVariants(context.Background(), in, outs, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := timingNames(res), PlanStages(fi, s).Names(); !slices.Equal(got, want) {
			t.Errorf("%v:\n ran     %q\n planned %q", set, got, want)
		}
	}
}

// TestPipelineDocTable: docs/pipeline.md's stage table lists Stages, in
// order, with each stage's declared scope and kind (and "linear").
func TestPipelineDocTable(t *testing.T) {
	b, err := os.ReadFile("../docs/pipeline.md")
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ num, name, scope string }
	var rows []row
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Split(l, "|")
		if len(f) < 5 || !strings.HasPrefix(l, "| ") {
			continue
		}
		if n := strings.TrimSpace(f[1]); n == "#" || n == "0" {
			continue
		}
		rows = append(rows, row{strings.TrimSpace(f[1]), strings.TrimSpace(f[2]), strings.TrimSpace(f[3])})
	}
	inDoc, inList := map[string]bool{}, map[string]bool{}
	for _, r := range rows {
		inDoc[r.name] = true
	}
	for _, st := range Stages {
		inList[st.Name] = true
		if !inDoc[st.Name] {
			t.Errorf("stage %s of Stages has no row in docs/pipeline.md's table", st.Name)
		}
	}
	for _, r := range rows {
		if !inList[r.name] {
			t.Errorf("docs/pipeline.md's table has a row %s %q that is no stage of Stages", r.num, r.name)
		}
	}
	if len(rows) != len(Stages) {
		t.Fatalf("docs/pipeline.md has %d stage rows, Stages %d (a stage listed twice?)", len(rows), len(Stages))
	}
	if t.Failed() {
		return
	}
	for i, st := range Stages {
		want := st.Scope.String() + ", " + st.Kind.String()
		if st.Linear {
			want += ", linear"
		}
		if r := rows[i]; r.name != st.Name || r.scope != want {
			t.Errorf("row %d: %q, %q; Stages[%d]: %q, %q", i+1, r.name, r.scope, i, st.Name, want)
		}
		if r := rows[i]; r.num != strconv.Itoa(i+1) {
			t.Errorf("row %q is numbered %q; it is stage %d of Stages: number the rows 1, 2, ... in order", r.name, r.num, i+1)
		}
	}
}

// TestPlanFollowsDecodedSize: when LibRaw decodes another size than the
// header said, the steps after the decode are planned again for the size
// it made (here the header claims a size that makes the 48 px variant
// full size; the decode's 96×64 makes it a resized one).
func TestPlanFollowsDecodedSize(t *testing.T) {
	dir := t.TempDir()
	in := writeSynthetic(t, dir, 96, 64)
	hdr, err := ReadHeader(in)
	if err != nil {
		t.Fatal(err)
	}
	lied := *hdr
	lied.Width, lied.Height = 48, 32
	vs := variants(t, "web=jpeg,size=48", "main=png8")
	s := DefaultSettings()
	s.Variants = vs
	outs := []OutputSpec{{Variant: vs[0], Path: filepath.Join(dir, "web.jpg")}, {Variant: vs[1], Path: filepath.Join(dir, "main.png")}}
	res, err := ConvertOutputs(context.Background(), in, outs, s, ConvertOptions{Header: &lied})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := timingNames(res), PlanVariants(96, 64, vs, s).Names(); !slices.Equal(got, want) {
		t.Errorf("ran     %q\nplanned %q", got, want)
	}
	if res.Variants[0].Width != 48 || res.Variants[1].Width != 96 {
		t.Errorf("written %+v", res.Variants)
	}
}
