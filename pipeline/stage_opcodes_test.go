package pipeline

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
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
	return worst, res
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
