package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/internal/testtool"
	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
	"github.com/rawbatch/rawbatch/pipeline/look"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// TestRealFilesOutputSize: every sample file converts, and with --crop
// sensor the JPEG's size is LibRaw's output size after rotation
// (raw-identify -v is the oracle; --crop camera is TestCropD30's).
func TestRealFilesOutputSize(t *testing.T) {
	dir := t.TempDir()
	s := DefaultSettings()
	s.Crop = CropSensor
	for _, f := range rawFiles(t) {
		wantW, wantH := librawOutputSize(t, f)
		out, res := convert(t, f, dir, s)
		img := decodeImage(t, out)
		if img.Bounds().Dx() != wantW || img.Bounds().Dy() != wantH {
			t.Errorf("%s: output %dx%d, LibRaw says %dx%d", f, img.Bounds().Dx(), img.Bounds().Dy(), wantW, wantH)
		}
		if res.Width != wantW || res.Height != wantH {
			t.Errorf("%s: Result says %dx%d", f, res.Width, res.Height)
		}
		hdr, err := ReadHeader(f)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := timingNames(res), PlanStages(InfoFromHeader(hdr), s).Names(); !slices.Equal(got, want) {
			t.Errorf("%s: steps run %q, planned %q", f, got, want)
		}
	}
}

// TestColourMatchesDcrawEmu compares the png16 output with no tone curve
// against LibRaw's own sRGB rendering by dcraw_emu, an independent
// implementation of the camera-matrix and transfer-function steps.
func TestColourMatchesDcrawEmu(t *testing.T) {
	bin := testtool.Need(t, "dcraw_emu")
	dir := t.TempDir()
	for _, f := range rawFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			// dcraw_emu writes FILE.tiff next to its input: work on a copy.
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			in := filepath.Join(dir, filepath.Base(f))
			if err := os.WriteFile(in, b, 0o644); err != nil {
				t.Fatal(err)
			}
			out, res := convert(t, f, dir, referenceSettings())
			// dcraw_emu -w takes the as-shot multipliers; where rawbatch
			// chose others (no usable as-shot ones), it gets ours (-r).
			wb := []string{"-w"}
			if res.WhiteBalance == nil || res.WhiteBalance.Source != "as shot" {
				m := res.WhiteBalance.Multipliers
				wb = []string{"-r", fmt.Sprint(m[0]), "1", fmt.Sprint(m[2]), "1"}
			}
			cmd := exec.Command(bin, append(wb, "-W", "-o", "1", "-q", "3", "-g", "2.4", "12.92", "-T", "-6", in)...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("dcraw_emu: %v\n%s", err, out)
			}
			ref := decodeImage(t, in+".tiff")
			got := decodeImage(t, out)
			mean, p99 := deltaEStats(t, got, ref, 4)
			t.Logf("%s: mean ΔE2000 %.3f, p99 %.3f", filepath.Base(f), mean, p99)
			if mean > 1.0 || p99 > 3 {
				t.Errorf("%s: mean ΔE2000 %.3f (max 1.0), p99 %.3f (max 3)", f, mean, p99)
			}
		})
	}
}

// testChart is a 96×64 (display) chart: a mid-grey background and flat
// patches of known linear sRGB colours, all well inside the gamut and below
// LibRaw's adjust-maximum threshold (0.75 of the white level).
func testChart() synthdng.Chart {
	cols := [][3]float64{
		{0.40, 0.10, 0.08}, // red
		{0.10, 0.35, 0.10}, // green
		{0.06, 0.10, 0.40}, // blue
		{0.45, 0.40, 0.10}, // yellow
		{0.50, 0.50, 0.50}, // light grey
		{0.05, 0.05, 0.05}, // dark grey
	}
	c := synthdng.Chart{W: 96, H: 64, Background: [3]float64{0.18, 0.18, 0.18}}
	for i, col := range cols {
		x0, y0 := 4+(i%3)*30, 6+(i/3)*30
		c.Patches = append(c.Patches, synthdng.Patch{X0: x0, Y0: y0, X1: x0 + 26, Y1: y0 + 24, SRGBLinear: col})
	}
	return c
}

// writeChart writes chart c as a DNG with orientation o and returns its path.
func writeChart(t testing.TB, dir string, c synthdng.Chart, o int, baseline float64) string {
	cm := synthdng.DefaultColorMatrix
	w, h, scene := synthdng.ChartScene(c, o, cm, 1)
	p := filepath.Join(dir, fmt.Sprintf("chart-o%d.dng", o))
	err := synthdng.WriteFile(p, synthdng.Spec{
		Width: w, Height: h, BlackLevel: 512, WhiteLevel: 16383,
		ColorMatrix1: cm, AsShotNeutral: synthdng.NeutralFor(cm),
		Orientation: o, BaselineExposure: baseline, Scene: scene,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// expectedSRGB16 is the analytic result for a patch of linear sRGB colour
// rgb: the working-space round trip is exact, so the output is the sRGB
// encoding of toneFn applied in the working space to rgb·gain.
func expectedLab(rgb [3]float64, gain float64, tone ToneCurve) colour.Lab {
	toWork := colour.ConvertMatrix(colour.SRGB, WorkingSpace)
	toOut := colour.ConvertMatrix(WorkingSpace, colour.SRGB)
	w := toWork.Apply([3]float64{rgb[0] * gain, rgb[1] * gain, rgb[2] * gain})
	if tone == ToneDefault {
		w = look.RGBTone(look.DefaultCurve, w)
	}
	o := toOut.Apply(w)
	for i := range o {
		o[i] = math.Min(1, math.Max(0, o[i]))
	}
	return colour.SRGB.LinearToLab(o)
}

// TestSyntheticChartColour: a DNG with known ColorMatrix1, AsShotNeutral,
// BlackLevel and WhiteLevel converts with every patch within ΔE2000 2 of its
// analytically expected colour, with and without the tone curve, and with
// BaselineExposure applied (+1 EV doubles the linear value) or not.
func TestSyntheticChartColour(t *testing.T) {
	dir := t.TempDir()
	c := testChart()
	cases := []struct {
		name     string
		baseline float64
		useBase  bool
		exposure float64
		tone     ToneCurve
		gain     float64
	}{
		{"plain", 0, false, 0, ToneNone, 1},
		{"baseline-ignored", 1, false, 0, ToneNone, 1},
		{"baseline+1EV", 1, true, 0, ToneNone, 2},
		{"exposure-1EV", 0, true, -1, ToneNone, 0.5},
		{"tone-default", 0, true, 0, ToneDefault, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := writeChart(t, t.TempDir(), c, 1, tc.baseline)
			s := referenceSettings()
			s.BaselineExposure, s.Exposure, s.Tone = tc.useBase, tc.exposure, tc.tone
			out, _ := convert(t, in, dir, s)
			img := decodeImage(t, out)
			if img.Bounds().Dx() != c.W || img.Bounds().Dy() != c.H {
				t.Fatalf("size %v, want %dx%d", img.Bounds(), c.W, c.H)
			}
			for i, p := range c.Patches {
				got := labOf16(patchMean(img, p.X0+4, p.Y0+4, p.X1-4, p.Y1-4))
				want := expectedLab(p.SRGBLinear, tc.gain, tc.tone)
				if de := colour.DeltaE2000(got, want); de > 2 {
					t.Errorf("patch %d %v: Lab %.2f, want %.2f: ΔE2000 %.2f", i, p.SRGBLinear, got, want, de)
				}
			}
		})
	}
}

// TestOrientationAllEight: the same upright chart written with Orientation
// 1..8 (stored data transformed by the inverse orientation) comes out
// upright every time: two marker patches in the top corners, and portrait
// output for a landscape file with Orientation 5..8.
func TestOrientationAllEight(t *testing.T) {
	dir := t.TempDir()
	// Portrait display chart 64×96: stored landscape (96×64) for 5..8.
	c := synthdng.Chart{W: 64, H: 96, Background: [3]float64{0.2, 0.2, 0.2}, Patches: []synthdng.Patch{
		{X0: 0, Y0: 0, X1: 16, Y1: 16, SRGBLinear: [3]float64{0.6, 0.05, 0.05}},  // top-left: red
		{X0: 48, Y0: 0, X1: 64, Y1: 16, SRGBLinear: [3]float64{0.05, 0.05, 0.6}}, // top-right: blue
	}}
	for o := 1; o <= 8; o++ {
		in := writeChart(t, dir, c, o, 0)
		s := referenceSettings()
		out, res := convert(t, in, dir, s)
		img := decodeImage(t, out)
		if img.Bounds().Dx() != 64 || img.Bounds().Dy() != 96 {
			t.Errorf("orientation %d: output %dx%d, want 64x96 (portrait)", o, img.Bounds().Dx(), img.Bounds().Dy())
			continue
		}
		if o >= 5 && res.Flip&4 == 0 {
			t.Errorf("orientation %d: LibRaw flip %d does not transpose", o, res.Flip)
		}
		tl := patchMean(img, 4, 4, 12, 12)
		tr := patchMean(img, 52, 4, 60, 12)
		bl := patchMean(img, 4, 84, 12, 92)
		if !(tl[0] > 2*tl[2] && tr[2] > 2*tr[0]) {
			t.Errorf("orientation %d: top-left %v should be red and top-right %v blue", o, tl, tr)
		}
		if math.Abs(bl[0]-bl[2]) > 0.05*65535 {
			t.Errorf("orientation %d: bottom-left %v should be grey", o, bl)
		}
	}
}

// TestBadInputErrors: each kind of bad input fails with its typed error and
// leaves no output file.
func TestBadInputErrors(t *testing.T) {
	dir := t.TempDir()
	outDir := t.TempDir()
	good, _ := os.ReadFile(filepath.Join(testdata, "raw", "canon550d_colorchart.dng"))
	jpeg := func() []byte {
		// A real JPEG: convert a sample to one.
		out, _ := convert(t, filepath.Join(testdata, "raw", "adobesdk_05_PGTM2_unsigned8.dng"), t.TempDir(), DefaultSettings())
		b, _ := os.ReadFile(out)
		return b
	}()
	files := map[string][]byte{
		"empty.CR3":   {},
		"text.CR3":    []byte("this is not a raw file\nreally\n"),
		"photo.dng":   jpeg,
		"half.dng":    good[:len(good)/2],
		"stubcr3.cr3": mustRead(t, filepath.Join(testdata, "stubs", "exiftool_CanonRaw.cr3")),
		"iphone.dng":  mustRead(t, filepath.Join(testdata, "stubs", "exiv2_IMG_1361_iphone12pro.dng")),
		"stub.dng":    mustRead(t, filepath.Join(testdata, "stubs", "exiftool_DNG.dng")),
		"r6.cr3":      mustRead(t, filepath.Join(testdata, "stubs", "nomexif_canon-r6.cr3")),
		"craw.cr3":    mustRead(t, filepath.Join(testdata, "stubs", "exiv2_Canon-R6-pruned.CR3")),
		"zve10.arw":   mustRead(t, filepath.Join(testdata, "stubs", "filetype_fixture-sony-zv-e10.arw")),
		"hdr.dng":     mustRead(t, filepath.Join(testdata, "unsupported", "adobesdk_14_hdr_sdr_profiles.dng")),
	}
	want := map[string]error{
		"empty.CR3": rawerr.ErrEmpty, "text.CR3": rawerr.ErrNotRaw, "photo.dng": rawerr.ErrNotRaw,
		"half.dng": rawerr.ErrCorrupt, "stubcr3.cr3": rawerr.ErrCorrupt, "iphone.dng": rawerr.ErrCorrupt,
		// Truncated copies of real CR3 and ARW files (LibRaw itself calls
		// them unsupported); a lossy CR3 is unsupported by LibRaw 0.20.
		"stub.dng": rawerr.ErrCorrupt, "r6.cr3": rawerr.ErrCorrupt, "zve10.arw": rawerr.ErrCorrupt,
		"craw.cr3": rawerr.ErrUnsupported,
		"hdr.dng":  rawerr.ErrUnsupported,
	}
	if libraw.VersionNumber() >= 0x001500 {
		// LibRaw 0.21+ decodes C-RAW; this one's image tracks are pruned.
		want["craw.cr3"] = rawerr.ErrCorrupt
		// and it decodes this DNG: not a bad input there.
		delete(files, "hdr.dng")
	}
	for name, b := range files {
		in := filepath.Join(dir, name)
		if err := os.WriteFile(in, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(outDir, name+".jpg")
		_, err := ConvertFile(context.Background(), in, out, DefaultSettings())
		if !errors.Is(err, want[name]) {
			t.Errorf("%s: got %v, want %v", name, err, want[name])
		}
		if err != nil && !bytes.Contains([]byte(err.Error()), []byte(in)) {
			t.Errorf("%s: error %q does not name the file", name, err)
		}
	}
	left, _ := os.ReadDir(outDir)
	for _, e := range left {
		t.Errorf("output left behind for a failed input: %s", e.Name())
	}
}

func mustRead(t testing.TB, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParallelMatchesSerial: 4 goroutines × 20 conversions produce pixels
// identical to a serial run (LibRaw handles are per goroutine; nothing is
// shared).
func TestParallelMatchesSerial(t *testing.T) {
	dir := t.TempDir()
	inputs := []string{
		filepath.Join(testdata, "raw", "canon_eos_6d.dng"),
		filepath.Join(testdata, "raw", "adobesdk_05_PGTM2_unsigned8.dng"),
		filepath.Join(testdata, "raw", "adobesdk_07_PGTM2_float16.dng"),
		writeChart(t, dir, testChart(), 6, 0),
	}
	s := DefaultSettings()
	s.Format = PNG16
	serial := map[string]*image.NRGBA64{}
	for _, in := range inputs {
		out, _ := convert(t, in, t.TempDir(), s)
		serial[in] = toNRGBA64(decodeImage(t, out))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 80)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gdir := filepath.Join(dir, fmt.Sprint("g", g))
			os.Mkdir(gdir, 0o755)
			for i := range 20 {
				in := inputs[(i+g)%len(inputs)]
				out := filepath.Join(gdir, fmt.Sprintf("%d.png", i))
				if _, err := ConvertFile(context.Background(), in, out, s); err != nil {
					errs <- err
					continue
				}
				got := toNRGBA64(decodeImage(t, out))
				if !bytes.Equal(got.Pix, serial[in].Pix) {
					errs <- fmt.Errorf("goroutine %d conversion %d of %s: pixels differ from the serial run", g, i, in)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func toNRGBA64(img image.Image) *image.NRGBA64 {
	b := img.Bounds()
	out := image.NewNRGBA64(image.Rect(0, 0, b.Dx(), b.Dy()))
	for y := 0; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			out.Set(x, y, img.At(b.Min.X+x, b.Min.Y+y))
		}
	}
	return out
}

// TestCancelledConversionLeavesNothing: a cancelled context fails the file
// with the context's error and leaves no output.
func TestCancelledConversionLeavesNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := filepath.Join(t.TempDir(), "x.jpg")
	_, err := ConvertFile(ctx, filepath.Join(testdata, "raw", "canon_eos_6d.dng"), out, DefaultSettings())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("output exists after cancel: %v", err)
	}
}

// TestRowParallelMatchesOneProcessor: the stages' row loops (par.Rows) give
// the same pixels with one processor and with several, for every variant
// kind: 8-bit, 16-bit whole-image, streamed TIFF16, sharpened, resized and
// rotated.
func TestRowParallelMatchesOneProcessor(t *testing.T) {
	dir := t.TempDir()
	in := writeChart(t, dir, testChart(), 6, 0) // orientation 6: rotated
	specs := []string{"main=jpeg,quality=95", "p=png16,space=adobergb,sharpen=0.8", "t=tiff16,space=prophoto", "s=png8,size=40"}
	run := func(procs int) map[string]*image.NRGBA64 {
		prev := runtime.GOMAXPROCS(procs)
		defer runtime.GOMAXPROCS(prev)
		out := t.TempDir()
		var outs []OutputSpec
		for _, sp := range specs {
			v, err := ParseVariant(sp)
			if err != nil {
				t.Fatal(err)
			}
			outs = append(outs, OutputSpec{Variant: v, Path: filepath.Join(out, v.Name+"."+v.Format)})
		}
		if _, err := ConvertVariants(context.Background(), in, outs, DefaultSettings(), nil); err != nil {
			t.Fatal(err)
		}
		got := map[string]*image.NRGBA64{}
		for _, o := range outs {
			got[o.Variant.Name] = toNRGBA64(decodeImage(t, o.Path))
		}
		return got
	}
	one, many := run(1), run(4)
	for name, img := range one {
		if !bytes.Equal(img.Pix, many[name].Pix) {
			t.Errorf("variant %s: pixels differ between GOMAXPROCS 1 and 4", name)
		}
	}
}
