package pipeline

import (
	"context"
	"fmt"
	"image"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/internal/testtool"
	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/encode"
	"github.com/rawbatch/rawbatch/pipeline/look"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// decodeWholeFrame decodes an AVIF output with Debian's avifdec or a JPEG
// XL one with djxl to a 16-bit PNG and reads it.
func decodeWholeFrame(t *testing.T, path string) image.Image {
	t.Helper()
	png := strings.TrimSuffix(path, filepath.Ext(path)) + ".decoded.png"
	var cmd *exec.Cmd
	if filepath.Ext(path) == ".avif" {
		cmd = exec.Command(testtool.Need(t, "avifdec"), "--depth", "16", path, png)
	} else {
		cmd = exec.Command(testtool.Need(t, "djxl"), path, png)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	return decodeImage(t, png)
}

// bigChart is testChart at 4 times the size (384×256), so that the
// patches' edges, where lossy codecs differ most, are a small part of it.
func bigChart() synthdng.Chart {
	c := testChart()
	c.W, c.H = 4*c.W, 4*c.H
	for i, p := range c.Patches {
		p.X0, p.Y0, p.X1, p.Y1 = 4*p.X0, 4*p.Y0, 4*p.X1, 4*p.Y1
		c.Patches[i] = p
	}
	return c
}

// AVIF and JPEG XL variants (each depth, lossy and lossless) of a chart
// DNG shot turned (orientation 6) decode with Debian's avifdec and djxl
// at the JPEG variant's size (the chart's displayed size: upright), and the SDR ones match its pixels
// (the same rendition, quantised to their depth: mean ΔE2000 ≤ 1.5); the
// lossless 16-bit JPEG XL holds exactly the 16-bit TIFF variant's samples.
func TestWholeFrameRoundTrip(t *testing.T) {
	dir := t.TempDir()
	chart := bigChart()
	in := writeChart(t, dir, chart, 6, 0)
	var outs []OutputSpec
	add := func(spec string) {
		v, err := ParseVariant(spec)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, OutputSpec{Variant: v, Path: filepath.Join(dir, "c"+v.Suffix())})
	}
	add("main=jpeg")
	add("t16=tiff16")
	for _, s := range []string{"a8=avif", "a10=avif,depth=10,subsampling=420", "a12=avif,depth=12,quality=95,speed=8",
		"x8=jxl", "x16=jxl,depth=16,quality=95", "xl=jxl,depth=16,lossless=true,effort=3"} {
		add(s)
	}
	s := DefaultSettings()
	s.Lens = LensOff
	if _, err := ConvertVariants(context.Background(), in, outs, s, nil); err != nil {
		t.Fatal(err)
	}
	ref, ref16 := decodeImage(t, outs[0].Path), decodeImage(t, outs[1].Path)
	if ref.Bounds() != image.Rect(0, 0, chart.W, chart.H) {
		t.Fatalf("JPEG variant %v: want the chart's displayed %d×%d", ref.Bounds(), chart.W, chart.H)
	}
	for _, o := range outs[2:] {
		img := decodeWholeFrame(t, o.Path)
		if img.Bounds().Size() != ref.Bounds().Size() {
			t.Errorf("%s: decoded %v, the JPEG is %v", o.Variant.Name, img.Bounds().Size(), ref.Bounds().Size())
			continue
		}
		mean, p99 := deltaEStats(t, ref, img, 2)
		t.Logf("%s: mean ΔE2000 %.2f, p99 %.2f against the JPEG", o.Variant.Name, mean, p99)
		if mean > 1.5 {
			t.Errorf("%s: mean ΔE2000 %.2f against the JPEG variant, want ≤ 1.5", o.Variant.Name, mean)
		}
		if o.Variant.Lossless {
			if d := maxDiff16(ref16, img); d != 0 {
				t.Errorf("%s: lossless, but differs from the TIFF16 variant by up to %d (of 65535)", o.Variant.Name, d)
			}
		}
	}
}

// wholeFrameSettings are conversions to AVIF, JPEG XL and Ultra HDR: the
// default AVIF (8-bit 4:4:4) and a 10-bit 4:2:0 one, the default JPEG XL
// (8-bit lossy) and a 16-bit lossless one, the default uhdr.
func wholeFrameSettings() []Settings {
	var out []Settings
	for _, spec := range []string{"main=avif", "main=avif,depth=10,subsampling=420", "main=jxl", "main=jxl,depth=16,lossless=true", "main=uhdr"} {
		v, err := ParseVariant(spec)
		if err != nil {
			panic(err)
		}
		s := DefaultSettings()
		s.Format = Format(v.Format)
		s.Variants = []Variant{v}
		out = append(out, s)
	}
	return out
}

// TestEstimateCalibrationWholeFrame: the measured peak memory of an AVIF,
// JPEG XL or Ultra HDR conversion (whole-frame encoders: libavif with
// aom, libjxl; libjpeg-turbo for the base and gain map, held whole)
// lies within 0.8–1.25× of the estimate, for the sample 6D DNG and a
// 2.7 MP synthetic one at ISO 6400 (its noise gives the encoders texture
// to code, as a photograph does; a flat chart takes aom far less), and
// such a file is not estimated streamed.
func TestEstimateCalibrationWholeFrame(t *testing.T) {
	if testing.Short() {
		t.Skip("measures conversions in child processes")
	}
	files := []string{filepath.Join(testdata, "raw", "canon_eos_6d.dng"), writeSyntheticISO(t, t.TempDir(), 2000, 1336, 6400)}
	for _, f := range files {
		fi, err := ReadInfo(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range wholeFrameSettings() {
			if m := EstimateMemory(fi, s, 1); m.Streamed {
				t.Errorf("%s %s: estimated streamed", f, s.Variants[0].Format)
			}
		}
	}
	// Every format on the sample; on the larger synthetic, one of each
	// encoder (the 16-bit lossless JPEG XL and the 10-bit AVIF of 2.7 MP
	// took a quarter of the package's test time).
	all := wholeFrameSettings()
	calibrate(t, os.Stdout, files[:1], all)
	calibrate(t, os.Stdout, files[1:], []Settings{all[0], all[2], all[4]})
}

// TestWholeFramePlan: AVIF and JPEG XL variants are planned on the
// whole-image path (a single one never streams; with a JPEG they do not
// make the file's plan stream), and the text form shows their encoder's
// working memory.
func TestWholeFramePlan(t *testing.T) {
	for _, spec := range []string{"main=avif", "main=jxl,lossless=true"} {
		p := PlanVariants(6000, 4000, variants(t, spec), DefaultSettings())
		for _, st := range p.Steps {
			if st.Stream {
				t.Errorf("%s: step %s marked streamed", spec, st.Name)
			}
		}
		v, _ := ParseVariant(spec)
		want := fmt.Sprintf("encoder %.0f MiB", float64(encoderBytes(v, 6000, 4000))/(1<<20))
		if s := p.String(); !strings.Contains(s, want) || encoderBytes(v, 6000, 4000) < 300<<20 {
			t.Errorf("%s: text form lacks %q (or the cost is too small for 24 MP):\n%s", spec, want, s)
		}
	}
	p := PlanVariants(6000, 4000, variants(t, "main=jpeg", "a=avif"), DefaultSettings())
	for _, st := range p.Steps {
		if st.Stream {
			t.Errorf("jpeg and avif: step %s marked streamed", st.Name)
		}
	}
}

// TestWholeFrameDownscaledStreamed: downscaled AVIF and JPEG XL variants
// beside a full-size JPEG of a file that streams are made from the
// streamed rows (their downscaler fed the bands) and still written whole:
// they decode at their size and match a JPEG of that size.
func TestWholeFrameDownscaledStreamed(t *testing.T) {
	dir := t.TempDir()
	in := writeChart(t, dir, bigChart(), 1, 0)
	var outs []OutputSpec
	for _, spec := range []string{"main=jpeg", "sj=jpeg,size=200", "sa=avif,size=200", "sx=jxl,size=200"} {
		v, err := ParseVariant(spec)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, OutputSpec{Variant: v, Path: filepath.Join(dir, "c"+v.Suffix())})
	}
	s := DefaultSettings()
	s.Lens = LensOff
	res, err := ConvertVariants(context.Background(), in, outs, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Streamed {
		t.Fatal("not streamed: the test needs a streamed conversion")
	}
	ref := decodeImage(t, outs[1].Path)
	for _, o := range outs[2:] {
		img := decodeWholeFrame(t, o.Path)
		if img.Bounds().Size() != ref.Bounds().Size() {
			t.Fatalf("%s: %v, want %v", o.Variant.Name, img.Bounds().Size(), ref.Bounds().Size())
		}
		if mean, _ := deltaEStats(t, ref, img, 2); mean > 1.5 {
			t.Errorf("%s: mean ΔE2000 %.2f against the JPEG of its size", o.Variant.Name, mean)
		}
	}
}

// TestWholeFrameVariantOptions: the AVIF and JPEG XL options parse, fill
// in their defaults, refuse what the format does not take, and each
// changes the output's hash (equivalent specs hash alike).
func TestWholeFrameVariantOptions(t *testing.T) {
	parse := func(s string) Variant {
		t.Helper()
		v, err := ParseVariant(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		return v
	}
	a := parse("a=avif")
	if a.Depth != 8 || a.Speed != 6 || a.Subsampling != "444" || a.Quality != DefaultQuality || a.HDR != "" {
		t.Errorf("avif defaults %+v", a)
	}
	h := parse("h=avif,hdr=pq")
	if h.Depth != 10 || h.Space != "rec2020" {
		t.Errorf("avif hdr defaults %+v", h)
	}
	x := parse("x=jxl,lossless=true,quality=50")
	if x.Depth != 8 || x.Effort != 7 || x.Quality != 0 {
		t.Errorf("lossless jxl %+v", x)
	}
	if hx := parse("h=jxl,hdr=hlg"); hx.Depth != 16 {
		t.Errorf("jxl hdr depth %d", hx.Depth)
	}
	for _, bad := range []string{"a=avif,depth=16", "a=avif,depth=8,hdr=pq", "a=avif,speed=11", "a=avif,effort=3", "a=avif,lossless=true",
		"x=jxl,depth=10", "x=jxl,speed=3", "x=jxl,effort=10", "x=jxl,depth=8,hdr=hlg", "x=jxl,subsampling=420",
		"a=avif,hdr=hdr10", "a=avif,hdr=pq,space=srgb", "j=jpeg,depth=10", "w=webp,hdr=pq", "t=tiff16,lossless=true"} {
		if _, err := ParseVariant(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	const dev = "xxh3:0000000000000000"
	same := [][2]string{{"a=avif", "a=avif,depth=8,speed=6,subsampling=444,quality=90"}, {"x=jxl", "x=jxl,depth=8,effort=7"},
		{"x=jxl,lossless=true", "x=jxl,lossless=true,quality=40"}, {"h=avif,hdr=pq", "h=avif,hdr=pq,depth=10,space=rec2020"}}
	for _, p := range same {
		if OutputHash(dev, parse(p[0])) != OutputHash(dev, parse(p[1])) {
			t.Errorf("%s and %s hash differently", p[0], p[1])
		}
	}
	seen := map[string]string{}
	for _, s := range []string{"a=avif", "a=avif,depth=10", "a=avif,depth=12", "a=avif,speed=0", "a=avif,speed=9", "a=avif,subsampling=420",
		"a=avif,quality=80", "a=avif,hdr=pq", "a=avif,hdr=hlg", "a=jxl", "a=jxl,depth=16", "a=jxl,effort=3", "a=jxl,lossless=true",
		"a=jxl,quality=80", "a=jxl,hdr=pq", "a=jxl,hdr=hlg", "a=jpeg", "a=avif,space=displayp3"} {
		hv := OutputHash(dev, parse(s))
		if other, ok := seen[hv]; ok {
			t.Errorf("%s and %s hash alike", s, other)
		}
		seen[hv] = s
	}
}

// TestWholeFrameChromium: headless Chromium (Debian's chromium) decodes
// the AVIF variant of a chart in a page: the script sees its natural size,
// and the screenshot holds a non-blank image of that size on the page's
// magenta background, whose colours are the JPEG variant's (mean ΔE2000
// ≤ 3, Chromium's own YUV conversion and colour management included).
func TestWholeFrameChromium(t *testing.T) {
	dir := t.TempDir()
	in := writeChart(t, dir, bigChart(), 6, 0)
	var outs []OutputSpec
	for _, spec := range []string{"main=jpeg,size=240", "a=avif,size=240"} {
		v, err := ParseVariant(spec)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, OutputSpec{Variant: v, Path: filepath.Join(dir, "c"+v.Suffix())})
	}
	s := DefaultSettings()
	s.Lens = LensOff
	if _, err := ConvertVariants(context.Background(), in, outs, s, nil); err != nil {
		t.Fatal(err)
	}
	chromiumShows(t, outs[0].Path, outs[1].Path)
}

// chromiumShows checks that headless Chromium decodes the image file
// path in a page at the size of the JPEG ref, its screenshot a non-blank
// image of that size on the page's magenta background whose colours are
// ref's (mean ΔE2000 ≤ 3).
func chromiumShows(t *testing.T, ref, path string) {
	t.Helper()
	dir, name := filepath.Split(path)
	refImg := decodeImage(t, ref)
	w, h := refImg.Bounds().Dx(), refImg.Bounds().Dy()
	page := filepath.Join(dir, "page.html")
	html := `<!doctype html><html><body style="margin:0;background:#ff00ff">` +
		`<img id="i" src="` + name + `" style="display:block">` +
		`<p id="n"></p><script>const i=document.getElementById("i");` +
		`i.onload=()=>{document.getElementById("n").textContent="size "+i.naturalWidth+"x"+i.naturalHeight};` +
		`i.onerror=()=>{document.getElementById("n").textContent="error"};</script></body></html>`
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	url := "file://" + page
	// A page whose image has neither loaded nor failed when the DOM is
	// dumped (decoding is not held to the virtual-time budget, and a
	// loaded machine can outlast it) is loaded again, at most three times.
	dom := testtool.DumpDOM(t, url)
	for try := 1; try < 3 && !strings.Contains(dom, "size ") && !strings.Contains(dom, "error"); try++ {
		dom = testtool.DumpDOM(t, url)
	}
	if !strings.Contains(dom, fmt.Sprintf("size %dx%d", w, h)) {
		t.Fatalf("Chromium did not decode %s at %d×%d:\n%s", name, w, h, dom)
	}
	shot := testtool.Screenshot(t, url, 400, 400)
	// The image's extent: the pixels that are not the magenta background.
	minX, minY, maxX, maxY := 400, 400, -1, -1
	for y := range 400 {
		for x := range 400 {
			r, g, b, _ := shot.At(x, y).RGBA()
			if r>>8 > 240 && g>>8 < 15 && b>>8 > 240 {
				continue
			}
			minX, minY, maxX, maxY = min(minX, x), min(minY, y), max(maxX, x), max(maxY, y)
		}
	}
	if minX != 0 || minY != 0 || maxX+1 != w || maxY+1 < h {
		t.Fatalf("screenshot: image at (%d,%d)-(%d,%d), want (0,0)-(%d,%d)", minX, minY, maxX+1, maxY+1, w, h)
	}
	crop := shot.(interface {
		SubImage(image.Rectangle) image.Image
	}).SubImage(image.Rect(0, 0, w, h))
	mean, _ := deltaEStats(t, refImg, crop, 2)
	t.Logf("Chromium's rendering of %s: mean ΔE2000 %.2f against the JPEG", name, mean)
	if mean > 3 {
		t.Errorf("Chromium's rendering of %s: mean ΔE2000 %.2f against the JPEG variant", name, mean)
	}
}

// TestHDRHighlights: a chart whose grey patches lie 1.7 and 0.85 times
// over and under SDR white after its +1.5 EV BaselineExposure: the SDR
// JPEG clips the brighter one to white, the PQ AVIF (12 bits), the HLG
// AVIF and the PQ JPEG XL keep it. Decoded with Debian's avifdec and djxl
// and taken back to linear light through PQ's EOTF (HLG's inverse OETF
// and OOTF), each patch's luminance is within 3 % of the scene-referred
// render's: its linear value times the gain that puts mid grey where the
// SDR tone curve does, times 203 nits. The files carry a content light
// level at least the brightest patch's.
func TestHDRHighlights(t *testing.T) {
	dir := t.TempDir()
	c := synthdng.Chart{W: 128, H: 64, Background: [3]float64{0.1, 0.1, 0.1}, Patches: []synthdng.Patch{
		{X0: 8, Y0: 8, X1: 56, Y1: 56, SRGBLinear: [3]float64{0.6, 0.6, 0.6}},
		{X0: 72, Y0: 8, X1: 120, Y1: 56, SRGBLinear: [3]float64{0.3, 0.3, 0.3}},
	}}
	in := writeChart(t, dir, c, 1, 1.5)
	var outs []OutputSpec
	for _, spec := range []string{"main=jpeg", "pq=avif,hdr=pq,depth=12,quality=95", "hlg=avif,hdr=hlg,depth=12,quality=95", "xpq=jxl,hdr=pq,quality=95"} {
		v, err := ParseVariant(spec)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, OutputSpec{Variant: v, Path: filepath.Join(dir, "c"+v.Suffix())})
	}
	s := referenceSettings()
	s.Tone, s.BaselineExposure = ToneDefault, true
	s.Crop = CropCamera
	if _, err := ConvertVariants(context.Background(), in, outs, s, nil); err != nil {
		t.Fatal(err)
	}
	sdr := decodeImage(t, outs[0].Path)
	if m := patchMean(sdr, 16, 16, 48, 48); m[0] < 65000 || m[1] < 65000 || m[2] < 65000 {
		t.Errorf("SDR JPEG: the over-white patch is %.0f, not clipped white", m)
	}
	gain := look.DefaultCurve.Apply(0.18) / 0.18 * math.Exp2(1.5) * colour.HDRReferenceWhite
	for _, o := range outs[1:] {
		img := decodeWholeFrame(t, o.Path)
		for _, p := range c.Patches {
			m := patchMean(img, p.X0+8, p.Y0+8, p.X1-8, p.Y1-8)
			code := [3]float64{m[0] / 65535, m[1] / 65535, m[2] / 65535}
			var nits [3]float64
			if o.Variant.HDR == encode.HDRPQ {
				for i := range code {
					nits[i] = colour.PQDecode(code[i])
				}
			} else {
				nits = colour.HLGDecode(code)
			}
			want := p.SRGBLinear[0] * gain
			lum := 0.2627*nits[0] + 0.6780*nits[1] + 0.0593*nits[2]
			t.Logf("%s: patch %.2f: %.1f nits (R %.1f G %.1f B %.1f), want %.1f", o.Variant.Name, p.SRGBLinear[0], lum, nits[0], nits[1], nits[2], want)
			if math.Abs(lum-want) > 0.03*want {
				t.Errorf("%s: patch %.2f: %.1f nits, want %.1f ± 3 %%", o.Variant.Name, p.SRGBLinear[0], lum, want)
			}
		}
		if o.Variant.Format == "avif" {
			f, err := os.ReadFile(o.Path)
			if err != nil {
				t.Fatal(err)
			}
			if cll, fall, ok := encode.AVIFContentLightLevel(f); !ok || float64(cll) < 0.97*0.6*gain || fall <= 0 || fall > cll {
				t.Errorf("%s: content light level %d/%d (present %t), want MaxCLL ≥ %.0f", o.Variant.Name, cll, fall, ok, 0.97*0.6*gain)
			}
		}
	}
}
