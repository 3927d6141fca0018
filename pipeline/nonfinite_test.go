package pipeline

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// writeDamagedDNG writes a synthetic DNG one of whose IFD0 tags of
// RATIONAL or SRATIONAL values (AsShotNeutral 50728, ColorMatrix1 50721)
// is rewritten in place as DOUBLEs (the same 8 bytes each) holding vals,
// as a damaged header may: non-finite values reach LibRaw's numbers.
func writeDamagedDNG(t *testing.T, path string, tag uint16, vals ...float64) {
	t.Helper()
	w, h, scene := synthdng.ChartScene(synthdng.Chart{W: 48, H: 32, Background: [3]float64{0.18, 0.18, 0.18}}, 1, synthdng.DefaultColorMatrix, 1)
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
		if e := b[ifd0+2+12*i:]; bo.Uint16(e) == tag {
			if int(bo.Uint32(e[4:])) != len(vals) {
				t.Fatalf("tag %d has %d values, %d given", tag, bo.Uint32(e[4:]), len(vals))
			}
			bo.PutUint16(e[2:], 12) // DOUBLE
			off := int(bo.Uint32(e[8:]))
			for k, v := range vals {
				bo.PutUint64(b[off+8*k:], math.Float64bits(v))
			}
			found = true
		}
	}
	if !found {
		t.Fatalf("no tag %d in IFD0", tag)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Non-finite numbers are refused where they enter the develop, as corrupt
// data naming the tag or field: the camera colour matrices, the chosen
// white-balance multipliers, the multipliers LibRaw applied, the preview
// anchor's exposure. Finite ones pass.
func TestNonFiniteRefused(t *testing.T) {
	corrupt := func(what string, err error, names string) {
		t.Helper()
		if !errors.Is(err, rawerr.ErrCorrupt) || !strings.Contains(err.Error(), names) {
			t.Errorf("%s: %v, want corrupt naming %q", what, err, names)
		}
	}
	if err := nonFinite("x", 1, -2, 0, 1e300); err != nil {
		t.Errorf("finite numbers: %v", err)
	}
	corrupt("NaN", nonFinite("BaselineExposureOffset (tag 51109)", math.NaN()), "BaselineExposureOffset (tag 51109) holds a number that is not finite (NaN)")

	var in libraw.Info
	in.RGBCam = [3][4]float64{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}}
	if err := checkMatrices(in); err != nil {
		t.Errorf("finite matrices: %v", err)
	}
	in.RGBCam[1][2] = math.Inf(1)
	corrupt("rgb_cam", checkMatrices(in), "ColorMatrix1")
	in.RGBCam[1][2] = 0
	in.CamXYZ[0][0] = math.NaN()
	corrupt("cam_xyz", checkMatrices(in), "cam_xyz")

	for _, c := range []struct {
		wb    WhiteBalanceUsed
		names string
	}{
		{WhiteBalanceUsed{Source: "as shot", Multipliers: [3]float64{math.NaN(), 1, 1}}, "AsShotNeutral, tag 50728"},
		{WhiteBalanceUsed{Source: "preview", Multipliers: [3]float64{2, 1, math.Inf(-1)}}, "embedded preview"},
		{WhiteBalanceUsed{Source: "auto", Multipliers: [3]float64{2, 1, math.NaN()}}, "estimated from the raw data"},
	} {
		j := &job{wb: c.wb}
		corrupt(c.wb.Source, j.checkWhiteBalance(), c.names)
	}
	j := &job{wb: WhiteBalanceUsed{Source: "auto", Multipliers: [3]float64{2, 1, 1.4}}}
	j.params.WB = libraw.WBUser
	j.params.Multipliers = [4]float32{2, 1, float32(math.NaN()), 1}
	corrupt("LibRaw's user_mul", j.checkWhiteBalance(), "estimated from the raw data")
	j.params.Multipliers[2] = 1.4
	if err := j.checkWhiteBalance(); err != nil {
		t.Errorf("finite white balance: %v", err)
	}

	// The stage itself: --wb with multipliers that are not finite (which
	// Validate refuses from the command line) is refused, not developed.
	s := DefaultSettings()
	s.WhiteBalance = WhiteBalance{Mode: "custom", Multipliers: [3]float64{math.NaN(), 1, 1}}
	corrupt("custom", stageWhiteBalance(context.Background(), &job{settings: s}), "white-balance multipliers (custom)")
}

// A DNG whose AsShotNeutral is not finite is converted as one without
// usable as-shot multipliers (the auto white balance), not refused: the
// damaged numbers are not used. Its result encodes as JSON (the worker's
// reply).
func TestNonFiniteAsShotNeutral(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "nan.dng")
	writeDamagedDNG(t, in, 50728, math.NaN(), 1, math.Inf(1))
	res, err := ConvertFile(context.Background(), in, filepath.Join(dir, "nan.jpg"), DefaultSettings())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := json.Marshal(res); err != nil {
		t.Errorf("result: %v", err)
	}
	if res.WhiteBalance == nil || res.WhiteBalance.Source != "auto" {
		t.Errorf("white balance %+v, want auto", res.WhiteBalance)
	}
	if m := meanRGB(t, filepath.Join(dir, "nan.jpg")); !(m[0] > 50 && m[1] > 50 && m[2] > 50) {
		t.Errorf("mean RGB %v: want a grey picture, not a black one", m)
	}
}
