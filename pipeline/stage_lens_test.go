package pipeline

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/cache"
	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/lens"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// lensTestDB is the lensfun profile of the made-up lenses the charts are
// rendered through (synthdng.LensChart).
const lensTestDB = "../testdata/lensfun"

// lensChartSettings: 16-bit linear-light-readable output, no tone curve,
// no exposure changes, LibRaw's white level, the test profiles.
func lensChartSettings(mode LensMode) Settings {
	s := DefaultSettings()
	s.Format = PNG16
	s.Tone = ToneNone
	s.BaselineExposure = false
	s.Look, s.ExposureAnchor = LookNeutral, AnchorNone
	s.WhiteLevel, s.Highlights = WhiteLevelLibRaw, HighlightsClip
	s.Lens, s.LensDB = mode, lensTestDB
	return s
}

// linearPlanes converts chart c (written as a DNG into dir) with s and
// returns its output as linear sRGB planes (w×h each) and the result.
func linearPlanes(t *testing.T, c synthdng.LensChart, s Settings) (planes [3][]float64, w, h int, res Result) {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "chart.dng")
	if err := synthdng.WriteFile(in, c.Spec()); err != nil {
		t.Fatal(err)
	}
	out, res := convert(t, in, dir, s)
	img := decodeImage(t, out)
	w, h = img.Bounds().Dx(), img.Bounds().Dy()
	for ch := range planes {
		planes[ch] = make([]float64, w*h)
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			r, g, b := rgb16(img, x, y)
			for ch, v := range []uint16{r, g, b} {
				planes[ch][y*w+x] = colour.SRGBDecode(float64(v) / 65535)
			}
		}
	}
	return planes, w, h, res
}

// gridLine is one tracked grid line: at each step along it, the centroid
// of each channel's darkness across it.
type gridLine struct {
	along []float64
	at    [][3]float64
}

// trackLines finds the grid lines that run along x (horizontal, vertical
// false) or along y, crossing the middle between two lines of the other
// direction, and tracks each over the image: at every position along it,
// the centroid across of (the window's brightest − value), per channel,
// in a window of ±spacing/3 about the green centroid of the step before.
// Positions where a line of the other family crosses (the window's
// brightest green below 95 % of the image's) are stepped over: demosaic
// and resampling at the dark crossings disturb the profile. Lines whose
// window would leave the image are dropped.
func trackLines(p [3][]float64, w, h int, spacing float64, vertical bool) []gridLine {
	at := func(ch, a, c int) float64 { // a along, c across
		if vertical {
			return p[ch][a*w+c]
		}
		return p[ch][c*w+a]
	}
	nAlong, nAcross := w, h
	if vertical {
		nAlong, nAcross = h, w
	}
	half := int(spacing / 3)
	margin := 6
	// Candidates: local minima across, on the line along that passes
	// midway between two lines of the other family near the centre.
	mid := nAlong/2 + int(spacing/2)
	var starts []float64
	for c := half + 1; c < nAcross-half-1; c++ {
		v := at(1, mid, c)
		if v < at(1, mid, c-1) && v <= at(1, mid, c+1) && v < 0.6*at(1, mid, c-half) {
			starts = append(starts, float64(c))
		}
	}
	white := 0.0
	for _, v := range p[1] {
		white = max(white, v)
	}
	crossing := func(a int, c0 float64) bool {
		top := 0.0
		for c := max(0, int(c0)-half); c <= min(nAcross-1, int(c0)+half); c++ {
			top = max(top, at(1, a, c))
		}
		return top < 0.95*white
	}
	centroid := func(ch, a int, c0 float64) (float64, bool) {
		lo, hi := int(math.Round(c0))-half, int(math.Round(c0))+half
		if lo < 0 || hi >= nAcross {
			return 0, false
		}
		top := 0.0
		for c := lo; c <= hi; c++ {
			top = max(top, at(ch, a, c))
		}
		var s, sw float64
		for c := lo; c <= hi; c++ {
			d := top - at(ch, a, c)
			s += d * float64(c)
			sw += d
		}
		if sw <= 0 {
			return 0, false
		}
		return s / sw, true
	}
	var lines []gridLine
	for _, c0 := range starts {
		var l gridLine
		ok := true
		track := func(a int, c float64) float64 {
			if crossing(a, c) {
				return c
			}
			g, good := c, true
			for range 2 {
				if g, good = centroid(1, a, g); !good {
					ok = false
					return c
				}
			}
			var v [3]float64
			v[1] = g
			for _, ch := range []int{0, 2} {
				if v[ch], good = centroid(ch, a, g); !good {
					ok = false
				}
			}
			l.along = append(l.along, float64(a))
			l.at = append(l.at, v)
			return g
		}
		c := c0
		for a := mid; a < nAlong-margin && ok; a++ {
			c = track(a, c)
		}
		c = l.at[0][1]
		for a := mid - 1; a >= margin && ok; a-- {
			c = track(a, c)
		}
		if ok {
			lines = append(lines, l)
		}
	}
	return lines
}

// straightness is the largest distance (px) of a line's green centroids
// from the least-squares straight line through them.
func (l gridLine) straightness() float64 {
	var n, sa, sc, saa, sac float64
	for i, a := range l.along {
		c := l.at[i][1]
		n++
		sa += a
		sc += c
		saa += a * a
		sac += a * c
	}
	b := (n*sac - sa*sc) / (n*saa - sa*sa)
	a0 := (sc - b*sa) / n
	worst := 0.0
	for i, a := range l.along {
		worst = math.Max(worst, math.Abs(l.at[i][1]-(a0+b*a))/math.Sqrt(1+b*b))
	}
	return worst
}

var lensChartBase = synthdng.LensChart{Width: 720, Height: 480, LineSigma: 2, Make: "Rawbatch", Model: "Lens Chart"}

// TestLensDistortionGrid: a grid rendered through the barrel profile
// (poly3 k1 = −0.03, bowing the outer lines by ~12 px) comes out with
// every grid line straight within 0.5 px.
func TestLensDistortionGrid(t *testing.T) {
	c := lensChartBase
	c.Spacing, c.K1, c.Lens, c.FocalLength, c.FNumber = 48, -0.03, "Rawbatch Barrel 24mm f/2.8", 24, 2.8
	for _, mode := range []LensMode{LensAuto, LensOff} {
		p, w, h, res := linearPlanes(t, c, lensChartSettings(mode))
		var worst float64
		n := 0
		for _, vertical := range []bool{false, true} {
			for _, l := range trackLines(p, w, h, c.Spacing, vertical) {
				worst = math.Max(worst, l.straightness())
				n++
			}
		}
		t.Logf("--lens %s: %d lines, largest deviation from straight %.3f px; lens %+v", mode, n, worst, res.Lens)
		if n < 14 {
			t.Fatalf("--lens %s: only %d grid lines tracked", mode, n)
		}
		if mode == LensOff {
			if res.Lens != nil {
				t.Errorf("--lens off: lens result %+v", res.Lens)
			}
			if worst < 2 {
				t.Errorf("--lens off: the uncorrected lines bow only %.3f px; the chart is not distorted", worst)
			}
			continue
		}
		if worst > 0.5 {
			t.Errorf("corrected grid lines deviate up to %.3f px from straight, want ≤ 0.5", worst)
		}
		if res.Lens == nil || res.Lens.Profile != "Rawbatch Barrel 24mm f/2.8" || res.Lens.Corrections != "distortion" || !(res.Lens.Scale > 1) {
			t.Errorf("lens result %+v", res.Lens)
		}
	}
}

// TestLensVignetting: a flat field vignetted by the pa profile (0.6 at the
// corners) comes out flat within 2 %.
func TestLensVignetting(t *testing.T) {
	c := lensChartBase
	c.Vignetting, c.Lens, c.FocalLength, c.FNumber = [3]float64{-0.5, 0.15, -0.05}, "Rawbatch Vignette 50mm f/2", 50, 2
	for _, mode := range []LensMode{LensAuto, LensOff} {
		p, w, h, res := linearPlanes(t, c, lensChartSettings(mode))
		worst := lensFlatness(p, w, h)
		t.Logf("--lens %s: largest departure from the mean %.2f %%; lens %+v", mode, 100*worst, res.Lens)
		if mode == LensOff {
			if worst < 0.1 {
				t.Errorf("--lens off: departure %.2f %%; the chart is not vignetted", 100*worst)
			}
			continue
		}
		if worst > 0.02 {
			t.Errorf("corrected flat field departs %.2f %% from its mean, want ≤ 2 %%", 100*worst)
		}
		if res.Lens == nil || res.Lens.Corrections != "vignetting" {
			t.Errorf("lens result %+v", res.Lens)
		}
	}
}

// TestLensTCA: a grid whose red and blue planes are scaled by +0.1 % and
// −0.1 % (up to 0.7 px apart from green at the edges) is realigned to
// within 0.2 px.
func TestLensTCA(t *testing.T) {
	c := lensChartBase
	c.Width, c.Height = 1200, 800
	c.Spacing, c.KR, c.KB, c.Lens, c.FocalLength, c.FNumber = 60, 1.001, 0.999, "Rawbatch TCA 35mm f/4", 35, 4
	for _, mode := range []LensMode{LensAuto, LensOff} {
		p, w, h, res := linearPlanes(t, c, lensChartSettings(mode))
		var worst float64
		n := 0
		for _, vertical := range []bool{false, true} {
			for _, l := range trackLines(p, w, h, c.Spacing, vertical) {
				n++
				for _, v := range l.at {
					worst = math.Max(worst, math.Max(math.Abs(v[0]-v[1]), math.Abs(v[2]-v[1])))
				}
			}
		}
		t.Logf("--lens %s: %d lines, largest red/blue offset from green %.3f px; lens %+v", mode, n, worst, res.Lens)
		if n < 14 {
			t.Fatalf("--lens %s: only %d grid lines tracked", mode, n)
		}
		if mode == LensOff {
			if worst < 0.4 {
				t.Errorf("--lens off: red/blue offset only %.3f px; the chart has no TCA", worst)
			}
			continue
		}
		if worst > 0.2 {
			t.Errorf("corrected red/blue planes are up to %.3f px off green, want ≤ 0.2", worst)
		}
		if res.Lens == nil || res.Lens.Corrections != "TCA" {
			t.Errorf("lens result %+v", res.Lens)
		}
	}
}

// TestLensNoProfile: an unknown lens is looked up, not corrected, and
// named; --lens-model forces a known one.
func TestLensNoProfile(t *testing.T) {
	c := lensChartBase
	c.Spacing, c.K1, c.Lens, c.FocalLength, c.FNumber = 48, -0.03, "Acme 24mm f/2.8 Unknown", 24, 2.8
	_, _, _, res := linearPlanes(t, c, lensChartSettings(LensAuto))
	if res.Lens == nil || res.Lens.Profile != "" || res.Lens.Reason != "no lens profile" || string(res.Lens.LookedUp) != c.Lens {
		t.Errorf("unknown lens: %+v", res.Lens)
	}
	if got := res.Lens.Summary(); !strings.Contains(got, "no lens profile") || !strings.Contains(got, c.Lens) {
		t.Errorf("summary %q", got)
	}
	s := lensChartSettings(LensAuto)
	s.LensModel = "Rawbatch Barrel 24mm f/2.8"
	_, _, _, res = linearPlanes(t, c, s)
	if res.Lens == nil || string(res.Lens.Profile) != s.LensModel || string(res.Lens.LookedUp) != s.LensModel {
		t.Errorf("--lens-model: %+v", res.Lens)
	}
}

func TestXYZToSRGB(t *testing.T) {
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			var v float64
			for k := 0; k < 3; k++ {
				v += synthdng.XYZToSRGB[i][k] * synthdng.SRGBToXYZ[k][j]
			}
			if want := map[bool]float64{true: 1, false: 0}[i == j]; math.Abs(v-want) > 1e-12 {
				t.Fatalf("XYZToSRGB·SRGBToXYZ [%d][%d] = %g", i, j, v)
			}
		}
	}
}

// TestLensCost: the lens step corrects the image in place: it adds
// lensfun's database (held on) and the band filter's scratch
// (lens.StreamBytes), not a second image; a fisheye's scratch counts a
// copy of the image.
func TestLensCost(t *testing.T) {
	fi := FileInfo{RawWidth: 6000, RawHeight: 4000, CFA: true, Width: 6000, Height: 4000}
	s := DefaultSettings()
	s.ExposureAnchor = AnchorNone
	lensStep := func(s Settings) (got, before StepMemory) {
		m := EstimateMemory(fi, s, 1)
		for i, st := range m.Steps {
			if st.Step == "lens" {
				return st, m.Steps[i-1]
			}
		}
		t.Fatalf("no lens step in %+v", m.Steps)
		return
	}
	got, before := lensStep(s)
	px := int64(24e6)
	if got.Alloc != lensDBBytes || got.Free != 0 || got.Scratch != lens.StreamBytes(6000, 4000, 1) {
		t.Errorf("lens step %+v", got)
	}
	if live := before.Peak - before.Scratch; got.Peak != live+got.Scratch+got.Alloc || got.Peak >= live+12*px {
		t.Errorf("lens peak %d: want what the step before left (%d) and the filter's %d, not a second image", got.Peak, live, got.Scratch+got.Alloc)
	}
	s.LensModel = "Samyang 8mm f/3.5 Fish-Eye CS"
	if f, _ := lensStep(s); f.Scratch != lens.StreamBytes(6000, 4000, 1)+12*px-lens.RingBytes(6000, 4000) {
		t.Errorf("fisheye lens step %+v: want the scratch to count a copy of the image", f)
	}
	s.LensModel = ""
	s.Lens = LensOff
	for _, st := range EstimateMemory(fi, s, 1).Steps {
		if st.Step == "lens" {
			t.Errorf("--lens off plans a lens step")
		}
	}
}

// lensFlatness is the largest departure of any channel from its mean over the
// image less a 2 px border.
func lensFlatness(p [3][]float64, w, h int) float64 {
	var worst float64
	for ch := range p {
		var sum float64
		n := 0
		for y := 2; y < h-2; y++ {
			for x := 2; x < w-2; x++ {
				sum += p[ch][y*w+x]
				n++
			}
		}
		mean := sum / float64(n)
		for y := 2; y < h-2; y++ {
			for x := 2; x < w-2; x++ {
				worst = math.Max(worst, math.Abs(p[ch][y*w+x]/mean-1))
			}
		}
	}
	return worst
}

// TestLensAfterCache: the stage cache holds the image after the lens
// correction, and its key has the lens setting: a run with --lens off does
// not read the entry a corrected run stored and gets the vignetted field,
// and a corrected run from that entry is flat.
func TestLensAfterCache(t *testing.T) {
	dir := t.TempDir()
	c, err := cache.Open(filepath.Join(dir, "cache"), 0)
	if err != nil {
		t.Fatal(err)
	}
	opts := &CacheOptions{Cache: c, Keep: true}
	chart := lensChartBase
	chart.Vignetting, chart.Lens, chart.FocalLength, chart.FNumber = [3]float64{-0.5, 0.15, -0.05}, "Rawbatch Vignette 50mm f/2", 50, 2
	in := filepath.Join(dir, "flat.dng")
	if err := synthdng.WriteFile(in, chart.Spec()); err != nil {
		t.Fatal(err)
	}
	run := func(name string, mode LensMode, wantCached bool) float64 {
		out := filepath.Join(dir, name+".png")
		r, err := ConvertVariants(context.Background(), in, []OutputSpec{{Variant: Variant{Name: "main", Format: "png16", Space: "srgb"}, Path: out}}, lensChartSettings(mode), opts)
		if err != nil || r.FromCache != wantCached {
			t.Fatalf("%s: from cache %v, want %v (%v)", name, r.FromCache, wantCached, err)
		}
		img := decodeImage(t, out)
		w, h := img.Bounds().Dx(), img.Bounds().Dy()
		var p [3][]float64
		for ch := range p {
			p[ch] = make([]float64, w*h)
		}
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				r, g, b := rgb16(img, x, y)
				for ch, v := range []uint16{r, g, b} {
					p[ch][y*w+x] = colour.SRGBDecode(float64(v) / 65535)
				}
			}
		}
		return lensFlatness(p, w, h)
	}
	if f := run("decoded", LensAuto, false); f > 0.02 {
		t.Errorf("decoded, corrected: %.2f %% from flat", 100*f)
	}
	if f := run("off", LensOff, false); f < 0.1 {
		t.Errorf("--lens off: %.2f %% from flat; the corrected entry was used", 100*f)
	}
	if f := run("again", LensAuto, true); f > 0.02 {
		t.Errorf("corrected from the cache: %.2f %% from flat", 100*f)
	}
}

func TestLensSummary(t *testing.T) {
	for _, tc := range []struct {
		l    *LensCorrection
		want string
	}{
		{nil, ""},
		{&LensCorrection{Profile: "Canon EF 24-105mm f/4L IS USM", Corrections: "distortion"}, "lens Canon EF 24-105mm f/4L IS USM"},
		{&LensCorrection{Reason: "no lens profile", LookedUp: "Acme 50"}, `no lens profile for "Acme 50"`},
		{&LensCorrection{Reason: "no lens profile (camera not in lensfun's database)", LookedUp: "Acme 50"}, `no lens profile for "Acme 50" (camera not in lensfun's database)`},
		{&LensCorrection{Reason: "no lens profile (the file names no lens)"}, "no lens profile (the file names no lens)"},
		{&LensCorrection{Reason: "corrected by the DNG's opcodes"}, "corrected by the DNG's opcodes"},
	} {
		if got := tc.l.Summary(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.l, got, tc.want)
		}
	}
}

// TestLensSkipsOpcodeCorrected: when the DNG's own opcodes corrected the
// lens (job.lensByOpcodes, set by the opcode stages), lensfun is not
// applied on top, and the result says why.
func TestLensSkipsOpcodeCorrected(t *testing.T) {
	img := []float32{0.1, 0.2, 0.3, 0.4, 0.5, 0.6}
	j := &job{settings: lensChartSettings(LensAuto), lensByOpcodes: true, colors: 3, camera: slices.Clone(img), img: Image{W: 2, H: 1}}
	if err := stageLens(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	if j.lens == nil || j.lens.Reason != "corrected by the DNG's opcodes" || j.lens.Profile != "" {
		t.Errorf("lens result %+v", j.lens)
	}
	if !slices.Equal(j.camera, img) {
		t.Errorf("the image changed: %v", j.camera)
	}
}
