package pipeline

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/cache"
	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// opcodeSettings: linear-light comparisons of a flat field (no tone
// curve, no anchoring), 16-bit TIFF.
func opcodeSettings() Settings {
	s := referenceSettings()
	s.Format = "tiff16"
	return s
}

// flatness converts spec's DNG with s and returns the largest deviation
// of any channel from its own mean, relative to that mean, over the
// output in linear light (the sRGB encoding undone), leaving out a border
// of 4 pixels where the demosaic sees the edge.
func flatness(t *testing.T, spec synthdng.Spec, s Settings) (float64, Result) {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "flat.dng")
	if err := synthdng.WriteFile(in, spec); err != nil {
		t.Fatal(err)
	}
	out, res := convert(t, in, dir, s)
	return flatnessOf(t, out), res
}

// flatnessOf is flatness's measure of the image file out.
func flatnessOf(t *testing.T, out string) float64 {
	img := decodeImage(t, out)
	b := img.Bounds()
	const border = 4
	var sum [3]float64
	n := 0
	lin := func(x, y int) [3]float64 {
		r, g, bl := rgb16(img, x, y)
		return [3]float64{float64(colour.SRGB16ToLinear(r)), float64(colour.SRGB16ToLinear(g)), float64(colour.SRGB16ToLinear(bl))}
	}
	for y := border; y < b.Dy()-border; y++ {
		for x := border; x < b.Dx()-border; x++ {
			p := lin(x, y)
			for c := range 3 {
				sum[c] += p[c]
			}
			n++
		}
	}
	worst := 0.0
	for y := border; y < b.Dy()-border; y++ {
		for x := border; x < b.Dx()-border; x++ {
			p := lin(x, y)
			for c := range 3 {
				mean := sum[c] / float64(n)
				worst = max(worst, math.Abs(p[c]/mean-1))
			}
		}
	}
	return worst
}

// TestOpcodeVignetteFlat: a flat field darkened towards the corners with
// the FixVignetteRadial opcode that undoes it (OpcodeList3) comes out
// flat within 2 %; with --dng-opcodes off it is not.
func TestOpcodeVignetteFlat(t *testing.T) {
	dev, res := flatness(t, synthdng.FlatVignetted(), opcodeSettings())
	t.Logf("vignetted flat field, opcodes on: largest deviation %.2f %%", 100*dev)
	if dev > 0.02 {
		t.Errorf("deviation %.2f %% from flat, want at most 2 %%", 100*dev)
	}
	if res.Opcodes == nil || !slices.Equal(res.Opcodes.Applied, []string{"FixVignetteRadial (list 3)"}) || len(res.Opcodes.NotApplied) != 0 {
		t.Errorf("Result.Opcodes %+v", res.Opcodes)
	}
	off := opcodeSettings()
	off.DNGOpcodes = OpcodesOff
	dev, res = flatness(t, synthdng.FlatVignetted(), off)
	t.Logf("opcodes off: %.2f %%", 100*dev)
	if dev < 0.2 {
		t.Errorf("with --dng-opcodes off the field deviates only %.2f %%: the test cannot tell", 100*dev)
	}
	if res.Opcodes != nil && len(res.Opcodes.Applied) != 0 {
		t.Errorf("opcodes off applied %v", res.Opcodes.Applied)
	}
}

// TestOpcodeGainMapFlat: a flat field divided by a smooth gain, with
// GainMaps in OpcodeList2 (one per Bayer site) restoring it, comes out
// flat within 2 %, also at half size (the raw data is full size there).
func TestOpcodeGainMapFlat(t *testing.T) {
	for _, half := range []bool{false, true} {
		s := opcodeSettings()
		s.HalfSize = half
		dev, res := flatness(t, synthdng.FlatGainMapped(), s)
		t.Logf("gain-mapped flat field (half size %v): largest deviation %.2f %%", half, 100*dev)
		if dev > 0.02 {
			t.Errorf("half size %v: deviation %.2f %% from flat, want at most 2 %%", half, 100*dev)
		}
		want := slices.Repeat([]string{"GainMap (list 2)"}, 4)
		if res.Opcodes == nil || !slices.Equal(res.Opcodes.Applied, want) {
			t.Errorf("Result.Opcodes %+v", res.Opcodes)
		}
	}
	s := opcodeSettings()
	s.DNGOpcodes = OpcodesOff
	if dev, _ := flatness(t, synthdng.FlatGainMapped(), s); dev < 0.15 {
		t.Errorf("with --dng-opcodes off the field deviates only %.2f %%: the test cannot tell", 100*dev)
	}
}

// TestOpcodeNotApplied: opcodes rawbatch does not apply are named in the
// result and a warning, and the file converts.
func TestOpcodeNotApplied(t *testing.T) {
	list := synthdng.OpcodeList(synthdng.Opcode{ID: 99, Params: []byte{1, 2, 3, 4}},
		synthdng.Opcode{ID: 8, Flags: 1, Params: make([]byte, 36)})
	dev, res := flatness(t, synthdng.FlatWithOpcode(list), opcodeSettings())
	if dev > 0.02 {
		t.Errorf("flat field deviates %.2f %%", 100*dev)
	}
	if res.Opcodes == nil || !slices.Equal(res.Opcodes.NotApplied, []string{"opcode 99 (list 3)", "MapPolynomial (list 3)"}) {
		t.Fatalf("Result.Opcodes %+v", res.Opcodes)
	}
	w := strings.Join(res.Warnings, "\n")
	if !strings.Contains(w, "DNG OpcodeList3: opcode 99 not applied") || !strings.Contains(w, "DNG OpcodeList3: MapPolynomial not applied") {
		t.Errorf("warnings %q", w)
	}
}

// TestOpcodeLensFlag: the opcode stages tell the lens stage that the
// file's own lens corrections were applied.
func TestOpcodeLensFlag(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "v.dng")
	if err := synthdng.WriteFile(in, synthdng.FlatVignetted()); err != nil {
		t.Fatal(err)
	}
	h, err := ReadHeader(in)
	if err != nil {
		t.Fatal(err)
	}
	if h.OpcodeLists == nil || h.OpcodeLists.Length[2] == 0 || h.OpcodeLists.Length[0] != 0 {
		t.Fatalf("header's opcode lists %+v", h.OpcodeLists)
	}
	j := &job{in: in, hdr: h, settings: opcodeSettings(), colors: 3, img: Image{W: 8, H: 6}, camera: make([]float32, 8*6*3)}
	if err := stageOpcodes(t.Context(), j); err != nil {
		t.Fatal(err)
	}
	if !j.lensByOpcodes {
		t.Error("lensByOpcodes not set after FixVignetteRadial")
	}
}

// TestOpcodeStageCache: the stage cache holds the image after OpcodeList1/2
// and before OpcodeList3 (docs/variants.md): a conversion from a cache
// entry is as flat as the decoded one, for a GainMap of list 2 (in the
// cached image) and a FixVignetteRadial of list 3 (applied again to the
// cached image, which stays unchanged); --dng-opcodes is in the key.
func TestOpcodeStageCache(t *testing.T) {
	for name, spec := range map[string]synthdng.Spec{"gainmap": synthdng.FlatGainMapped(), "vignette": synthdng.FlatVignetted()} {
		dir := t.TempDir()
		c, err := cache.Open(filepath.Join(dir, "cache"), 0)
		if err != nil {
			t.Fatal(err)
		}
		in := filepath.Join(dir, name+".dng")
		if err := synthdng.WriteFile(in, spec); err != nil {
			t.Fatal(err)
		}
		opts := &CacheOptions{Cache: c, Keep: true}
		for run := range 3 {
			out := filepath.Join(dir, fmt.Sprintf("%d.tif", run))
			res, err := ConvertVariants(context.Background(), in, []OutputSpec{{Variant: Variant{Name: "main", Format: "tiff16", Space: "srgb"}.Normal(), Path: out}}, opcodeSettings(), opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.FromCache != (run > 0) {
				t.Fatalf("%s run %d: from cache %v", name, run, res.FromCache)
			}
			if dev := flatnessOf(t, out); dev > 0.02 {
				t.Errorf("%s run %d (from cache %v): deviation %.2f %%", name, run, res.FromCache, 100*dev)
			}
			if res.Opcodes == nil || len(res.Opcodes.Applied) == 0 || len(res.Opcodes.NotApplied) != 0 {
				t.Errorf("%s run %d: %+v", name, run, res.Opcodes)
			}
		}
	}
	off := opcodeSettings()
	off.DNGOpcodes = OpcodesOff
	if CacheKey("xxh3:0", opcodeSettings()) == CacheKey("xxh3:0", off) {
		t.Error("--dng-opcodes is not in the stage cache key")
	}
}

// TestOpcodeLossyDNGByLibRaw: the Canon 6D's lossy DNG has three
// MapPolynomials in OpcodeList2, which LibRaw's lossy-DNG decoder applies
// as its curve: reported as applied by LibRaw, neither applied again nor
// named as not applied.
func TestOpcodeLossyDNGByLibRaw(t *testing.T) {
	in := filepath.Join(testdata, "raw", "canon_eos_6d.dng")
	_, res := convert(t, in, t.TempDir(), opcodeSettings())
	want := slices.Repeat([]string{"MapPolynomial (list 2)"}, 3)
	if res.Opcodes == nil || !slices.Equal(res.Opcodes.ByLibRaw, want) || len(res.Opcodes.NotApplied)+len(res.Opcodes.Applied) != 0 {
		t.Fatalf("Result.Opcodes %+v", res.Opcodes)
	}
	for _, w := range res.Warnings {
		if strings.Contains(w, "opcode") || strings.Contains(w, "Opcode") {
			t.Errorf("warning %q", w)
		}
	}
}

// TestEstimateCalibrationOpcodes: TestEstimateCalibration's check for a
// 12 MP DNG with GainMaps in OpcodeList2 (the CFA copy of opcodes-raw) and
// a WarpRectilinear and a FixVignetteRadial in OpcodeList3 (the warp's
// second camera image): measured peak within 0.8–1.25× of the estimate.
func TestEstimateCalibrationOpcodes(t *testing.T) {
	if testing.Short() {
		t.Skip("measures conversions in child processes")
	}
	const w, h = 4240, 2832
	var ops []synthdng.Opcode
	for site := range 4 {
		ops = append(ops, synthdng.GainMapOpcode(synthdng.GainMapArea{Top: uint32(site / 2), Left: uint32(site % 2), Bottom: h, Right: w, Planes: 1, RowPitch: 2, ColPitch: 2},
			2, 2, 1, 1, 0, 0, 1, []float32{1.2, 1, 1, 1.2}))
	}
	list3 := synthdng.OpcodeList(synthdng.WarpOpcode([][6]float64{{0.98, 0.02, 0, 0, 0, 0}}, 0.5, 0.5),
		synthdng.VignetteOpcode([5]float64{0.3}, 0.5, 0.5))
	in := filepath.Join(t.TempDir(), "opcodes-12mp.dng")
	err := synthdng.WriteFile(in, synthdng.Spec{Width: w, Height: h, BlackLevel: 512, WhiteLevel: 16383,
		Scene: func(x, y, c int) float64 { return 0.1 + 0.3*float64((x/64+y/64)%2) + 0.05*float64(c) },
		Tags: []synthdng.Tag{synthdng.OpcodeListTag(tifftag.OpcodeList2, synthdng.OpcodeList(ops...)),
			synthdng.OpcodeListTag(tifftag.OpcodeList3, list3)}})
	if err != nil {
		t.Fatal(err)
	}
	m := settingsMatrix()
	calibrate(t, os.Stdout, []string{in}, []Settings{m[0], m[2], m[4]})
}

// TestOpcodeWarpStraightLines: a grid bent by barrel distortion, with the
// WarpRectilinear in OpcodeList3 that undoes it, comes out with straight
// lines: each vertical line's centre (the darkness-weighted centroid in
// each row, away from the horizontal lines) lies within 0.5 px of its
// ideal column, and each horizontal line's within 0.5 px of its row;
// without the opcode the lines bow by pixels.
func TestOpcodeWarpStraightLines(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "grid.dng")
	if err := synthdng.WriteFile(in, synthdng.WarpedGrid()); err != nil {
		t.Fatal(err)
	}
	measure := func(s Settings) float64 {
		out, res := convert(t, in, t.TempDir(), s)
		if s.dngOpcodes() == OpcodesOn && (res.Opcodes == nil || !slices.Equal(res.Opcodes.Applied, []string{"WarpRectilinear (list 3)"})) {
			t.Errorf("Result.Opcodes %+v", res.Opcodes)
		}
		img := decodeImage(t, out)
		lum := func(x, y int) float64 {
			r, g, b := rgb16(img, x, y)
			return float64(colour.SRGB16ToLinear(r)+colour.SRGB16ToLinear(g)+colour.SRGB16ToLinear(b)) / 3
		}
		const P, half = synthdng.GridPitch, synthdng.GridPitch / 2
		nearLine := func(v int) bool { d := (v + half) % P; return d < 6 || d > P-6 }
		worst := 0.0
		// centroid of darkness along one line across its ideal position c
		// (pixel centres at i+0.5), sampling pixel at(i).
		centroid := func(c float64, at func(i int) float64) float64 {
			var sw, sx float64
			for i := int(c) - 8; i <= int(c)+8; i++ {
				w := max(0, 0.4-at(i))
				sw += w
				sx += w * (float64(i) + 0.5)
			}
			return sx / sw
		}
		b := img.Bounds()
		for lx := half + P; lx < b.Dx()-P; lx += P {
			for y := 4; y < b.Dy()-4; y++ {
				if nearLine(y) {
					continue
				}
				worst = max(worst, math.Abs(centroid(float64(lx), func(i int) float64 { return lum(i, y) })-float64(lx)))
			}
		}
		for ly := half + P; ly < b.Dy()-P; ly += P {
			for x := 4; x < b.Dx()-4; x++ {
				if nearLine(x) {
					continue
				}
				worst = max(worst, math.Abs(centroid(float64(ly), func(i int) float64 { return lum(x, i) })-float64(ly)))
			}
		}
		return worst
	}
	on := measure(opcodeSettings())
	off := opcodeSettings()
	off.DNGOpcodes = OpcodesOff
	bent := measure(off)
	t.Logf("grid lines' largest distance from their ideal position: %.2f px with the warp, %.2f px without", on, bent)
	if on > 0.5 {
		t.Errorf("lines %.2f px from straight with WarpRectilinear, want at most 0.5", on)
	}
	if bent < 2 {
		t.Errorf("without the warp the lines are only %.2f px off: the test cannot tell", bent)
	}
}

// TestOpcodeGainMapList1: the same GainMaps in OpcodeList1 (the raw data
// as read: the gain scales the value with its black level, here 0) flatten
// the field too.
func TestOpcodeGainMapList1(t *testing.T) {
	spec := synthdng.FlatGainMapped()
	spec.BlackLevel = 0
	spec.Tags[0].ID = tifftag.OpcodeList1
	dev, res := flatness(t, spec, opcodeSettings())
	t.Logf("gain-mapped flat field, OpcodeList1: largest deviation %.2f %%", 100*dev)
	if dev > 0.02 {
		t.Errorf("deviation %.2f %% from flat, want at most 2 %%", 100*dev)
	}
	if res.Opcodes == nil || !slices.Equal(res.Opcodes.Applied, slices.Repeat([]string{"GainMap (list 1)"}, 4)) {
		t.Errorf("Result.Opcodes %+v", res.Opcodes)
	}
}

// TestOpcodeVignetteCropped: OpcodeList3 refers to the image before the
// DNG's DefaultCrop (DNG §6: list 3 runs before the crop), so with
// --crop camera cutting 16 columns off the left only, the vignette's
// optical centre stays where the opcode puts it and the field comes out
// flat; taken relative to the cropped image it is off by 8 pixels.
func TestOpcodeVignetteCropped(t *testing.T) {
	spec := synthdng.FlatVignetted()
	spec.DefaultCropOrigin = [2]int{16, 0}
	spec.DefaultCropSize = [2]int{synthdng.FlatW - 16, synthdng.FlatH - 4}
	s := opcodeSettings()
	s.Crop = CropCamera
	dev, res := flatness(t, spec, s)
	t.Logf("vignetted flat field cropped by 16 columns on the left: largest deviation %.2f %% (crop %+v)", 100*dev, res.Crop)
	if res.Crop == nil || res.Crop.X != 16 || res.Crop.W != synthdng.FlatW-16 {
		t.Fatalf("the DefaultCrop was not applied: %+v", res.Crop)
	}
	if dev > 0.02 {
		t.Errorf("deviation %.2f %% from flat, want at most 2 %%", 100*dev)
	}
}
