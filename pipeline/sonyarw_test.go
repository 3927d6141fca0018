package pipeline

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// TestSonyLosslessARWConverts: a synthetic Sony lossless-compressed ARW
// (ILCE-7M4, 14-bit, lossless-JPEG tiles; synthdng.WriteSonyLosslessARW)
// of the test chart converts with LibRaw 0.21 or later, every patch within
// ΔE2000 2 of its analytic colour; LibRaw 0.20 refuses it as unsupported
// with the "needs LibRaw 0.21" message. The scene is rendered with the
// XYZ→camera matrix and levels LibRaw itself uses for the model (read back
// with libraw.Identify), with a gain that puts white at 1 after LibRaw's
// daylight white balance (the file has no as-shot one), so the expected
// colours are the patches' own.
func TestSonyLosslessARWConverts(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "chart.arw")
	spec := synthdng.ARWSpec{Width: 96, Height: 64, TileWidth: 32, TileLength: 32, Bits: 14,
		BlackLevel: 512, WhiteLevel: 16383, Model: "ILCE-7M4",
		Scene: func(x, y, ch int) float64 { return 0.2 }}
	if err := synthdng.WriteSonyLosslessARW(p, spec); err != nil {
		t.Fatal(err)
	}
	if libraw.VersionNumber() < 0x001500 {
		_, err := ConvertFile(context.Background(), p, p+".png", referenceSettings())
		if !errors.Is(err, rawerr.ErrUnsupported) || !strings.Contains(err.Error(), "needs LibRaw 0.21") {
			t.Fatalf("LibRaw %s: got %v, want unsupported, needs LibRaw 0.21", libraw.ShortVersion(), err)
		}
		return
	}
	in, _, _, err := libraw.Identify(p)
	if err != nil {
		t.Fatalf("Identify: %v", err)
	}
	var cm [3][3]float64
	for i := range 3 {
		copy(cm[i][:], in.CamXYZ[i][:])
	}
	if cm == ([3][3]float64{}) || in.White <= in.Black {
		t.Fatalf("LibRaw has no matrix or levels for %s: %+v", spec.Model, in)
	}
	white := synthdng.CameraRGB(cm, [3]float64{1, 1, 1})
	gain := 1 / math.Max(white[0], math.Max(white[1], white[2]))
	c := testChart()
	_, _, scene := synthdng.ChartScene(c, 1, cm, gain)
	spec.Scene, spec.BlackLevel, spec.WhiteLevel = scene, in.Black, in.White
	if err := synthdng.WriteSonyLosslessARW(p, spec); err != nil {
		t.Fatal(err)
	}
	// Daylight: LibRaw's multipliers derived from its matrix (color.pre_mul).
	st := referenceSettings()
	st.WhiteBalance = WhiteBalance{Mode: "daylight"}
	out, _ := convert(t, p, dir, st)
	img := decodeImage(t, out)
	if img.Bounds().Dx() != c.W || img.Bounds().Dy() != c.H {
		t.Fatalf("size %v, want %dx%d", img.Bounds(), c.W, c.H)
	}
	for i, pt := range c.Patches {
		got := labOf16(patchMean(img, pt.X0+4, pt.Y0+4, pt.X1-4, pt.Y1-4))
		want := expectedLab(pt.SRGBLinear, 1, ToneNone)
		de := colour.DeltaE2000(got, want)
		t.Logf("patch %d: ΔE2000 %.2f", i, de)
		if de > 2 {
			t.Errorf("patch %d %v: Lab %.2f, want %.2f: ΔE2000 %.2f", i, pt.SRGBLinear, got, want, de)
		}
	}
}
