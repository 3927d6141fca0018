package pipeline

import (
	"context"
	"image"
	_ "image/jpeg"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"testing"

	"golang.org/x/image/tiff"

	"github.com/rawbatch/rawbatch/internal/testtool"
	"github.com/rawbatch/rawbatch/pipeline/colour"
)

const testdata = "../testdata"

// rawFiles lists the decodable sample files.
func rawFiles(t testing.TB) []string {
	files, err := filepath.Glob(filepath.Join(testdata, "raw", "*"))
	if err != nil || len(files) < 5 {
		t.Fatalf("sample files in testdata/raw: %v (%d found)", err, len(files))
	}
	sort.Strings(files)
	return files
}

var outputSizeRE = regexp.MustCompile(`Output size:\s*(\d+)\s*x\s*(\d+)`)

// librawOutputSize is the oracle for output dimensions: the "Output size"
// line of `raw-identify -v`.
func librawOutputSize(t testing.TB, path string) (int, int) {
	bin := testtool.Need(t, "raw-identify")
	out, err := exec.Command(bin, "-v", path).CombinedOutput()
	if err != nil {
		t.Fatalf("raw-identify %s: %v\n%s", path, err, out)
	}
	m := outputSizeRE.FindSubmatch(out)
	if m == nil {
		t.Fatalf("raw-identify %s: no Output size line:\n%s", path, out)
	}
	w, _ := strconv.Atoi(string(m[1]))
	h, _ := strconv.Atoi(string(m[2]))
	return w, h
}

// decodeImage reads a JPEG, PNG or TIFF file.
func decodeImage(t testing.TB, path string) image.Image {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var img image.Image
	switch filepath.Ext(path) {
	case ".tiff", ".tif":
		img, err = tiff.Decode(f)
	case ".png":
		img, err = png.Decode(f)
	default:
		img, _, err = image.Decode(f)
	}
	if err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	return img
}

// rgb16 returns the 16-bit channels of pixel (x, y).
func rgb16(img image.Image, x, y int) (uint16, uint16, uint16) {
	r, g, b, _ := img.At(img.Bounds().Min.X+x, img.Bounds().Min.Y+y).RGBA()
	return uint16(r), uint16(g), uint16(b)
}

// convert runs ConvertFile into dir and returns the output path.
func convert(t testing.TB, in, dir string, s Settings) (string, Result) {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(in)+s.Format.Ext())
	res, err := ConvertFile(context.Background(), in, out, s)
	if err != nil {
		t.Fatalf("ConvertFile(%s): %v", in, err)
	}
	return out, res
}

// referenceSettings are the settings that correspond to
// dcraw_emu -w -W -o 1 -q 3 -g 2.4 12.92 -T -6 (which outputs LibRaw's
// visible area: --crop sensor).
func referenceSettings() Settings {
	s := DefaultSettings()
	s.Crop = CropSensor
	s.Format = PNG16
	s.Tone = ToneNone
	s.BaselineExposure = false
	s.WhiteBalance = WhiteBalance{Mode: "camera"}
	s.Demosaic = "ahd"
	// LibRaw's white level and plain clipping, as dcraw_emu does.
	s.WhiteLevel, s.Highlights = WhiteLevelLibRaw, HighlightsClip
	s.Look = LookNeutral // no preview anchoring
	// dcraw_emu has no noise reduction or capture sharpening.
	s.Denoise, s.CaptureSharpen = DenoiseOff, CaptureSharpenOff
	s.Lens = LensOff // dcraw_emu corrects no lens
	return s
}

// deltaEStats compares two images of one size pixel by pixel with CIEDE2000
// (both read as sRGB), ignoring a border of b pixels, and returns the mean
// and the 99th percentile.
func deltaEStats(t testing.TB, a, b image.Image, border int) (mean, p99 float64) {
	w, h := a.Bounds().Dx(), a.Bounds().Dy()
	if w != b.Bounds().Dx() || h != b.Bounds().Dy() {
		t.Fatalf("sizes differ: %dx%d vs %dx%d", w, h, b.Bounds().Dx(), b.Bounds().Dy())
	}
	var des []float64
	for y := border; y < h-border; y++ {
		for x := border; x < w-border; x++ {
			r1, g1, b1 := rgb16(a, x, y)
			r2, g2, b2 := rgb16(b, x, y)
			des = append(des, colour.DeltaE2000(colour.SRGB16ToLab(r1, g1, b1), colour.SRGB16ToLab(r2, g2, b2)))
		}
	}
	if len(des) == 0 {
		t.Fatal("no pixels compared")
	}
	var sum float64
	for _, d := range des {
		sum += d
	}
	sort.Float64s(des)
	return sum / float64(len(des)), des[len(des)*99/100]
}

// patchMean returns the mean 16-bit sRGB colour of the rectangle
// [x0,x1)×[y0,y1) of img.
func patchMean(img image.Image, x0, y0, x1, y1 int) [3]float64 {
	var s [3]float64
	n := 0
	for y := y0; y < y1; y++ {
		for x := x0; x < x1; x++ {
			r, g, b := rgb16(img, x, y)
			s[0] += float64(r)
			s[1] += float64(g)
			s[2] += float64(b)
			n++
		}
	}
	for i := range s {
		s[i] /= float64(n)
	}
	return s
}

// labOf16 converts a mean 16-bit encoded sRGB colour to Lab.
func labOf16(c [3]float64) colour.Lab {
	lin := [3]float64{colour.SRGBDecode(c[0] / 65535), colour.SRGBDecode(c[1] / 65535), colour.SRGBDecode(c[2] / 65535)}
	return colour.SRGB.LinearToLab(lin)
}
