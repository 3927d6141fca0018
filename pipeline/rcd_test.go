package pipeline

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/demosaic"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// decodeCamera runs the per-file steps of s's plan for in up to and
// including the demosaic stage and returns the demosaiced camera RGB
// (W×H×3, [0, 1]) with the job (warnings, white balance).
func decodeCamera(t testing.TB, in string, s Settings) ([]float32, int, int, *job) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	hdr, err := ReadHeader(in)
	if err != nil {
		t.Fatal(err)
	}
	j := &job{in: in, settings: s, hdr: hdr}
	defer j.cleanup()
	for _, st := range PlanStages(InfoFromHeader(hdr), s).Steps {
		if err := st.stage.run(context.Background(), j); err != nil {
			t.Fatalf("%s: %s: %v", in, st.Name, err)
		}
		if st.Name == "demosaic" {
			if j.colors != 3 {
				t.Fatalf("%s: %d colours", in, j.colors)
			}
			return j.camera, j.img.W, j.img.H, j
		}
	}
	t.Fatalf("%s: no demosaic step", in)
	return nil, 0, 0, nil
}

// bayerSamples are the sample files with Bayer data.
func bayerSamples() []string {
	return []string{filepath.Join(testdata, "raw", "canon550d_colorchart.dng"), filepath.Join(testdata, "raw", "canond30_CRW.CRW")}
}

// rcdSettings is s with --demosaic d.
func withDemosaic(s Settings, d Demosaic) Settings {
	s.Demosaic = d
	return s
}

// TestRCDLevelsMatchLibRaw: our black level, white level, white balance
// and visible area are LibRaw's. At every photosite one channel of our
// image (its own sample, which RCD keeps) equals the same channel of
// LibRaw's --demosaic linear image (which keeps it too) within LibRaw's
// 16-bit rounding, for the Bayer sample files and a synthetic DNG with a
// black level and an orientation, with each white-level mode and white
// balance, and the white-balance multipliers reported are LibRaw's.
func TestRCDLevelsMatchLibRaw(t *testing.T) {
	dir := t.TempDir()
	syn := filepath.Join(dir, "syn.dng")
	spec := synthdng.SoftStep()
	spec.BlackLevel, spec.WhiteLevel, spec.Orientation = 256, 16383, 6
	if err := synthdng.WriteFile(syn, spec); err != nil {
		t.Fatal(err)
	}
	base := DefaultSettings()
	custom := base
	custom.WhiteBalance = WhiteBalance{Mode: "custom", Multipliers: [3]float64{2.1, 1, 1.4}}
	daylight := base
	daylight.WhiteBalance = WhiteBalance{Mode: "daylight"}
	librawWhite := base
	librawWhite.WhiteLevel = WhiteLevelLibRaw
	cases := map[string]Settings{"default": base, "custom wb": custom, "daylight": daylight, "white-level libraw": librawWhite}
	for _, in := range append(bayerSamples(), syn) {
		for name, s := range cases {
			ref, rw, rh, rj := decodeCamera(t, in, withDemosaic(s, "linear"))
			got, w, h, gj := decodeCamera(t, in, withDemosaic(s, "rcd"))
			tag := filepath.Base(in) + " " + name
			if w != rw || h != rh {
				t.Fatalf("%s: %d×%d, LibRaw %d×%d", tag, w, h, rw, rh)
			}
			for _, wn := range gj.warnings {
				if strings.Contains(wn, "--demosaic rcd") {
					t.Fatalf("%s: fell back to LibRaw: %s", tag, wn)
				}
			}
			for k := range 3 {
				if math.Abs(gj.wb.Multipliers[k]-rj.wb.Multipliers[k]) > 1e-4*rj.wb.Multipliers[k] {
					t.Errorf("%s: multipliers %v, LibRaw's %v", tag, gj.wb.Multipliers, rj.wb.Multipliers)
					break
				}
			}
			bad := 0
			var sumDiff float64
			for i := range w * h {
				best := math.Inf(1)
				for c := range 3 {
					d := math.Abs(float64(got[i*3+c] - ref[i*3+c]))
					best = min(best, d)
					sumDiff += d
				}
				if best > 1.01/65535 {
					if bad < 3 {
						t.Errorf("%s: pixel (%d,%d): %v, LibRaw %v", tag, i%w, i/w, got[i*3:i*3+3], ref[i*3:i*3+3])
					}
					bad++
				}
			}
			if bad > 0 {
				t.Errorf("%s: %d of %d pixels have no channel of LibRaw's value", tag, bad, w*h)
			}
			// The interpolated channels differ (RCD against bilinear) but
			// stay close on average.
			if m := sumDiff / float64(3*w*h); m > 0.01 {
				t.Errorf("%s: mean difference %.4f from LibRaw's linear demosaic", tag, m)
			}
		}
	}
}

// TestRCDFallsBack: --wb auto (LibRaw's grey world) and half size keep
// LibRaw's processing, the first with a warning saying why.
func TestRCDFallsBack(t *testing.T) {
	in := bayerSamples()[1]
	s := withDemosaic(DefaultSettings(), "rcd")
	s.WhiteBalance = WhiteBalance{Mode: "auto"}
	_, _, _, j := decodeCamera(t, in, s)
	found := false
	for _, w := range j.warnings {
		found = found || strings.Contains(w, "--demosaic rcd: the white balance is LibRaw's grey world")
	}
	if !found {
		t.Errorf("--wb auto: warnings %q, want the fallback named", j.warnings)
	}
	s = withDemosaic(DefaultSettings(), "rcd")
	s.HalfSize = true
	_, w, h, _ := decodeCamera(t, in, s)
	_, rw, rh, _ := decodeCamera(t, in, withDemosaic(s, "ahd"))
	if w != rw || h != rh {
		t.Errorf("half size: %d×%d, want LibRaw's %d×%d", w, h, rw, rh)
	}
}

// TestRCDCost: on the RCD path the demosaic step holds the raw data, the
// float image and the tile planes, not LibRaw's 8-byte image; Fujifilm
// files (maybe X-Trans) keep LibRaw's cost.
func TestRCDCost(t *testing.T) {
	fi := FileInfo{Make: "Canon", RawWidth: 6000, RawHeight: 4000, CFA: true, Width: 6000, Height: 4000}
	s := withDemosaic(DefaultSettings(), "rcd")
	m := demosaicCost(memCtx{fi: fi, s: s, threads: 2})
	peak := unpackCost(memCtx{fi: fi, s: s}).Alloc + m.Scratch + m.Alloc
	if want := int64(24e6*(2+12)) + 2*int64(demosaic.TileBytes); peak != want {
		t.Errorf("24 MP RCD: peak %d, want %d", peak, want)
	}
	// A small image, where AHD's tile buffer outweighs the float copy.
	fi = FileInfo{Make: "Fujifilm", RawWidth: 200, RawHeight: 200, CFA: true, Width: 200, Height: 200}
	ahd := demosaicCost(memCtx{fi: fi, s: withDemosaic(s, "ahd"), threads: 2})
	if got := demosaicCost(memCtx{fi: fi, s: s, threads: 2}); got != ahd {
		t.Errorf("Fujifilm RCD cost %+v, want LibRaw's AHD %+v", got, ahd)
	}
}

// TestRCDDefault: RCD is the default demosaic (measured faster than AHD and
// better on every ground truth: docs/pipeline.md), a default decode of a
// Bayer file is RCD's, and the demosaic stage's version says the default
// changed (so outputs of the old default are stale).
func TestRCDDefault(t *testing.T) {
	if d := DefaultSettings().Demosaic; d != "rcd" {
		t.Fatalf("default demosaic %q, want rcd", d)
	}
	if demosaicStage.Version < 1 {
		t.Errorf("demosaic stage version %d: not bumped for the new default", demosaicStage.Version)
	}
	in := bayerSamples()[0]
	def, _, _, _ := decodeCamera(t, in, DefaultSettings())
	rcd, _, _, _ := decodeCamera(t, in, withDemosaic(DefaultSettings(), "rcd"))
	ahd, _, _, _ := decodeCamera(t, in, withDemosaic(DefaultSettings(), "ahd"))
	if !slices.Equal(def, rcd) || slices.Equal(def, ahd) {
		t.Error("a default decode is not RCD's")
	}
}

// TestRCDThreads: the RCD path runs on the conversion's thread count
// (ConvertOptions.Threads, as LibRaw's processing would) and releases the
// raw rows it passes.
func TestRCDThreads(t *testing.T) {
	in := bayerSamples()[1]
	s := DefaultSettings()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	hdr, err := ReadHeader(in)
	if err != nil {
		t.Fatal(err)
	}
	j := &job{in: in, settings: s, hdr: hdr, threads: 3}
	defer j.cleanup()
	for _, st := range PlanStages(InfoFromHeader(hdr), s).Steps {
		if st.Name == "demosaic" {
			break
		}
		if err := st.stage.run(context.Background(), j); err != nil {
			t.Fatalf("%s: %v", st.Name, err)
		}
	}
	c, _, why, err := j.rcdInput()
	if err != nil || why != "" {
		t.Fatalf("rcdInput: %q, %v", why, err)
	}
	if c.Threads != 3 {
		t.Errorf("RCD on %d threads, want the conversion's 3", c.Threads)
	}
	if c.Done == nil {
		t.Error("RCD does not release the raw rows")
	}
}

// TestBayerCFALevels: LibRaw's rules for the black levels, the white
// level and the multipliers (adjust_bl, adjust_maximum, scale_colors),
// on views the sample files do not cover: a 2×2 cblack pattern folded in
// by position (LibRaw files the second green's cell under colour 3, which
// its copy never reads), a 4×1 one kept per photosite less its smallest
// cell, the common part out of the white level, the data maximum, and the
// fallbacks.
func TestBayerCFALevels(t *testing.T) {
	pix := []uint16{600, 700, 800, 900, 1000, 1100, 1200, 1300}
	v := libraw.BayerView{Pix: pix, Stride: 4, W: 4, H: 2, Colour: [4]uint8{0, 1, 1, 2},
		Black: 100, CBlack: [4]float64{10, 20, 30, 40}, Pattern: []float64{1, 2, 3, 4}, PatternRows: 2, PatternCols: 2,
		Maximum: 4200, CamMul: [4]float64{2, 1, 1.5, 0}, PreMul: [4]float64{1.8, 1, 1.2, 1}}
	c, mul, err := bayerCFA(v, libraw.Params{WB: libraw.WBCamera})
	if err != nil {
		t.Fatal(err)
	}
	if mul != [4]float64{2, 1, 1.5, 1} {
		t.Errorf("multipliers %v, want cam_mul with G2 = G", mul)
	}
	// Per colour index (R, G, B, G2): 10+1, 20+2, 30+4 (blue at (1,1)),
	// 40+3 (the second green's cell, under colour 3, unread); common part
	// 11: black 111, white 4200 − 111.
	if want := [4]float32{111, 122, 122, 134}; c.Black != want || c.BlackPattern != nil {
		t.Errorf("blacks %v (pattern %v), want %v", c.Black, c.BlackPattern, want)
	}
	if want := float32(2 / 4089.0); math.Abs(float64(c.Scale[0]-want)) > 1e-9 || c.Colour != [4]uint8{0, 1, 1, 2} {
		t.Errorf("scale %v colours %v, want R %g", c.Scale, c.Colour, want)
	}
	// A 4×1 pattern stays per photosite, its smallest cell in the black.
	v.Pattern, v.PatternRows, v.PatternCols = []float64{5, 7, 6, 9}, 4, 1
	c, _, _ = bayerCFA(v, libraw.Params{WB: libraw.WBDaylight})
	if want := []float32{0, 2, 1, 4}; !slices.Equal(c.BlackPattern, want) || c.Black != [4]float32{115, 125, 125, 135} {
		t.Errorf("4×1 pattern: blacks %v pattern %v", c.Black, c.BlackPattern)
	}
	// The data maximum replaces the white level within 75..100 % of it.
	v.Pattern = nil
	v.AdjustMaximum, v.Maximum = 0.75, 1500
	c, _, _ = bayerCFA(v, libraw.Params{WB: libraw.WBUser, Multipliers: [4]float32{1, 1, 1, 1}})
	if want := float32(1 / 1170.0); math.Abs(float64(c.Scale[0]-want)) > 1e-9 { // 1300 − 130 (blue at (3,1)) of 1500 − 110
		t.Errorf("adjusted white: scale %g, want %g", c.Scale[0], want)
	}
	if _, _, err := bayerCFA(v, libraw.Params{WB: libraw.WBAuto}); !errors.Is(err, errLibRawWB) {
		t.Errorf("--wb auto: %v", err)
	}
	v.CamMul[0] = 0
	if _, _, err := bayerCFA(v, libraw.Params{WB: libraw.WBCamera}); !errors.Is(err, errLibRawWB) {
		t.Errorf("no cam_mul: %v", err)
	}
}

// TestRCDCancelled: a cancelled conversion stops RCD and the demosaic
// stage returns the context's error.
func TestRCDCancelled(t *testing.T) {
	in := bayerSamples()[1]
	s := DefaultSettings()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	hdr, err := ReadHeader(in)
	if err != nil {
		t.Fatal(err)
	}
	j := &job{in: in, settings: s, hdr: hdr}
	defer j.cleanup()
	for _, st := range PlanStages(InfoFromHeader(hdr), s).Steps {
		ctx := context.Background()
		if st.Name == "demosaic" {
			c, cancel := context.WithCancel(ctx)
			cancel()
			ctx = c
		}
		err := st.stage.run(ctx, j)
		if st.Name == "demosaic" {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled demosaic: %v, want context.Canceled", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", st.Name, err)
		}
	}
}
