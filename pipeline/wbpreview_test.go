package pipeline

import (
	"context"
	"encoding/binary"
	"image"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/cache"
	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// previewWarmth is how much warmer than neutral the synthetic camera's
// preview shows a grey: R × 1.15, B ÷ 1.15 in linear light.
const previewWarmth = 1.15

// writeTungstenDNG writes a 320×240 DNG of grey patches (and a few colours)
// under a tungsten-like light (camera R × 1.35, B × 0.6 against daylight),
// with no AsShotNeutral (the tag renamed away, as a camera on auto white
// balance that stored none), and, with preview, an embedded preview
// rendered with the white balance the camera chose: a grey comes out
// previewWarmth warmer than neutral in it.
func writeTungstenDNG(t *testing.T, path string, preview bool) {
	t.Helper()
	c := synthdng.Chart{W: 320, H: 240, Background: [3]float64{0.18, 0.18, 0.18}}
	for i, v := range []float64{0.06, 0.1, 0.14, 0.25, 0.32, 0.4} {
		x0 := 10 + i*50
		c.Patches = append(c.Patches, synthdng.Patch{X0: x0, Y0: 20, X1: x0 + 40, Y1: 90, SRGBLinear: [3]float64{v, v, v}})
	}
	for i, col := range [][3]float64{{0.3, 0.1, 0.08}, {0.1, 0.25, 0.1}, {0.08, 0.1, 0.3}, {0.3, 0.28, 0.08}} {
		x0 := 10 + i*75
		c.Patches = append(c.Patches, synthdng.Patch{X0: x0, Y0: 150, X1: x0 + 60, Y1: 220, SRGBLinear: col})
	}
	light := [3]float64{1.35, 1, 0.6}
	w, h, scene := synthdng.ChartScene(c, 1, synthdng.DefaultColorMatrix, 0.8)
	tungsten := func(x, y, ch int) float64 { return scene(x, y, ch) * light[ch] }
	n := synthdng.NeutralFor(synthdng.DefaultColorMatrix)
	neutral := [3]float64{n[0] * light[0] / previewWarmth, n[1] * light[1], n[2] * light[2] * previewWarmth}
	top := max(neutral[0], neutral[1], neutral[2])
	for i := range neutral {
		neutral[i] /= top
	}
	if err := synthdng.WriteFile(path, synthdng.Spec{Width: w, Height: h, BlackLevel: 256, WhiteLevel: 16383, Orientation: 1,
		Scene: tungsten, AsShotNeutral: neutral, ThumbnailIFD0: preview}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bo := binary.LittleEndian
	ifd0 := int(bo.Uint32(b[4:]))
	found := false
	for i := range int(bo.Uint16(b[ifd0:])) {
		if e := b[ifd0+2+12*i:]; bo.Uint16(e) == 50728 {
			bo.PutUint16(e, 65000)
			found = true
		}
	}
	if !found {
		t.Fatal("no AsShotNeutral in IFD0")
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// greyRB returns R/B in linear light of the mean of the 0.18 background
// between the two rows of patches (x 20..300, y 110..130 of the output).
func greyRB(t *testing.T, path string) float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	var s [3]float64
	n := 0
	for y := 110; y < 130; y++ {
		for x := 20; x < 300; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			for c, v := range []uint32{r, g, b} {
				s[c] += colour.SRGB.Decode(float64(v) / 65535)
			}
			n++
		}
	}
	return s[0] / s[2]
}

// TestWBFittedToPreview: --wb camera on a file with no as-shot white
// balance and a warm embedded preview fits the gains to the preview:
// the grey comes out warm by about the preview's amount, and Result.WhiteBalance and the warning say it came from the
// preview. Without the preview the auto white balance runs and still
// converts warmer than grey world (--wb auto).
func TestWBFittedToPreview(t *testing.T) {
	dir := t.TempDir()
	convertRB := func(name string, preview bool, wb string) (float64, Result) {
		in := filepath.Join(dir, name+".dng")
		writeTungstenDNG(t, in, preview)
		s := DefaultSettings()
		s.Format = PNG16
		s.WhiteBalance = WhiteBalance{Mode: wb}
		out := filepath.Join(dir, name+"-"+wb+".png")
		res, err := ConvertFile(context.Background(), in, out, s)
		if err != nil {
			t.Fatal(err)
		}
		return greyRB(t, out), res
	}
	want := previewWarmth * previewWarmth
	rb, res := convertRB("preview", true, "camera")
	t.Logf("with preview: grey R/B %.3f (the preview's %.3f); %+v", rb, want, res.WhiteBalance)
	if res.WhiteBalance == nil || res.WhiteBalance.Source != "preview" {
		t.Fatalf("white balance %+v, want from the preview", res.WhiteBalance)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "white balance fitted to the embedded preview") {
		t.Errorf("warnings %q do not say the white balance came from the preview", res.Warnings)
	}
	if math.Abs(math.Log(rb/want)) > 0.05 {
		t.Errorf("grey R/B %.3f, want the preview's %.3f within 5 %%", rb, want)
	}
	rbAuto, res := convertRB("nopreview", false, "camera")
	rbGrey, _ := convertRB("nopreview", false, "auto")
	t.Logf("without preview: grey R/B %.3f, grey world's %.3f; %+v", rbAuto, rbGrey, res.WhiteBalance)
	if res.WhiteBalance == nil || res.WhiteBalance.Source != "auto" || !strings.Contains(string(res.WhiteBalance.Reason), "no embedded preview") {
		t.Errorf("white balance %+v, want auto, saying there is no preview", res.WhiteBalance)
	}
	if !(rbAuto > rbGrey*1.05) {
		t.Errorf("auto white balance grey R/B %.3f, not warmer than grey world's %.3f", rbAuto, rbGrey)
	}
}

// TestCanonD30WhiteBalance: the Canon D30 CRW, shot on auto white balance
// (no as-shot multipliers: cam_mul[0] = -1), gets multipliers near the
// camera's own Tungsten preset (its JPEG is close to it), nearer
// than LibRaw's grey world (R/G 0.82, B/G 2.24), in log R/G, log B/G.
func TestCanonD30WhiteBalance(t *testing.T) {
	in := filepath.Join("..", "testdata", "raw", "canond30_CRW.CRW")
	res, err := ConvertFile(context.Background(), in, filepath.Join(t.TempDir(), "d30.jpg"), DefaultSettings())
	if err != nil {
		t.Fatal(err)
	}
	wb := res.WhiteBalance
	if wb == nil {
		t.Fatal("no white balance in the result")
	}
	t.Logf("D30: %+v; warnings %q", *wb, res.Warnings)
	const tungstenRG, tungstenBG = 1.20, 1.93 // the maker notes' Tungsten preset
	dist := func(rg, bg float64) float64 {
		return math.Hypot(math.Log(rg/tungstenRG), math.Log(bg/tungstenBG))
	}
	if wb.Source == "as shot" || !strings.Contains(string(wb.Reason), "cam_mul[0] = -1") {
		t.Errorf("source %q, reason %q: want a fallback because the file has no multipliers", wb.Source, wb.Reason)
	}
	ours, grey := dist(wb.Multipliers[0], wb.Multipliers[2]), dist(0.82, 2.24)
	t.Logf("log distance to the Tungsten preset: ours %.3f, grey world %.3f", ours, grey)
	if !(ours < grey/2) {
		t.Errorf("multipliers R/G %.2f B/G %.2f: log distance %.3f to the Tungsten preset, want under half of grey world's %.3f",
			wb.Multipliers[0], wb.Multipliers[2], ours, grey)
	}
}

// TestWhiteBalanceFromCache: a decoded image read from the stage cache was
// white balanced and had its highlights done when it was stored: the
// result reports the white balance stored with the entry, source and
// multipliers as the decode chose them ("as shot" for the 6D, "preview"
// for the D30, "grey world" with --wb auto) and a reason saying it came
// from the cache; every hit gives the same output as the decode.
func TestWhiteBalanceFromCache(t *testing.T) {
	dir := t.TempDir()
	c, err := cache.Open(filepath.Join(dir, "cache"), 0)
	if err != nil {
		t.Fatal(err)
	}
	opts := &CacheOptions{Cache: c, Keep: true}
	s := DefaultSettings()
	s.HalfSize = true // quicker; the same stages run
	auto := s
	auto.WhiteBalance = WhiteBalance{Mode: "auto"}
	for _, tc := range []struct {
		file, want string
		s          Settings
	}{{"canon_eos_6d.dng", "as shot", s}, {"canond30_CRW.CRW", "preview", s}, {"canond30_CRW.CRW", "grey world", auto}} {
		file, want, s := tc.file, tc.want, tc.s
		in := filepath.Join(testdata, "raw", file)
		out := func(name string) []OutputSpec {
			return []OutputSpec{{Variant: Variant{Name: "main", Format: "png16", Space: "srgb"}, Path: filepath.Join(dir, file+want+name)}}
		}
		r1, err := ConvertVariants(context.Background(), in, out("a.png"), s, opts)
		if err != nil || r1.FromCache {
			t.Fatalf("%s: first: cached %v, %v", file, r1.FromCache, err)
		}
		r2, err := ConvertVariants(context.Background(), in, out("b.png"), s, opts)
		if err != nil || !r2.FromCache {
			t.Fatalf("%s: second: cached %v, %v", file, r2.FromCache, err)
		}
		if r2.WhiteBalance == nil || r2.WhiteBalance.Source != want {
			t.Fatalf("%s from the cache: white balance %+v, want %s", file, r2.WhiteBalance, want)
		}
		if r2.WhiteBalance.Multipliers != r1.WhiteBalance.Multipliers || r2.WhiteBalance.Multipliers[1] != 1 {
			t.Errorf("%s from the cache: multipliers %v, the decode chose %v", file, r2.WhiteBalance.Multipliers, r1.WhiteBalance.Multipliers)
		}
		if !strings.HasSuffix(string(r2.WhiteBalance.Reason), "from the stage cache (chosen when the decoded image was stored)") {
			t.Errorf("%s from the cache: reason %q does not say so", file, r2.WhiteBalance.Reason)
		}
		if m, _ := deltaEStats(t, decodeImage(t, filepath.Join(dir, file+want+"a.png")), decodeImage(t, filepath.Join(dir, file+want+"b.png")), 0); m > 0.01 {
			t.Errorf("%s: the cached conversion differs from the decode by mean ΔE2000 %.3f", file, m)
		}
	}
}
