package pipeline

import (
	"image"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/demosaic"
	"github.com/rawbatch/rawbatch/pipeline/look"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// TestReduceCFAMatchesReduce: the anchor's CFA reduction (reduceCFA) of a
// smooth mosaic gives the cells look.Reduce gives of its RCD demosaic
// (relative difference ≤ 1 % away from the clipped disc's edge, where the
// demosaic interpolates across it), the same clipped cells but along the
// disc's edge, and sub-cells (of 2 to 3 photosites a side) within 1 % on
// average, 5 % at most away from the edge.
func TestReduceCFAMatchesReduce(t *testing.T) {
	const w, h = 2400, 1600
	scene := func(x, y, c int) float32 {
		fx, fy := float64(x)/w, float64(y)/h
		v := 0.05 + 0.4*fx*fy + 0.2*math.Sin(6*fx+float64(c))*math.Sin(4*fy)*fy + 0.25
		if dx, dy := x-300, y-300; dx*dx+dy*dy < 40*40 {
			v = 1.5 // a clipped disc
		}
		return float32(v)
	}
	c := demosaic.CFA{W: w, H: h, Stride: w, Pix: make([]uint16, w*h), Colour: [4]uint8{0, 1, 1, 2}}
	for p := range 4 {
		c.Black[p], c.Scale[p] = 256, 1/float32(16383-256)
	}
	for y := range h {
		for x := range w {
			col := int(c.Colour[(y&1)*2+x&1])
			v := min(scene(x, y, col), 1)
			c.Pix[y*w+x] = uint16(256 + math.Round(float64(v)*(16383-256)))
		}
	}
	pix := make([]float32, 3*w*h)
	if err := demosaic.RCD(c, pix); err != nil {
		t.Fatal(err)
	}
	r := image.Rect(10, 6, w-14, h-8)
	full := look.Image{W: r.Dx(), H: r.Dy(), Pix: make([]float32, 3*r.Dx()*r.Dy())}
	for y := range r.Dy() {
		copy(full.Pix[3*y*r.Dx():3*(y+1)*r.Dx()], pix[3*((y+r.Min.Y)*w+r.Min.X):3*((y+r.Min.Y)*w+r.Max.X)])
	}
	gw, gh := look.GridSize(r.Dx(), r.Dy(), look.GridWidth)
	sub := look.SubCells(r.Dx(), r.Dy(), gw, gh, look.MaxSub)
	g, err := reduceCFA(c, r, gw, gh, sub, anchorClip)
	if err != nil {
		t.Fatal(err)
	}
	want, wclip, err := look.Reduce(full, gw, gh, anchorClip)
	if err != nil {
		t.Fatal(err)
	}
	got, gclip := g.cells(true)
	cw, ch := float64(r.Dx())/float64(gw), float64(r.Dy())/float64(gh)
	// nearEdge: cell k (of a grid sub times finer) lies within two cells
	// of the disc's edge.
	nearEdge := func(k, gw, sub int) bool {
		x := (float64(k%gw)+0.5)*cw/float64(sub) + float64(r.Min.X)
		y := (float64(k/gw)+0.5)*ch/float64(sub) + float64(r.Min.Y)
		return math.Abs(math.Hypot(x-300, y-300)-40) < 2*max(cw, ch)
	}
	worst, clipDiff := 0.0, 0
	for k := range gw * gh {
		if (wclip[k] > look.MaxClippedFraction) != (gclip[k] > look.MaxClippedFraction) {
			clipDiff++
			continue
		}
		if wclip[k] > 0 || nearEdge(k, gw, 1) {
			continue
		}
		for ch := range 3 {
			worst = max(worst, math.Abs(float64(got.Pix[3*k+ch])/float64(want.Pix[3*k+ch])-1))
		}
	}
	if worst > 0.01 || clipDiff > 2*(gw+gh)/10 {
		t.Errorf("cells differ by up to %.4f (relative); %d cells clipped in one only", worst, clipDiff)
	}
	sg, err := g.subGrid()
	if err != nil {
		t.Fatal(err)
	}
	ws, err := look.ReduceSub(full, gw, gh, look.MaxSub)
	if err != nil {
		t.Fatal(err)
	}
	if sg.Sub != ws.Sub || sg.Image.W != ws.Image.W || sg.Image.H != ws.Image.H {
		t.Fatalf("sub-grid %d×%d of %d, ReduceSub's %d×%d of %d", sg.Image.W, sg.Image.H, sg.Sub, ws.Image.W, ws.Image.H, ws.Sub)
	}
	worst = 0
	var sum float64
	n := 0
	for i, v := range sg.Image.Pix {
		if wv := ws.Image.Pix[i]; wv < 0.99 && !nearEdge(i/3, sg.Image.W, sg.Sub) {
			d := math.Abs(float64(v)/float64(wv) - 1)
			worst, sum, n = max(worst, d), sum+d, n+1
		}
	}
	t.Logf("cells %d×%d of %.1f×%.1f photosites; sub-cells %d a side: relative difference mean %.4f, max %.4f", gw, gh, cw, ch, sg.Sub, sum/float64(n), worst)
	if worst > 0.05 || sum/float64(n) > 0.01 {
		t.Errorf("sub-cells differ by up to %.4f (relative), %.4f on average", worst, sum/float64(n))
	}
}

// anchorEstimate matches the anchor's estimate in an exposure source.
var anchorEstimate = regexp.MustCompile(`([+-]?[0-9.]+) EV \(median`)

// anchorMeasured is the EV the anchor measured (applied or not) and
// whether it measured one: the preview anchor's estimate, or the camera
// look's EV.
func anchorMeasured(r Result) (float64, bool) {
	src := r.Exposure.Source
	if i := strings.Index(src, ", camera look "); i >= 0 {
		f := strings.Fields(src[i+len(", camera look "):])
		v, err := strconv.ParseFloat(f[0], 64)
		return v, err == nil
	}
	m := anchorEstimate.FindStringSubmatch(src)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}

// rawCorpus lists the real files of testdata/raw and of the shared corpus
// (RAWBATCH_RAWCORPUS, else /work/shared/rawcorpus when present), each
// name once.
func rawCorpus(t *testing.T) []string {
	dirs := []string{filepath.Join(testdata, "raw")}
	if d := os.Getenv("RAWBATCH_RAWCORPUS"); d != "" {
		dirs = append(dirs, d)
	} else {
		dirs = append(dirs, "../../../shared/rawcorpus", "../../shared/rawcorpus")
	}
	seen := map[string]bool{}
	var out []string
	for _, d := range dirs {
		es, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range es {
			if e.IsDir() || seen[e.Name()] || strings.HasSuffix(e.Name(), ".md") {
				continue
			}
			seen[e.Name()] = true
			out = append(out, filepath.Join(d, e.Name()))
		}
	}
	return out
}

// TestAnchorCFAMatchesStoredRows: on every real file of the corpus whose
// anchor measures its preview, the anchor measured on the CFA data (a
// streamed JPEG in one pass) gives the EV that the measurement of the
// demosaiced image gives (anchorStoredRows: the two-pass stream) within
// 0.05 EV, with the default look and with --look camera, and the same
// decision (applied or not, why).
func TestAnchorCFAMatchesStoredRows(t *testing.T) {
	dir := t.TempDir()
	camera := DefaultSettings()
	camera.Look = LookCamera
	for _, in := range rawCorpus(t) {
		for _, lk := range []struct {
			name string
			s    Settings
		}{{"default", DefaultSettings()}, {"camera", camera}} {
			name := filepath.Base(in) + "/" + lk.name
			t.Run(name, func(t *testing.T) {
				got, res := convertSafe(t, in, dir, name+"/cfa", lk.s)
				if !got {
					t.Skip("not converted")
				}
				anchorStoredRows = true
				_, old := convertSafe(t, in, dir, name+"/rows", lk.s)
				anchorStoredRows = false
				ov, ok := anchorMeasured(old)
				if !ok {
					t.Skipf("no anchor measured: %s", old.Exposure.Source)
				}
				nv, ok := anchorMeasured(res)
				if !ok {
					t.Fatalf("CFA anchor measured nothing: %s (demosaiced: %s)", res.Exposure.Source, old.Exposure.Source)
				}
				t.Logf("EV %+.3f, demosaiced %+.3f (Δ %+.3f); applied %+.3f, %+.3f; streamed %v", nv, ov, nv-ov, res.Exposure.EV, old.Exposure.EV, res.Streamed)
				if d := math.Abs(nv - ov); d > 0.05 {
					t.Errorf("anchor %+.3f EV (%s), on the demosaiced image %+.3f (%s)", nv, res.Exposure.Source, ov, old.Exposure.Source)
				}
				if noNumbers(res.Exposure.Source) != noNumbers(old.Exposure.Source) || math.Abs(res.Exposure.EV-old.Exposure.EV) > 0.05 {
					t.Errorf("exposure %+.3f %q, on the demosaiced image %+.3f %q", res.Exposure.EV, res.Exposure.Source, old.Exposure.EV, old.Exposure.Source)
				}
			})
		}
	}
}

// noNumbers is an exposure source's terms (terms) without their numbers.
func noNumbers(src string) string {
	return regexp.MustCompile(`[+-]?[0-9.]+`).ReplaceAllString(terms(src), "#")
}

// convertSafe converts in to a full-size JPEG, reporting false when the
// file is not one the pipeline converts.
func convertSafe(t *testing.T, in, dir, sub string, s Settings) (bool, Result) {
	t.Helper()
	d := filepath.Join(dir, sub)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	vs := variants(t, "main=jpeg")
	s.Variants = vs
	res, err := ConvertOutputs(t.Context(), in, []OutputSpec{{Variant: vs[0], Path: filepath.Join(d, "out.jpg")}}, s, ConvertOptions{})
	if err != nil {
		return false, res
	}
	return true, res
}

// TestStreamAnchorOnePass: a streamed file with an embedded preview whose
// anchor measures the CFA data streams in one pass (no stored rows are
// let go: twoPassReleaseHook is never called), with the anchor applied,
// and the same output as the whole-image path within one code value.
func TestStreamAnchorOnePass(t *testing.T) {
	dir := t.TempDir()
	in := writeClipped(t, dir, 1400, 1000, 6, true)
	calls := 0
	twoPassReleaseHook = func(int, int) { calls++ }
	defer func() { twoPassReleaseHook = nil }()
	got, res := convertOpts(t, in, dir, "stream", DefaultSettings(), ConvertOptions{}, "main=tiff16")
	if !res.Streamed || calls != 0 {
		t.Fatalf("streamed %v, stored bands let go %d times", res.Streamed, calls)
	}
	if _, ok := anchorMeasured(res); !ok {
		t.Fatalf("no anchor measured: %s", res.Exposure.Source)
	}
	want, whole := convertOpts(t, in, dir, "whole", DefaultSettings(), ConvertOptions{wholeImage: true}, "main=tiff16")
	if math.Abs(res.Exposure.EV-whole.Exposure.EV) > 1e-9 || terms(res.Exposure.Source) != terms(whole.Exposure.Source) {
		t.Errorf("exposure %+.4f (%s), whole-image path %+.4f (%s)", res.Exposure.EV, res.Exposure.Source, whole.Exposure.EV, whole.Exposure.Source)
	}
	if d := maxCodeDiff(decodeImage(t, got[0]), decodeImage(t, want[0]), 8); d < 0 || d > 1 {
		t.Errorf("differs from the whole-image path by %d code values", d)
	}
}

// BenchmarkReduceCFA24MP: the anchor's CFA reduction of a 6000×4000
// mosaic to the default look's grid.
func BenchmarkReduceCFA24MP(b *testing.B) {
	const w, h = 6000, 4000
	c := demosaic.CFA{W: w, H: h, Stride: w, Pix: make([]uint16, w*h), Colour: [4]uint8{0, 1, 1, 2}}
	for p := range 4 {
		c.Black[p], c.Scale[p] = 256, 1/float32(16383-256)
	}
	for i := range c.Pix {
		c.Pix[i] = uint16(256 + i%8000)
	}
	for b.Loop() {
		if _, err := reduceCFA(c, image.Rect(0, 0, w, h), 256, 171, 1, anchorClip); err != nil {
			b.Fatal(err)
		}
	}
}

// TestStreamAnchorLensOnePass: a streamed file with a preview and a lens
// lensfun corrects (the realistic set's: lensfun's vignetting in the raw
// data, none in the preview, no distortion in either) has its anchor
// measured on the CFA data with the lens's vignetting gains: without
// noise reduction it streams in one pass (no stored bands let go), with
// the lens corrected, and the anchor is within 0.07 EV of the one
// measured on the corrected demosaiced image (anchorStoredRows; the
// gains left out would put it 0.3 EV off).
func TestStreamAnchorLensOnePass(t *testing.T) {
	in := realFiles(t, 1536, 1024, synthdng.RealDNG)[0]
	dir := t.TempDir()
	s := DefaultSettings()
	s.Denoise = DenoiseOff
	calls := 0
	twoPassReleaseHook = func(int, int) { calls++ }
	defer func() { twoPassReleaseHook = nil }()
	_, res := convertOpts(t, in, dir, "cfa", s, ConvertOptions{}, "main=jpeg")
	if !res.Streamed || calls != 0 {
		t.Fatalf("streamed %v, stored bands let go %d times", res.Streamed, calls)
	}
	if res.Lens == nil || !strings.Contains(res.Lens.Corrections, "vignetting") {
		t.Fatalf("the lens was not corrected: %+v", res.Lens)
	}
	nv, ok := anchorMeasured(res)
	if !ok {
		t.Fatalf("no anchor measured: %s", res.Exposure.Source)
	}
	anchorStoredRows = true
	_, old := convertOpts(t, in, dir, "rows", s, ConvertOptions{}, "main=jpeg")
	anchorStoredRows = false
	ov, ok := anchorMeasured(old)
	if !ok {
		t.Fatalf("no anchor measured on the stored rows: %s", old.Exposure.Source)
	}
	t.Logf("anchor %+.3f EV on the CFA data, %+.3f on the corrected image", nv, ov)
	if math.Abs(nv-ov) > 0.07 {
		t.Errorf("anchor %+.3f EV (%s), on the corrected image %+.3f (%s)", nv, res.Exposure.Source, ov, old.Exposure.Source)
	}
}
