package pipeline

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// TestEditCropGeometry: Camera Raw's corners of a turned crop give the
// unturned rectangle back. The numbers are those of a 3:2 photograph
// cropped to 0.4..0.9 × 0.3..0.8 and then turned by 10°, as Lightroom
// wrote them (crs:CropLeft 0.374965, CropTop 0.36916, CropRight 0.925035,
// CropBottom 0.73084, CropAngle −10): on a 1500×1000 image the rectangle
// is 750×500 pixels about (975, 550).
func TestEditCropGeometry(t *testing.T) {
	c := EditCrop{Left: 0.374965, Top: 0.36916, Right: 0.925035, Bottom: 0.73084, Angle: -10}
	g, ok := c.geometry(1500, 1000)
	if !ok {
		t.Fatal("no geometry")
	}
	if abs(g.ow-750) > 1 || abs(g.oh-500) > 1 || math.Abs(g.cx-975) > 0.1 || math.Abs(g.cy-550) > 0.1 {
		t.Errorf("crop %d×%d about (%.1f, %.1f), want 750×500 about (975, 550)", g.ow, g.oh, g.cx, g.cy)
	}
	// Unturned, on pixel edges: output pixel (0, 0) takes input pixel
	// (600, 300) exactly.
	c = EditCrop{Left: 0.4, Top: 0.3, Right: 0.9, Bottom: 0.8}
	g, _ = c.geometry(1500, 1000)
	if x, y := g.source(0, 0); g.ow != 750 || g.oh != 500 || math.Abs(x-600) > 1e-9 || math.Abs(y-300) > 1e-9 {
		t.Errorf("unturned: %d×%d, pixel (0,0) from (%g, %g); want 750×500 from (600, 300)", g.ow, g.oh, x, y)
	}
	// Turned by 90°: the corners of the upright rectangle's turned copy;
	// output pixel (0, 0) comes from the top-right of the rectangle.
	c = EditCrop{Left: 0.6, Top: 0.25, Right: 0.4, Bottom: 0.75, Angle: 90}
	g, ok = c.geometry(1000, 1000)
	if !ok || g.ow != 500 || g.oh != 200 {
		t.Fatalf("turned by 90°: %d×%d (%v), want 500×200", g.ow, g.oh, ok)
	}
	if x, y := g.source(0, 0); math.Abs(x-599) > 1e-6 || math.Abs(y-250) > 1e-6 {
		t.Errorf("turned by 90°: pixel (0,0) from (%g, %g), want (599, 250)", x, y)
	}
	if _, ok := (EditCrop{Left: 0.5, Right: 0.5, Bottom: 1}).geometry(100, 100); ok {
		t.Error("an empty crop has a geometry")
	}
}

func abs(v int) int { return max(v, -v) }

// editSettings are plain linear settings for measuring an Edit: no tone
// curve, no preview anchor, no noise reduction or sharpening, 16-bit PNG.
func editSettings() Settings {
	s := referenceSettings()
	s.Demosaic = "linear"
	s.ExposureAnchor = AnchorNone
	return s
}

// linearMean is the mean linear sRGB of the rectangle of a converted
// 16-bit sRGB output.
func linearMean(t *testing.T, path string, x0, y0, x1, y1 int) [3]float64 {
	t.Helper()
	m := patchMean(decodeImage(t, path), x0, y0, x1, y1)
	for i := range m {
		m[i] = colour.SRGBDecode(m[i] / 65535)
	}
	return m
}

// writeFlat writes a DNG of w×h whose every site has the camera RGB cam
// (fractions of the white level) under the default colour matrix.
func writeFlat(t *testing.T, path string, w, h int, cam [3]float64) {
	t.Helper()
	err := synthdng.WriteFile(path, synthdng.Spec{Width: w, Height: h, BlackLevel: 256, WhiteLevel: 16383,
		Scene: func(_, _, c int) float64 { return cam[c] }})
	if err != nil {
		t.Fatal(err)
	}
}

// TestEditExposure: the file's own exposure of +1 EV doubles the linear
// light of a mid grey (scene-referred, before the tone curve), and the
// output's size follows its own crop.
func TestEditExposure(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "grey.dng")
	w, h, scene := synthdng.ChartScene(synthdng.Chart{W: 64, H: 48, Background: [3]float64{0.18, 0.18, 0.18}}, 1, synthdng.DefaultColorMatrix, 1)
	if err := synthdng.WriteFile(in, synthdng.Spec{Width: w, Height: h, BlackLevel: 256, WhiteLevel: 16383, Scene: scene}); err != nil {
		t.Fatal(err)
	}
	s := editSettings()
	base, _ := convert(t, in, t.TempDir(), s)
	s.Edit = Edit{Exposure: 1, Crop: &EditCrop{Left: 0.25, Top: 0, Right: 0.75, Bottom: 0.5}}
	up, res := convert(t, in, t.TempDir(), s)
	if res.Width != 32 || res.Height != 24 {
		t.Errorf("cropped output %d×%d, want 32×24", res.Width, res.Height)
	}
	a, b := linearMean(t, base, 20, 14, 44, 34), linearMean(t, up, 6, 6, 26, 18)
	for i := range 3 {
		if r := b[i] / a[i]; math.Abs(r-2) > 0.02 {
			t.Errorf("channel %d: +1 EV gives %.4f / %.4f = %.3f× the linear light, want 2×", i, b[i], a[i], r)
		}
	}
	t.Logf("linear grey %.4f → %.4f at +1 EV", a[1], b[1])
}

// TestEditWhiteBalance: a grey lit by light of T kelvin and a tint comes
// out neutral with the file's own Temperature T and that Tint
// (KelvinMultipliers through the camera matrix); a higher Temperature
// makes it warmer (red over blue), a higher Tint more magenta (green
// under red and blue), as Camera Raw's sliders do.
func TestEditWhiteBalance(t *testing.T) {
	camXYZ := synthdng.QuantizeColorMatrix(synthdng.DefaultColorMatrix)
	for _, c := range []struct{ temp, tint float64 }{{3200, 0}, {5000, 20}, {7500, -15}} {
		xyz := tintedXYZ(c.temp, c.tint)
		var cam [3]float64
		for i := range 3 {
			for k := range 3 {
				cam[i] += camXYZ[i][k] * xyz[k]
			}
		}
		k := 0.3 / max(cam[0], cam[1], cam[2])
		for i := range cam {
			cam[i] *= k
		}
		dir := t.TempDir()
		in := filepath.Join(dir, "grey.dng")
		writeFlat(t, in, 32, 32, cam)
		s := editSettings()
		measure := func(temp, tint float64) [3]float64 {
			s.Edit = Edit{Temperature: temp, Tint: tint}
			out, res := convert(t, in, t.TempDir(), s)
			if res.WhiteBalance.Source != "sidecar" {
				t.Fatalf("white balance source %q, want sidecar", res.WhiteBalance.Source)
			}
			return linearMean(t, out, 8, 8, 24, 24)
		}
		n := measure(c.temp, c.tint)
		if r, b := n[0]/n[1], n[2]/n[1]; math.Abs(r-1) > 0.02 || math.Abs(b-1) > 0.02 {
			t.Errorf("%.0f K tint %+.0f: the grey lit by it is %.4f, %.4f, %.4f (R/G %.3f, B/G %.3f), want neutral", c.temp, c.tint, n[0], n[1], n[2], r, b)
		}
		warm := measure(c.temp*1.3, c.tint)
		if !(warm[0]/warm[2] > 1.1*n[0]/n[2]) {
			t.Errorf("%.0f K: a higher temperature gives R/B %.3f, not warmer than %.3f", c.temp, warm[0]/warm[2], n[0]/n[2])
		}
		mag := measure(c.temp, c.tint+30)
		if g := mag[1] / math.Sqrt(mag[0]*mag[2]); !(g < 0.95) {
			t.Errorf("%.0f K: a tint of +30 more gives G/√(RB) %.3f, not more magenta", c.temp, g)
		}
		t.Logf("%.0f K %+.0f: neutral %.4f %.4f %.4f; ×1.3 K: R/B %.3f; tint +30: G/√(RB) %.3f", c.temp, c.tint, n[0], n[1], n[2], warm[0]/warm[2], mag[1]/math.Sqrt(mag[0]*mag[2]))
	}
}

// TestEditOrientation: the file's own orientation replaces the raw's; 6
// turns the stored image 90° clockwise to show.
func TestEditOrientation(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "chart.dng")
	c := synthdng.Chart{W: 48, H: 32, Background: [3]float64{0.18, 0.18, 0.18},
		Patches: []synthdng.Patch{{X0: 0, Y0: 0, X1: 8, Y1: 8, SRGBLinear: [3]float64{0.6, 0.05, 0.05}}}}
	w, h, scene := synthdng.ChartScene(c, 1, synthdng.DefaultColorMatrix, 1)
	if err := synthdng.WriteFile(in, synthdng.Spec{Width: w, Height: h, BlackLevel: 256, WhiteLevel: 16383, Scene: scene}); err != nil {
		t.Fatal(err)
	}
	s := editSettings()
	s.Edit = Edit{Orientation: 6}
	out, res := convert(t, in, dir, s)
	if res.Width != 32 || res.Height != 48 {
		t.Fatalf("turned output %d×%d, want 32×48", res.Width, res.Height)
	}
	if red := linearMean(t, out, 26, 1, 31, 6); !(red[0] > 4*red[1]) {
		t.Errorf("the red patch is not at the top right: %.3f %.3f %.3f", red[0], red[1], red[2])
	}
}

// TestEditHash: an Edit changes DevelopHash and the stage cache key only
// as it changes the pictures; the zero Edit hashes as nothing.
func TestEditHash(t *testing.T) {
	s := DefaultSettings()
	base, key := DevelopHash(s), CacheKey("x", s)
	s.Edit = Edit{Exposure: 0.5, Crop: &EditCrop{Right: 1, Bottom: 0.5}}
	if DevelopHash(s) == base {
		t.Error("an exposure and a crop do not change DevelopHash")
	}
	if CacheKey("x", s) != key {
		t.Error("an exposure and a crop change the stage cache key (they come after its point)")
	}
	s.Edit = Edit{Temperature: 5000}
	if CacheKey("x", s) == key || DevelopHash(s) == base {
		t.Error("a white balance changes neither the stage cache key nor DevelopHash")
	}
	s.Edit = Edit{}
	if DevelopHash(s) != base || s.Edit.Key() != "" {
		t.Error("the zero Edit changes the hash")
	}
	// The edit-crop stage is in the hash's stage list only when it runs:
	// records made before it existed stay valid.
	if v := developVersionFor(s); strings.Contains(v, editCropStage.Name) {
		t.Errorf("without a crop the hashed stage list names %s: %s", editCropStage.Name, v)
	}
	s.Edit.Crop = &EditCrop{Right: 1, Bottom: 0.5}
	if v := developVersionFor(s); !strings.Contains(v, editCropStage.Name+".0 camera-matrix") {
		t.Errorf("with a crop the hashed stage list does not name %s before camera-matrix: %s", editCropStage.Name, v)
	}
}

// TestEditWhiteBalanceD65: an independent check of the kelvin and tint
// scale. synthdng lights its grey by D65 (the DNG colour model), whose
// chromaticity is 6504 K and Duv +0.0032 off the Planckian locus (CIE
// 15:2004), so tint 3000 × 0.0032 ≈ +9.6: that white balance leaves the
// grey nearest neutral, and moving either way from it tints it.
func TestEditWhiteBalanceD65(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "d65.dng")
	w, h, scene := synthdng.ChartScene(synthdng.Chart{W: 32, H: 32, Background: [3]float64{0.18, 0.18, 0.18}}, 1, synthdng.DefaultColorMatrix, 1)
	if err := synthdng.WriteFile(in, synthdng.Spec{Width: w, Height: h, BlackLevel: 256, WhiteLevel: 16383, Scene: scene}); err != nil {
		t.Fatal(err)
	}
	s := editSettings()
	off := func(temp, tint float64) float64 {
		s.Edit = Edit{Temperature: temp, Tint: tint}
		out, _ := convert(t, in, t.TempDir(), s)
		m := linearMean(t, out, 8, 8, 24, 24)
		return math.Hypot(math.Log(m[0]/m[1]), math.Log(m[2]/m[1]))
	}
	d65 := off(6504, 9.6)
	if d65 > 0.01 {
		t.Errorf("6504 K tint +9.6: the D65 grey is %.4f off neutral (log ratios), want < 0.01", d65)
	}
	for _, c := range [][2]float64{{6504, -10}, {6504, 30}, {5500, 9.6}, {7500, 9.6}} {
		if o := off(c[0], c[1]); !(o > d65+0.01) {
			t.Errorf("%.0f K tint %+.1f: %.4f off neutral, not further than D65's %.4f", c[0], c[1], o, d65)
		}
	}
	t.Logf("D65 grey at 6504 K +9.6: %.4f off neutral", d65)
}

// TestEditCropNoHalfSizeTier: a file with its own crop is decoded whole
// by the half-size tier's rule (its variants are sized from the cut
// picture).
func TestEditCropNoHalfSizeTier(t *testing.T) {
	s := DefaultSettings()
	s.HalfSizeTier = "auto"
	fi := FileInfo{Width: 6000, Height: 4000}
	vs := []Variant{{Name: "thumb", Format: "jpeg", Size: 512}}
	if !halfSizeTier(fi, s, vs) {
		t.Fatal("a 512 px variant of a 6000×4000 picture is not half-size")
	}
	s.Edit.Crop = &EditCrop{Left: 0.45, Top: 0.45, Right: 0.55, Bottom: 0.55}
	if halfSizeTier(fi, s, vs) {
		t.Error("a file with its own crop is decoded at half size")
	}
}

// TestEditWhiteBalanceAsShotDNG: the 6D DNG carries its white balance in
// AnalogBalance (2.16 1 1.41) with AsShotNeutral ≈ 1 1 1, and Camera Raw
// reads that as 6200 K, tint −1 (its own XMP crs:Temperature and Tint).
// A sidecar of those values gives multipliers within 2 % of the as-shot
// ones and a picture of the as-shot colours: the Temperature/Tint model
// maps XYZ to raw camera values through AnalogBalance · CameraCalibration
// · ColorMatrix, as LibRaw's as-shot multipliers (1/AsShotNeutral) and
// rgb_cam do (cameraXYZ).
func TestEditWhiteBalanceAsShotDNG(t *testing.T) {
	in := filepath.Join(testdata, "raw", "canon_eos_6d.dng")
	info, _, _, err := libraw.Identify(in)
	if err != nil {
		t.Fatal(err)
	}
	asShot := [3]float64{info.CamMul[0] / info.CamMul[1], 1, info.CamMul[2] / info.CamMul[1]}
	m, ok := KelvinMultipliers(cameraXYZ(info), 6200, -1)
	if !ok {
		t.Fatal("no multipliers for 6200 K, tint -1")
	}
	for _, c := range []int{0, 2} {
		if r := m[c] / asShot[c]; math.Abs(r-1) > 0.02 {
			t.Errorf("6200 K tint -1: multipliers %.4f, as shot %.4f (channel %d off by %.1f %%)", m, asShot, c, 100*(r-1))
		}
	}
	s := editSettings()
	s.HalfSize = true
	mean := func(e Edit) ([3]float64, Result) {
		s.Edit = e
		outs, res := convertOpts(t, in, t.TempDir(), "o", s, ConvertOptions{}, "r=png16,size=120")
		img := decodeImage(t, outs[0])
		b := img.Bounds()
		p := patchMean(img, b.Min.X, b.Min.Y, b.Max.X, b.Max.Y)
		for i := range p {
			p[i] = colour.SRGBDecode(p[i] / 65535)
		}
		return p, res
	}
	ref, _ := mean(Edit{})
	got, res := mean(Edit{Temperature: 6200, Tint: -1})
	if res.WhiteBalance.Source != "sidecar" {
		t.Fatalf("white balance source %q, want sidecar", res.WhiteBalance.Source)
	}
	for _, c := range []int{0, 2} {
		if r := (got[c] / got[1]) / (ref[c] / ref[1]); math.Abs(r-1) > 0.03 {
			t.Errorf("6200 K tint -1: mean linear sRGB %.4f, as shot %.4f (channel %d/G off by %.1f %%)", got, ref, c, 100*(r-1))
		}
	}
	// Tungsten light assumed on a daylight picture: bluer than as shot,
	// R/G down and B/G up (not purple: both up).
	cool, _ := mean(Edit{Temperature: 3200, Tint: 10})
	rg, bg := (cool[0]/cool[1])/(ref[0]/ref[1]), (cool[2]/cool[1])/(ref[2]/ref[1])
	if !(rg < 1 && bg > 1.5) {
		t.Errorf("3200 K tint +10: R/G %.2f×, B/G %.2f× the as-shot picture's, want R/G down, B/G over 1.5× (bluer)", rg, bg)
	}
	t.Logf("as shot %.4f, 6200 K tint -1 %.4f; mean as shot %.4f, sidecar %.4f; 3200 K +10: R/G %.2f×, B/G %.2f×", asShot, m, ref, got, rg, bg)
}

// TestEditWhiteBalanceAnalogBalance: a DNG whose stored values carry an
// AnalogBalance (XYZ → stored camera values = AnalogBalance ·
// ColorMatrix1), of a camera LibRaw knows (so that its own cam_xyz for the
// model is set, without the file's AnalogBalance): a grey lit by a light
// of T kelvin and a tint comes out neutral with that Temperature and Tint.
func TestEditWhiteBalanceAnalogBalance(t *testing.T) {
	ab := [3]float64{2.158672, 1, 1.414752}
	camXYZ := synthdng.QuantizeColorMatrix(synthdng.DefaultColorMatrix)
	for _, c := range []struct{ temp, tint float64 }{{3200, 10}, {6200, -1}} {
		xyz := tintedXYZ(c.temp, c.tint)
		var cam [3]float64
		for i := range 3 {
			for k := range 3 {
				cam[i] += camXYZ[i][k] * xyz[k]
			}
			cam[i] *= ab[i]
		}
		k := 0.3 / max(cam[0], cam[1], cam[2])
		for i := range cam {
			cam[i] *= k
		}
		in := filepath.Join(t.TempDir(), "grey.dng")
		err := synthdng.WriteFile(in, synthdng.Spec{Width: 32, Height: 32, BlackLevel: 256, WhiteLevel: 16383,
			Make: "Canon", Model: "Canon EOS 6D", AnalogBalance: ab,
			Scene: func(_, _, c int) float64 { return cam[c] }})
		if err != nil {
			t.Fatal(err)
		}
		s := editSettings()
		s.Edit = Edit{Temperature: c.temp, Tint: c.tint}
		out, res := convert(t, in, t.TempDir(), s)
		if res.WhiteBalance.Source != "sidecar" {
			t.Fatalf("white balance source %q, want sidecar", res.WhiteBalance.Source)
		}
		n := linearMean(t, out, 8, 8, 24, 24)
		if r, b := n[0]/n[1], n[2]/n[1]; math.Abs(r-1) > 0.02 || math.Abs(b-1) > 0.02 {
			t.Errorf("%.0f K tint %+.0f: the grey lit by it is %.4f, %.4f, %.4f (R/G %.3f, B/G %.3f; multipliers %.4f), want neutral",
				c.temp, c.tint, n[0], n[1], n[2], r, b, res.WhiteBalance.Multipliers)
		}
		t.Logf("%.0f K %+.0f: %.4f %.4f %.4f, multipliers %.4f", c.temp, c.tint, n[0], n[1], n[2], res.WhiteBalance.Multipliers)
	}
}

// TestEditWhiteBalanceAnchor: the preview anchor measures the exposure
// with the as-shot white balance, so a sidecar's Temperature and Tint
// change the colours, not the brightness. LibRaw (highlight mode 0)
// divides the multipliers by their smallest, which brightens green by
// 1/min(multipliers); the anchor takes that back, so EV −
// log2(min(multipliers)) is the same as the as-shot conversion's, plus
// the sidecar's own exposure.
func TestEditWhiteBalanceAnchor(t *testing.T) {
	in := filepath.Join(testdata, "raw", "canon_eos_6d.dng")
	level := func(e Edit) float64 {
		s := DefaultSettings()
		s.Edit = e
		_, res := convertOpts(t, in, t.TempDir(), "o", s, ConvertOptions{}, "r=png8,size=300")
		m := res.WhiteBalance.Multipliers
		t.Logf("%+v: multipliers %.3f, EV %+.3f (%s)", e, m, res.Exposure.EV, res.Exposure.Source)
		return res.Exposure.EV - math.Log2(min(m[0], m[1], m[2]))
	}
	ref := level(Edit{})
	for _, e := range []Edit{{Temperature: 3200, Tint: 10, Exposure: 1}, {Temperature: 9000, Tint: -20}} {
		if d := level(e) - ref - e.Exposure; math.Abs(d) > 0.15 {
			t.Errorf("%.0f K tint %+.0f, exposure %+.1f: green %+.2f EV off the as-shot conversion's plus the sidecar's exposure", e.Temperature, e.Tint, e.Exposure, d)
		}
	}
}
