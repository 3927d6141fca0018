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

	"github.com/rawbatch/rawbatch/pipeline/encode"
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
				res, err := ConvertOutputs(context.Background(), c.in, outs, s, ConvertOptions{unfused: unfused})
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
			fi, err := ReadInfo(c.in)
			if err != nil {
				t.Fatal(err)
			}
			for i, st := range PlanStages(fi, s).Steps {
				if i < len(fres.Timings) && fres.Timings[i].Pass != st.Pass {
					t.Errorf("step %s ran in pass %d, planned in %d", st.Name, fres.Timings[i].Pass, st.Pass)
				}
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

// TestFusedPassOtherChannels: a monochrome or four-channel camera image
// runs its camera-matrix step alone (cameraMatrixRow refuses it) and the
// rest of the pass still fuses: its pixels are the steps' run one by one,
// within one code value, for 8 and 16 bits and a rotated view.
func TestFusedPassOtherChannels(t *testing.T) {
	const w, h = 37, 23
	for _, nc := range []int{1, 4} {
		for _, spec := range []string{"a=png8,space=adobergb", "a=png16"} {
			s := DefaultSettings()
			s.Exposure = 0.6
			vs := variants(t, spec)
			plan := PlanVariants(w, h, vs, s)
			var steps []Step
			for _, st := range plan.Steps {
				if st.Stage == cameraMatrixStage.Name || len(steps) > 0 && st.Stage != encodeStage.Name {
					steps = append(steps, st)
				}
			}
			if len(steps) != 6 || steps[0].Pass == 0 || steps[0].Pass != steps[5].Pass {
				t.Fatalf("steps %+v", steps)
			}
			newJob := func() *job {
				j := &job{settings: s, colors: nc, img: Image{W: w, H: h}, camera: make([]float32, w*h*nc)}
				j.info.Flip = 6
				for k := range 3 {
					j.info.RGBCam[k][k] = 1
				}
				j.info.RGBCam[0][3] = 0.2
				for i := range j.camera {
					j.camera[i] = float32(i%97) / 60
				}
				j.outs = []*variantJob{{spec: OutputSpec{Variant: vs[0]}}}
				return j
			}
			fj, sj := newJob(), newJob()
			tims, err := fj.runPass(context.Background(), steps, fj.outs)
			if err != nil {
				t.Fatal(err)
			}
			if tims[0].Pass != 0 || tims[1].Pass == 0 || tims[5].Pass == 0 {
				t.Errorf("%d channels: camera-matrix should run alone, the rest fused: %+v", nc, tims)
			}
			for _, st := range steps {
				sj.cur = nil
				if st.v >= 0 {
					sj.cur = sj.outs[0]
				}
				if err := st.stage.run(context.Background(), sj); err != nil {
					t.Fatal(err)
				}
			}
			a, b := fj.outs[0].quant, sj.outs[0].quant
			bits := 8
			if bits16(vs[0].Format) {
				bits = 16
			}
			if a == nil || b == nil {
				t.Fatalf("no quantised image: %v %v", a == nil, b == nil)
			}
			if d := maxCodeDiff(a, b, bits); d < 0 || d > 1 {
				t.Errorf("%d channels, %s: fused differs from the steps one by one by %d", nc, spec, d)
			}
		}
	}
}

// TestEstimateFusedRender: the estimate counts what the fused passes
// allocate: for a JPEG a band of quantised rows, not a 4-byte-per-pixel
// image, with the float image let go at encode; no full-size variant's
// output-space copies the shared image, and the last full-size variant
// lets it go; a sharpened variant (not fused) still copies it when a
// later variant reads it.
func TestEstimateFusedRender(t *testing.T) {
	fi := FileInfo{RawWidth: 6000, RawHeight: 4000, Width: 6000, Height: 4000, CFA: true}
	const px = 6000 * 4000
	s := DefaultSettings()
	m := EstimateMemory(fi, s, 1)
	if q := stepMemory(m, "quantise"); q.Alloc != encode.OverlapBytes(64, 3*6000) || q.Free != 0 {
		t.Errorf("single JPEG quantise %+v, want the encoder's queue of bands of rows and nothing freed", q)
	}
	if e := stepMemory(m, "encode"); e.Free != 12*px {
		t.Errorf("single JPEG encode %+v, want the float image freed", e)
	}
	s.Variants = variants(t, "a=jpeg", "b=png16,space=adobergb", "c=tiff16,space=prophoto", "d=png8")
	m = EstimateMemory(fi, s, 1)
	var freed int64
	for _, n := range []string{"a", "b", "c", "d"} {
		if o := stepMemory(m, n+"/output-space"); o.Alloc != 0 {
			t.Errorf("%s/output-space %+v: a fused variant makes no image", n, o)
		}
		freed += stepMemory(m, n+"/quantise").Free + stepMemory(m, n+"/encode").Free
	}
	// Quantised images freed (b's 8, d's 4 bytes per pixel) and the shared
	// float image once.
	if want := int64(8+4+12) * px; freed != want {
		t.Errorf("variants free %d bytes, want %d", freed, want)
	}
	s.Variants = variants(t, "a=png8,sharpen=1", "b=png8")
	m = EstimateMemory(fi, s, 1)
	if o := stepMemory(m, "a/output-space"); o.Alloc != 12*px {
		t.Errorf("sharpened a/output-space %+v, want its own copy", o)
	}
	if o := stepMemory(m, "b/output-space"); o.Alloc != 0 {
		t.Errorf("b/output-space %+v, want none", o)
	}
}
