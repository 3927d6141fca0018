package pipeline

import (
	"fmt"
	"image"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/lens"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// streamLensXML is a made-up lens with all three corrections (written into
// a --lens-db directory by the tests): a barrel distortion, a vignetting
// of gain 1.33 at the corners and a TCA; "Strong" has gain 3 at the
// corners and no TCA; "Broken" an implausible vignetting (gains ≤ 0:
// not applied, with a warning) and the distortion.
const streamLensXML = `<lensdatabase version="1">
    <lens>
        <maker>Rawbatch</maker>
        <model>Rawbatch Stream 28mm f/2.8</model>
        <mount>Rawbatch Mount</mount>
        <cropfactor>1.5</cropfactor>
        <calibration>
            <distortion model="poly3" focal="28" k1="-0.025"/>
            <tca model="linear" focal="28" kr="1.0008" kb="0.9993"/>
            <vignetting model="pa" focal="28" aperture="2.8" distance="1000" k1="-0.3" k2="0.1" k3="-0.05"/>
        </calibration>
    </lens>
    <lens>
        <maker>Rawbatch</maker>
        <model>Rawbatch Broken 28mm f/2.8</model>
        <mount>Rawbatch Mount</mount>
        <cropfactor>1.5</cropfactor>
        <calibration>
            <distortion model="poly3" focal="28" k1="-0.025"/>
            <vignetting model="pa" focal="28" aperture="2.8" distance="1000" k1="-5" k2="0" k3="0"/>
        </calibration>
    </lens>
    <lens>
        <maker>Rawbatch</maker>
        <model>Rawbatch Strong 28mm f/2.8</model>
        <mount>Rawbatch Mount</mount>
        <cropfactor>1.5</cropfactor>
        <calibration>
            <distortion model="poly3" focal="28" k1="-0.025"/>
            <vignetting model="pa" focal="28" aperture="2.8" distance="1000" k1="-0.8" k2="0.2" k3="-0.07"/>
        </calibration>
    </lens>
</lensdatabase>
`

// streamLensDB writes the test profiles (testdata/lensfun's camera and
// streamLensXML's lenses) into a directory for --lens-db.
func streamLensDB(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "lensdb")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	base, err := os.ReadFile(filepath.Join(lensTestDB, "rawbatch-test.xml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"a-base.xml": base, "b-stream.xml": []byte(streamLensXML)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// writeLensChart writes a w×h grid chart photographed through the stream
// lens (lens named in EXIF LensModel), with orientation o, an embedded
// preview when preview, a DefaultCrop at an odd corner when crop.
func writeLensChart(t testing.TB, dir, lens string, w, h, o int, preview, crop bool) string {
	t.Helper()
	c := synthdng.LensChart{Width: w, Height: h, Spacing: 21, LineSigma: 1.3, K1: -0.025, KR: 1.0008, KB: 0.9993,
		Vignetting: [3]float64{-0.3, 0.1, -0.05}, Level: 0.6, Make: "Rawbatch", Model: "Lens Chart", Lens: lens, FocalLength: 28, FNumber: 2.8}
	sp := c.Spec()
	sp.Orientation, sp.ThumbnailIFD0 = o, preview
	if crop {
		sp.DefaultCropOrigin, sp.DefaultCropSize = [2]int{7, 5}, [2]int{w - 20, h - 12}
	}
	p := filepath.Join(dir, fmt.Sprintf("lens-o%d-p%v-c%v-%s.dng", o, preview, crop, strings.Fields(lens)[1]))
	if err := synthdng.WriteFile(p, sp); err != nil {
		t.Fatal(err)
	}
	return p
}

// imagePSNR is the PSNR in dB of b against a (16-bit values, peak 65535),
// and the mean and largest CIEDE2000.
func imagePSNR(t testing.TB, a, b image.Image) (p, meanDE, maxDE float64) {
	t.Helper()
	if a.Bounds().Size() != b.Bounds().Size() {
		t.Fatalf("sizes differ: %v vs %v", a.Bounds().Size(), b.Bounds().Size())
	}
	var se float64
	n := 0
	for y := range a.Bounds().Dy() {
		for x := range a.Bounds().Dx() {
			r1, g1, b1 := rgb16(a, x, y)
			r2, g2, b2 := rgb16(b, x, y)
			for _, d := range []float64{float64(r1) - float64(r2), float64(g1) - float64(g2), float64(b1) - float64(b2)} {
				se += (d / 65535) * (d / 65535)
				n++
			}
		}
	}
	meanDE, maxDE = deltaEMeanMax(a, b)
	if se == 0 {
		return math.Inf(1), meanDE, maxDE
	}
	return 10 * math.Log10(float64(n)/se), meanDE, maxDE
}

// TestStreamLensMatchesWholeImage: a file the lens stage corrects
// (vignetting, distortion and TCA) streams (Result.Streamed), and its
// output is the whole-image path's within PSNR ≥ 60 dB and mean ΔE2000 ≤
// 0.01: synthetic grids in orientations 1, 3, 6, 8, with a DefaultCrop,
// with a preview (a two-pass stream), in JPEG and TIFF16, demosaic bands
// that do not divide the image; and the Canon D30's CRW (a real camera
// file with a preview) with --lens-model a lens lensfun has for it; a
// profile whose vignetting is implausible gets the same warning and only
// the distortion corrected.
func TestStreamLensMatchesWholeImage(t *testing.T) {
	dir := t.TempDir()
	db := streamLensDB(t)
	defer func(b int) { streamBand = b }(streamBand)
	type tc struct {
		name, in, spec string
		band           int
		model          string
	}
	var cases []tc
	for i, o := range []int{1, 3, 6, 8} {
		for _, crop := range []bool{false, true} {
			preview := i%2 == 1 && crop
			in := writeLensChart(t, dir, "Rawbatch Stream 28mm f/2.8", 360, 250, o, preview, crop)
			spec := []string{"main=tiff16", "main=jpeg"}[(i+len(cases))%2]
			cases = append(cases, tc{fmt.Sprintf("o%d_crop%v_preview%v_%s", o, crop, preview, strings.TrimPrefix(spec, "main=")), in, spec, []int{128, 37}[i%2], ""})
		}
	}
	cases = append(cases, tc{"broken_vignetting_o8", writeLensChart(t, dir, "Rawbatch Broken 28mm f/2.8", 360, 250, 8, false, false), "main=tiff16", 128, ""})
	cases = append(cases, tc{"canond30", filepath.Join(testdata, "raw", "canond30_CRW.CRW"), "main=tiff16", 128, "Canon EF 16-35mm f/2.8L USM"})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := DefaultSettings()
			s.LensDB, s.LensModel = db, c.model
			streamBand = c.band
			got, sres := convertOpts(t, c.in, dir, c.name+"/stream", s, ConvertOptions{}, c.spec)
			want, wres := convertOpts(t, c.in, dir, c.name+"/whole", s, ConvertOptions{wholeImage: true}, c.spec)
			if !sres.Streamed || wres.Streamed {
				t.Fatalf("streamed %v, whole-image reference streamed %v (lens %+v)", sres.Streamed, wres.Streamed, sres.Lens)
			}
			if sres.Lens == nil || !strings.Contains(sres.Lens.Corrections, "distortion") || fmt.Sprint(sres.Lens) != fmt.Sprint(wres.Lens) {
				t.Fatalf("lens: stream %+v, whole %+v", sres.Lens, wres.Lens)
			}
			if !slices.Equal(sres.Warnings, wres.Warnings) {
				t.Errorf("warnings differ:\n stream %q\n whole  %q", sres.Warnings, wres.Warnings)
			}
			if !slices.Equal(timingNames(sres), timingNames(wres)) {
				t.Errorf("steps differ:\n stream %q\n whole  %q", timingNames(sres), timingNames(wres))
			}
			if sres.Exposure != wres.Exposure && math.Abs(sres.Exposure.EV-wres.Exposure.EV) > 0.01 {
				t.Errorf("exposure: stream %+v, whole %+v", sres.Exposure, wres.Exposure)
			}
			a, b := decodeImage(t, got[0]), decodeImage(t, want[0])
			p, mean, worst := imagePSNR(t, b, a)
			bits := 8
			if strings.Contains(c.spec, "tiff16") {
				bits = 16
			}
			t.Logf("streamed vs whole: PSNR %.1f dB, ΔE2000 mean %.4f max %.3f, max code difference %d (%d bits); lens %+v", p, mean, worst, maxCodeDiff(a, b, bits), bits, sres.Lens)
			if p < 60 || mean > 0.01 {
				t.Errorf("streamed output: PSNR %.1f dB (want ≥ 60), mean ΔE2000 %.4f (want ≤ 0.01) against the whole image's", p, mean)
			}
		})
	}
}

// TestStreamLensNotTaken: a lens correction that moves rows farther than
// lensMaxShift converts the whole image, not streamed, with the same output;
// at the bound it streams.
func TestStreamLensNotTaken(t *testing.T) {
	dir := t.TempDir()
	db := streamLensDB(t)
	defer func(f func(int) int) { lensMaxShift = f }(lensMaxShift)
	plain := writeLensChart(t, dir, "Rawbatch Stream 28mm f/2.8", 300, 200, 6, false, false)
	s := DefaultSettings()
	s.LensDB = db
	// The largest displacement of the file, upright (orientation 6
	// transposes: the sensor's columns are its rows).
	shift := -1
	for _, c := range []struct {
		name    string
		bound   func(shift int) int
		streams bool
	}{
		{"default bound", nil, true},
		{"bound below its shift", func(d int) int { return d - 1 }, false},
		{"bound at its shift", func(d int) int { return d }, true},
	} {
		lensMaxShift = lens.ShiftBound
		if c.bound != nil {
			lensMaxShift = func(int) int { return c.bound(shift) }
		}
		var rows int
		lensShiftHook = func(d int) { rows = d }
		got, res := convertOpts(t, plain, dir, c.name+"/a", s, ConvertOptions{}, "main=jpeg")
		lensShiftHook = nil
		if shift < 0 {
			shift = rows
			if shift < 5 {
				t.Fatalf("the file's rows move by %d rows: the test shows nothing", shift)
			}
		}
		if res.Streamed != c.streams {
			t.Errorf("%s (shift %d rows): streamed %v, want %v", c.name, rows, res.Streamed, c.streams)
		}
		want, wres := convertOpts(t, plain, dir, c.name+"/b", s, ConvertOptions{wholeImage: true}, "main=jpeg")
		if res.Lens == nil || fmt.Sprint(res.Lens) != fmt.Sprint(wres.Lens) || !strings.Contains(res.Lens.Corrections, "distortion") {
			t.Errorf("%s: lens %+v, whole image %+v", c.name, res.Lens, wres.Lens)
		}
		if p, mean, _ := imagePSNR(t, decodeImage(t, want[0]), decodeImage(t, got[0])); p < 60 || mean > 0.01 {
			t.Errorf("%s: PSNR %.1f dB, mean ΔE2000 %.4f against the whole image's", c.name, p, mean)
		}
	}
	if b := lens.ShiftBound(6000); b != 125 || lens.ShiftBound(300) != 32 {
		t.Errorf("bound %d rows at 6000 px, %d at 300", b, lens.ShiftBound(300))
	}
}

// TestStreamLensBrightCorners: a two-pass stream (a file with a preview)
// stores its rows with values up to 2 (stream16Scale); a strong
// vignetting correction (gain 3 at the corners) of a bright flat field
// makes values up to 2.5 there, which the whole-image path keeps: the
// streamed output is still within PSNR ≥ 60 dB and mean ΔE2000 ≤ 0.01 of
// it (the tone curve saturates such values; measured 69 dB, 0.0016), at
// exposure 0 and −1 EV.
func TestStreamLensBrightCorners(t *testing.T) {
	dir := t.TempDir()
	db := streamLensDB(t)
	c := synthdng.LensChart{Width: 600, Height: 400, Spacing: 40, Level: 0.85, Make: "Rawbatch", Model: "Lens Chart",
		Lens: "Rawbatch Strong 28mm f/2.8", FocalLength: 28, FNumber: 2.8}
	sp := c.Spec()
	sp.ThumbnailIFD0 = true
	in := filepath.Join(dir, "bright.dng")
	if err := synthdng.WriteFile(in, sp); err != nil {
		t.Fatal(err)
	}
	for _, ev := range []float64{0, -1} {
		s := DefaultSettings()
		s.LensDB, s.Exposure = db, ev
		name := fmt.Sprintf("ev%v", ev)
		got, sres := convertOpts(t, in, dir, name+"/s", s, ConvertOptions{}, "main=jpeg")
		want, wres := convertOpts(t, in, dir, name+"/w", s, ConvertOptions{wholeImage: true}, "main=jpeg")
		if !sres.Streamed || wres.Streamed || sres.Lens == nil || !strings.Contains(sres.Lens.Corrections, "vignetting") {
			t.Fatalf("streamed %v, whole-image reference streamed %v, lens %+v", sres.Streamed, wres.Streamed, sres.Lens)
		}
		p, mean, worst := imagePSNR(t, decodeImage(t, want[0]), decodeImage(t, got[0]))
		t.Logf("%+.0f EV: PSNR %.1f dB, ΔE2000 mean %.4f max %.2f", ev, p, mean, worst)
		if p < 60 || mean > 0.01 {
			t.Errorf("%+.0f EV: PSNR %.1f dB (want ≥ 60), mean ΔE2000 %.4f (want ≤ 0.01)", ev, p, mean)
		}
	}
}

// writeSyntheticLens is writeSynthetic's chart taken with the 6D and the
// EF 24-105 at 24 mm f/4 (a lens lensfun has: vignetting, distortion, TCA),
// orientation o, with an embedded preview when preview.
func writeSyntheticLens(t testing.TB, dir string, w, h, o int, preview bool) string {
	t.Helper()
	sp := syntheticSpec(w, h)
	sp.Make, sp.Model, sp.FocalLength, sp.FNumber = "Canon", "Canon EOS 6D", 24, 4
	sp.Orientation, sp.ThumbnailIFD0 = o, preview
	sp.Tags = append(sp.Tags, synthdng.Tag{Dir: tifftag.DirExif, ID: tifftag.LensModel, ASCII: "EF24-105mm f/4L IS USM"})
	p := filepath.Join(dir, fmt.Sprintf("lens-%dx%d-o%d-p%v.dng", w, h, o, preview))
	if err := synthdng.WriteFile(p, sp); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEstimateCalibrationLens: a 12 MP file lensfun corrects (the 6D's EF
// 24-105 at 24 mm), without and with a preview (one and two passes) and
// in orientation 6, is predicted to stream (Memory.Streamed: its lens is
// no fisheye) and does; its measured peak lies within 0.8–1.25× of the
// estimate (calibrate, as TestEstimateCalibration), for the streamed JPEG
// and the whole-image PNG16. A fisheye named is predicted whole.
func TestEstimateCalibrationLens(t *testing.T) {
	if testing.Short() {
		t.Skip("measures conversions in child processes")
	}
	dir := t.TempDir()
	var files []string
	for _, c := range []struct {
		o       int
		preview bool
	}{{1, false}, {1, true}, {6, false}} {
		f := writeSyntheticLens(t, dir, 4240, 2832, c.o, c.preview)
		fi, err := ReadInfo(f)
		if err != nil {
			t.Fatal(err)
		}
		s := DefaultSettings()
		if m := EstimateMemory(fi, s, 1); !m.Streamed || m.Whole <= m.Total {
			t.Errorf("%s: estimate streamed %v, %d bytes (whole image %d)", f, m.Streamed, m.Total, m.Whole)
		}
		if _, res := convertOpts(t, f, dir, "out-"+filepath.Base(f), s, ConvertOptions{}, "main=jpeg"); !res.Streamed || res.Lens == nil || res.Lens.Corrections != "vignetting, distortion, TCA" {
			t.Errorf("%s: streamed %v, lens %+v", f, res.Streamed, res.Lens)
		}
		s.LensModel = "Canon EF 8-15mm f/4L Fisheye USM"
		if m := EstimateMemory(fi, s, 1); m.Streamed {
			t.Errorf("%s with a fisheye: estimate streamed", f)
		}
		files = append(files, f)
	}
	m := settingsMatrix()
	calibrate(t, os.Stdout, files, []Settings{m[0], m[1]})
	// The lens's part of the streamed estimate (its rows and tables:
	// lensStreamRows, lensStreamBytes) covers what the lens adds to the
	// measured peak of the same file with no lens named (orientation 6:
	// the raw data is held to the end).
	plain := writeSynthetic(t, dir, 4240, 2832)
	sp := syntheticSpec(4240, 2832)
	sp.Orientation = 6
	if err := synthdng.WriteFile(plain, sp); err != nil {
		t.Fatal(err)
	}
	s := DefaultSettings()
	// Both measured peaks are at the end (the raw data and the rotated
	// output held), so the estimates compared are the last step's: the
	// file without a lens has its Total at the white-balance step, whose
	// raw estimate (counted for any file: only its data tells) does not
	// run on these files.
	est := func(f string) (end, total int64) {
		fi, err := ReadInfo(f)
		if err != nil {
			t.Fatal(err)
		}
		m := EstimateMemory(fi, s, 1)
		return m.Steps[len(m.Steps)-1].Peak, m.Total
	}
	ew, tw := est(files[2])
	eo, to := est(plain)
	pw := measurePeak(t, files[2], filepath.Join(dir, "with.jpg"), s, 1, tw)
	po := measurePeak(t, plain, filepath.Join(dir, "without.jpg"), s, 1, to)
	t.Logf("the lens adds %.1f MB to the measured peak (%.1f to %.1f MB), %.1f MB to the estimate", float64(pw-po)/1e6, float64(po)/1e6, float64(pw)/1e6, float64(ew-eo)/1e6)
	if ew-eo < pw-po {
		t.Errorf("the lens adds %d bytes to the measured peak, only %d to the estimate", pw-po, ew-eo)
	}
}
