package pipeline

import (
	"context"
	"encoding/binary"
	"image"
	_ "image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// writeNoNeutralDNG writes a synthetic DNG of a strongly coloured scene
// (so that grey-world white balance differs clearly from daylight) whose
// AsShotNeutral tag (50728) is renamed to an unknown private tag, as if
// the writer had left it out.
func writeNoNeutralDNG(t *testing.T, path string) {
	t.Helper()
	c := synthdng.Chart{W: 48, H: 32, Background: [3]float64{0.40, 0.12, 0.05},
		Patches: []synthdng.Patch{{X0: 0, Y0: 0, X1: 16, Y1: 16, SRGBLinear: [3]float64{0.18, 0.18, 0.18}}}}
	w, h, scene := synthdng.ChartScene(c, 1, synthdng.DefaultColorMatrix, 1)
	if err := synthdng.WriteFile(path, synthdng.Spec{Width: w, Height: h, BlackLevel: 256, WhiteLevel: 16383, Orientation: 1, Scene: scene}); err != nil {
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

// meanRGB returns the mean 8-bit R, G, B of a decoded image file.
func meanRGB(t *testing.T, path string) [3]float64 {
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
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			s[0] += float64(cr >> 8)
			s[1] += float64(cg >> 8)
			s[2] += float64(cb >> 8)
		}
	}
	n := float64(r.Dx() * r.Dy())
	return [3]float64{s[0] / n, s[1] / n, s[2] / n}
}

// TestCameraWBWithoutAsShotNeutral: --wb camera on a DNG without
// AsShotNeutral uses the auto white balance from the raw data
// (highlight.ChooseWB), says so in a warning and in
// Result.WhiteBalance, and keeps part of the warm cast that grey world
// (--wb auto) removes: this red scene's R/B lies between grey world's and
// daylight's.
func TestCameraWBWithoutAsShotNeutral(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "noneutral.dng")
	writeNoNeutralDNG(t, in)
	means := map[string][3]float64{}
	for _, wb := range []string{"camera", "daylight", "auto"} {
		s := DefaultSettings()
		s.WhiteBalance = WhiteBalance{Mode: wb}
		out := filepath.Join(dir, wb+".jpg")
		res, err := ConvertFile(context.Background(), in, out, s)
		if err != nil {
			t.Fatalf("%s: %v", wb, err)
		}
		warned := strings.Contains(strings.Join(res.Warnings, "\n"), "white balance auto: the file's as-shot multipliers are unusable")
		if warned != (wb == "camera") {
			t.Errorf("--wb %s: warnings %q", wb, res.Warnings)
		}
		if wb == "camera" && (res.WhiteBalance == nil || res.WhiteBalance.Source != "auto" || !(res.WhiteBalance.EstimatedCCT > 0)) {
			t.Errorf("--wb camera: white balance %+v, want auto with its colour temperatures", res.WhiteBalance)
		}
		means[wb] = meanRGB(t, out)
	}
	t.Logf("means: %v", means)
	rb := func(m [3]float64) float64 { return m[0] / m[2] }
	if c, g, d := rb(means["camera"]), rb(means["auto"]), rb(means["daylight"]); !(c > g*1.1 && c < d/1.1) {
		t.Errorf("R/B: --wb camera %.2f, grey world %.2f, daylight %.2f: want camera between them", c, g, d)
	}
}
