package pipeline

import (
	"context"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// writeSyntheticOriented is writeSynthetic's chart at w×h stored with the
// EXIF Orientation o and DNG BaselineExposure be.
func writeSyntheticOriented(t testing.TB, dir string, w, h, o int, be float64) string {
	t.Helper()
	sp := syntheticSpec(w, h)
	sp.Orientation, sp.BaselineExposure = o, be
	p := filepath.Join(dir, fmt.Sprintf("synthetic-o%d-%dx%d.dng", o, w, h))
	if err := synthdng.WriteFile(p, sp); err != nil {
		t.Fatal(err)
	}
	return p
}

// maxCodeDiff is the largest difference of an R, G or B sample between a
// and b in code values of bits bits (-1 when their sizes differ).
func maxCodeDiff(a, b image.Image, bits int) int {
	if a.Bounds().Size() != b.Bounds().Size() {
		return -1
	}
	m := 0
	for y := range a.Bounds().Dy() {
		for x := range a.Bounds().Dx() {
			r1, g1, b1, _ := a.At(a.Bounds().Min.X+x, a.Bounds().Min.Y+y).RGBA()
			r2, g2, b2, _ := b.At(b.Bounds().Min.X+x, b.Bounds().Min.Y+y).RGBA()
			for _, d := range []int{int(r1) - int(r2), int(g1) - int(g2), int(b1) - int(b2)} {
				m = max(m, d, -d)
			}
		}
	}
	if bits == 8 {
		return (m + 128) / 257
	}
	return m
}

// TestFusedPassMatchesStages: the fused passes (runPass) write the same
// pixels, within one code value, as the same steps run one after the
// other over the whole image (ConvertOptions.unfused), over settings that
// exercise every kernel: exposure up and down (and BaselineExposure), the
// default curve and none (gamut compression on and off), the camera look
// (saturation, the look's matrix and curve) and the neutral one, every
// output space, 8 and 16 bits, the orientations (90° both ways,
// transposed, mirrored), several variants of one file (a JPEG and a TIFF16
// of one rendition, other spaces, resized ones, one with sharpening,
// which splits the pass). The fused run must have fused (its timings
// carry passes) and the reference must not.
func TestFusedPassMatchesStages(t *testing.T) {
	dir := t.TempDir()
	type tc struct {
		name  string
		in    string
		set   func(*Settings)
		specs []string
	}
	noop := func(*Settings) {}
	cases := []tc{
		{"single jpeg", writeSyntheticOriented(t, dir, 120, 80, 1, 0), noop, []string{"main=jpeg"}},
		{"single png8 90cw +ev", writeSyntheticOriented(t, dir, 120, 80, 6, 0.5), func(s *Settings) { s.Exposure = 1.2 },
			[]string{"main=png8"}},
		{"single tiff16 90ccw", writeSyntheticOriented(t, dir, 120, 80, 8, 0), noop, []string{"main=tiff16,space=adobergb"}},
		{"multi mirrored", writeSyntheticOriented(t, dir, 120, 80, 2, 0), func(s *Settings) { s.Exposure = -0.8 },
			[]string{"a=jpeg", "b=tiff16", "c=png8,space=adobergb", "d=png16,space=prophoto", "e=tiff8,space=rec2020",
				"f=png8,space=displayp3", "g=png8,size=50%,space=prophoto", "h=tiff16,size=40"}},
		{"tone none transposed", writeSyntheticOriented(t, dir, 120, 80, 5, 0), func(s *Settings) { s.Tone = ToneNone; s.Exposure = 0.7 },
			[]string{"a=png16", "b=png8,space=rec2020", "c=tiff16,space=prophoto,size=60"}},
		{"sharpen splits 180", writeSyntheticOriented(t, dir, 120, 80, 3, 0), noop,
			[]string{"a=png8,sharpen=1", "b=png16,space=adobergb", "c=tiff16,sharpen=0.5,size=50%"}},
		{"sharpen single 270 mirrored", writeSyntheticOriented(t, dir, 120, 80, 7, 0), noop, []string{"a=tiff16,sharpen=1,space=displayp3"}},
		{"look camera", filepath.Join(testdata, "raw", "canon_eos_6d.dng"), func(s *Settings) { s.Look = LookCamera },
			[]string{"a=png8", "b=tiff16,space=prophoto", "c=png16,size=50%"}},
		{"look neutral", filepath.Join(testdata, "raw", "canon_eos_6d.dng"), func(s *Settings) { s.Look = LookNeutral; s.Exposure = -1 },
			[]string{"a=png8,space=adobergb"}},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			s := DefaultSettings()
			c.set(&s)
			vs := variants(t, c.specs...)
			s.Variants = vs
			run := func(sub string, unfused bool) ([]string, Result) {
				d := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"), sub)
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
				var outs []OutputSpec
				var paths []string
				for _, v := range vs {
					p := filepath.Join(d, v.Name+v.Ext())
					outs = append(outs, OutputSpec{Variant: v, Path: p})
					paths = append(paths, p)
				}
				res, err := convertFile(context.Background(), c.in, outs, s, ConvertOptions{unfused: unfused})
				if err != nil {
					t.Fatal(err)
				}
				return paths, res
			}
			fused, fres := run("fused", false)
			ref, rres := run("stages", true)
			if !slices.ContainsFunc(fres.Timings, func(st StageTiming) bool { return st.Pass > 0 }) {
				t.Errorf("fused run has no fused pass: %+v", fres.Timings)
			}
			if slices.ContainsFunc(rres.Timings, func(st StageTiming) bool { return st.Pass > 0 }) {
				t.Errorf("reference run fused: %+v", rres.Timings)
			}
			if !slices.Equal(timingNames(fres), timingNames(rres)) {
				t.Errorf("steps differ:\n fused  %q\n stages %q", timingNames(fres), timingNames(rres))
			}
			for i, v := range vs {
				bits := 8
				if bits16(v.Format) {
					bits = 16
				}
				a, b := decodeImage(t, fused[i]), decodeImage(t, ref[i])
				if d := maxCodeDiff(a, b, bits); d < 0 || d > 1 {
					t.Errorf("%s (%s, %d bits): fused differs from the stages run one by one by %d code values (-1: size %v vs %v)",
						v.Name, v.Format, bits, d, a.Bounds().Size(), b.Bounds().Size())
				}
			}
		})
	}
}
