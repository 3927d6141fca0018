package highlight_test

import (
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/highlight"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// clipDNG writes the synthetic highlight DNG (synthdng.ClippedHalf):
// 14-bit (white 16383, black 512), the right half saturated at 13500 in
// every channel, 20 hot photosites at 16383 in the left half (when hot),
// the left half a dim warm gradient, as-shot multipliers 2.0 / 1.0 / 1.4.
func clipDNG(t *testing.T, hot bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "clip.dng")
	err := synthdng.WriteFile(path, synthdng.ClippedHalf(hot))
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// openRaw opens path with LibRaw on the calling goroutine's OS thread,
// which it locks; done closes the handle and unlocks the thread.
func openRaw(t *testing.T, path string) (h *libraw.Handle, done func()) {
	t.Helper()
	runtime.LockOSThread()
	h, err := libraw.New()
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	done = func() {
		h.Close()
		runtime.UnlockOSThread()
	}
	if err := h.Open(path); err != nil {
		done()
		t.Fatal(err)
	}
	return h, done
}

// decodeClip decodes path through LibRaw with camera white balance and
// highlight mode 0 (clip), with the data-derived white level applied
// (fix) or LibRaw's own; it returns the camera RGB (W×H×3, white-balanced,
// in [0,1]) and the rescale used.
func decodeClip(t *testing.T, path string, fix bool) ([]float32, int, int, highlight.Rescale) {
	t.Helper()
	h, done := openRaw(t, path)
	defer done()
	if err := h.Unpack(); err != nil {
		t.Fatal(err)
	}
	var r highlight.Rescale
	if fix {
		r = whiteLevelFix(t, h)
	}
	if err := h.Process(libraw.Params{Demosaic: libraw.AHD, WB: libraw.WBCamera}); err != nil {
		t.Fatal(err)
	}
	pix, w, hh, colors, err := h.CopyImage(nil)
	if err != nil || colors != 3 {
		t.Fatalf("CopyImage: %v, %d colours", err, colors)
	}
	return pix, w, hh, r
}

// whiteLevelFix is what a demosaic stage does between Unpack and Process
// (docs/highlights.md).
func whiteLevelFix(t *testing.T, h *libraw.Handle) highlight.Rescale {
	t.Helper()
	lv, err := h.Levels()
	if err != nil {
		t.Fatal(err)
	}
	hist, err := h.RawHistogram()
	if err != nil {
		t.Fatal(err)
	}
	r := highlight.RescaleFromHistogram(hist, lv.White, lv.Black)
	if err := h.RescaleRaw(0, r.Black, r.Gain, r.Clip, r.White); err != nil {
		t.Fatal(err)
	}
	return r
}

// clippedMeans returns the channel means of the clipped right half, 8
// pixels away from its edges.
func clippedMeans(pix []float32, w, h int) (m [3]float64) {
	n := 0
	for y := 8; y < h-8; y++ {
		for x := w/2 + 8; x < w-8; x++ {
			for c := range 3 {
				m[c] += float64(pix[(y*w+x)*3+c])
			}
			n++
		}
	}
	for c := range m {
		m[c] /= float64(n)
	}
	return m
}

func spread(m [3]float64) float64 {
	lo, hi := math.Min(m[0], math.Min(m[1], m[2])), math.Max(m[0], math.Max(m[1], m[2]))
	return hi/lo - 1
}

func TestClippedHalfNeutralAfterWhiteLevelFix(t *testing.T) {
	for _, hot := range []bool{true, false} {
		path := clipDNG(t, hot)
		before, w, h, _ := decodeClip(t, path, false)
		after, w2, h2, r := decodeClip(t, path, true)
		if w != synthdng.ClippedW || h != synthdng.ClippedH || w2 != w || h2 != h {
			t.Fatalf("decoded %dx%d and %dx%d, want %dx%d", w, h, w2, h2, synthdng.ClippedW, synthdng.ClippedH)
		}
		mb, ma := clippedMeans(before, w, h), clippedMeans(after, w, h)
		t.Logf("hot=%v: LibRaw's white level: clipped half R,G,B %.4f %.4f %.4f (spread %.1f %%); data white level %d (gains %.4f): %.4f %.4f %.4f (spread %.2f %%)",
			hot, mb[0], mb[1], mb[2], 100*spread(mb), r.White, r.Gain, ma[0], ma[1], ma[2], 100*spread(ma))
		if s := spread(ma); s > 0.01 {
			t.Errorf("hot=%v: clipped half channel means %v differ by %.2f %%, want within 1 %%", hot, ma, 100*s)
		}
		// Both modes of highlight reconstruction keep it neutral.
		for name, fn := range map[string]func([]float32, int, int, float32) []float32{
			"clip":        highlight.Clip,
			"reconstruct": highlight.Reconstruct,
		} {
			out := fn(append([]float32(nil), after...), w, h, highlight.DefaultThreshold)
			if s := spread(clippedMeans(out, w, h)); s > 0.01 {
				t.Errorf("hot=%v, %s: clipped half channel means differ by %.2f %%, want within 1 %%", hot, name, 100*s)
			}
		}
	}
}

func TestCanonD30PileFromTheData(t *testing.T) {
	path := filepath.Join("..", "..", "testdata", "raw", "canond30_CRW.CRW")
	h, done := openRaw(t, path)
	defer done()
	if err := h.Unpack(); err != nil {
		t.Fatal(err)
	}
	lv, err := h.Levels()
	if err != nil {
		t.Fatal(err)
	}
	hist, _ := h.RawHistogram()
	levels, found := highlight.WhiteLevels(hist, lv.White, lv.Black)
	t.Logf("D30: tagged white %d, black %v, data maximum %d; data white levels %v found %v", lv.White, lv.Black, lv.DataMaximum, levels, found)
	if lv.DataMaximum != 3868 {
		t.Errorf("data maximum %d, want 3868 (the file's own data)", lv.DataMaximum)
	}
	for k := range 4 {
		if !found[k] || levels[k] < 3790 || levels[k] > 3815 {
			t.Errorf("colour %d: white level %d (found %v), want the pile at about 3800", k, levels[k], found[k])
		}
	}
}

// sensorClipped returns, per pixel of the visible area, whether the raw
// photosites of its 3×3 neighbourhood are all at or above their channel's
// data white level: clipped on the sensor, whatever the decode does.
func sensorClipped(t *testing.T, path string) []bool {
	t.Helper()
	h, done := openRaw(t, path)
	defer done()
	if err := h.Unpack(); err != nil {
		t.Fatal(err)
	}
	raw, w, hh, err := h.CopyRaw(nil)
	if err != nil {
		t.Fatal(err)
	}
	pat, _ := h.CFAPattern(48, 48)
	lv, _ := h.Levels()
	hist, _ := h.RawHistogram()
	levels, _ := highlight.WhiteLevels(hist, lv.White, lv.Black)
	mask := make([]bool, w*hh)
	for y := 1; y+1 < hh; y++ {
		for x := 1; x+1 < w; x++ {
			all := true
			for dy := -1; dy <= 1 && all; dy++ {
				for dx := -1; dx <= 1; dx++ {
					k := pat[((y+dy)%48)*48+(x+dx)%48]
					if int(raw[(y+dy)*w+x+dx]) < levels[k] {
						all = false
						break
					}
				}
			}
			mask[y*w+x] = all
		}
	}
	return mask
}

// TestCanonD30ClippedGreen: where the D30's sensor clipped, the channels
// end unequal with LibRaw's white level (its single brightest value, 3868;
// with LibRaw's grey-world white balance here red and blue stay below 1),
// and all at 1 with the pile's level.
func TestCanonD30ClippedGreen(t *testing.T) {
	path := filepath.Join("..", "..", "testdata", "raw", "canond30_CRW.CRW")
	mask := sensorClipped(t, path)
	before, _, _, _ := decodeClip(t, path, false)
	after, _, _, r := decodeClip(t, path, true)
	var mb, ma [3]float64
	n := 0
	for i, m := range mask {
		if m {
			for c := range 3 {
				mb[c] += float64(before[3*i+c])
				ma[c] += float64(after[3*i+c])
			}
			n++
		}
	}
	if n < 1000 {
		t.Fatalf("only %d clipped pixels", n)
	}
	for c := range 3 {
		mb[c] /= float64(n)
		ma[c] /= float64(n)
	}
	t.Logf("D30, %d pixels clipped on the sensor: R,G,B %.4f %.4f %.4f with LibRaw's white level (spread %.2f %%), %.4f %.4f %.4f with the data's %d (spread %.2f %%)",
		n, mb[0], mb[1], mb[2], 100*spread(mb), ma[0], ma[1], ma[2], r.White, 100*spread(ma))
	if s := spread(ma); s > 0.01 {
		t.Errorf("clipped channel means %v differ by %.2f %%, want within 1 %%", ma, 100*s)
	}
}

// TestCanonD30AutoWB measures the white balance of the D30 CRW, shot in
// auto white balance (cam_mul[0] = -1): LibRaw's grey-world fallback,
// ChooseWB's, and the camera's own Tungsten preset (which the camera's
// JPEG is close to).
func TestCanonD30AutoWB(t *testing.T) {
	path := filepath.Join("..", "..", "testdata", "raw", "canond30_CRW.CRW")
	h, done := openRaw(t, path)
	defer done()
	in := h.Info()
	tungsten := h.PresetMultipliers(libraw.WBITungsten)
	daylight := h.PresetMultipliers(libraw.WBIDaylight)
	if err := h.Unpack(); err != nil {
		t.Fatal(err)
	}
	raw, w, hh, err := h.CopyRaw(nil)
	if err != nil {
		t.Fatal(err)
	}
	pat, err := h.CFAPattern(48, 48)
	if err != nil {
		t.Fatal(err)
	}
	lv, _ := h.Levels()
	hist, _ := h.RawHistogram()
	levels, _ := highlight.WhiteLevels(hist, lv.White, lv.Black)
	white := float64(min(levels[0], levels[1], levels[2], levels[3]))
	colour := func(r, c int) int { return int(pat[(r%48)*48+c%48]) }
	var camXYZ [3][3]float64
	for i := range 3 {
		camXYZ[i] = in.CamXYZ[i]
	}
	wb := highlight.ChooseWB(in.CamMul, camXYZ, func() ([3]float64, bool) {
		return highlight.EstimateIlluminant(highlight.CFAQuads(raw, w, hh, colour, lv.Black, white, 1))
	})
	if err := h.Process(libraw.Params{Demosaic: libraw.Linear, WB: libraw.WBCamera}); err != nil {
		t.Fatal(err)
	}
	grey := h.AppliedMultipliers()
	ratio := func(m [4]float64) string {
		return fmt.Sprintf("R/G %.2f B/G %.2f", m[0]/m[1], m[2]/m[1])
	}
	t.Logf("D30: cam_mul %v; LibRaw's fallback (grey world) %s; ours %s (%s; illuminant %.0f K, corrected to %.0f K); camera Tungsten preset %s, Daylight preset %s",
		in.CamMul, ratio(grey), ratio(wb.Multipliers), wb.Reason, wb.EstimatedCCT, wb.CorrectedCCT, ratio(tungsten), ratio(daylight))
	if wb.Source != "auto" || !strings.Contains(wb.Reason, "the file has none") {
		t.Errorf("white balance %+v, want auto because the file has none", wb)
	}
	// Ours keeps warmth that grey world removes: less blue gain.
	if !(wb.Multipliers[2]/wb.Multipliers[1] < grey[2]/grey[1]) {
		t.Errorf("our B/G %.2f is not below grey world's %.2f", wb.Multipliers[2]/wb.Multipliers[1], grey[2]/grey[1])
	}
	// And it lies nearer the camera's Tungsten preset (what its JPEG used)
	// than grey world, in log(R/G), log(B/G).
	dist := func(m [4]float64) float64 {
		return math.Hypot(math.Log(m[0]/m[1]/(tungsten[0]/tungsten[1])), math.Log(m[2]/m[1]/(tungsten[2]/tungsten[1])))
	}
	if tungsten[1] == 0 {
		t.Fatal("the file has no Tungsten preset")
	}
	if dO, dG := dist(wb.Multipliers), dist(grey); !(dO < dG) {
		t.Errorf("distance to the Tungsten preset: ours %.3f, grey world %.3f", dO, dG)
	}
}
