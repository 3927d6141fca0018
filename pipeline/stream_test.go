package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// writeClipped writes syntheticSpec's chart at w×h with orientation o and
// bright discs, clipped in the raw data, whose rows cross the borders of
// the bands the tests stream in (rows 37, 64, 128 and near the bottom);
// with crop, a DNG DefaultCrop at an odd corner, of odd size.
func writeClipped(t testing.TB, dir string, w, h, o int, preview bool, crop ...bool) string {
	t.Helper()
	sp := syntheticSpec(w, h)
	sp.Orientation, sp.ThumbnailIFD0 = o, preview
	cropped := len(crop) > 0 && crop[0]
	if cropped {
		sp.DefaultCropOrigin, sp.DefaultCropSize = [2]int{7, 5}, [2]int{sp.Width - 20, sp.Height - 12}
	}
	scene := sp.Scene
	discs := [][3]int{{40, 37, 9}, {150, 64, 14}, {260, 128, 20}, {90, 200, 12}, {30, h - 3, 6}}
	sp.Scene = func(x, y, c int) float64 {
		for _, d := range discs {
			if dx, dy := x-d[0], y-d[1]; dx*dx+dy*dy < d[2]*d[2] {
				return 1.6 - 0.3*float64(c)
			}
		}
		return scene(x, y, c)
	}
	p := filepath.Join(dir, fmt.Sprintf("clipped-o%d-p%v-c%v.dng", o, preview, cropped))
	if err := synthdng.WriteFile(p, sp); err != nil {
		t.Fatal(err)
	}
	return p
}

// convertOpts converts in to the variants specs with s and o into dir/sub.
func convertOpts(t *testing.T, in, dir, sub string, s Settings, o ConvertOptions, specs ...string) ([]string, Result) {
	t.Helper()
	d := filepath.Join(dir, sub)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	vs := variants(t, specs...)
	s.Variants = vs
	var outs []OutputSpec
	var paths []string
	for _, v := range vs {
		p := filepath.Join(d, v.Name+v.Ext())
		outs = append(outs, OutputSpec{Variant: v, Path: p})
		paths = append(paths, p)
	}
	res, err := ConvertOutputs(context.Background(), in, outs, s, o)
	if err != nil {
		t.Fatal(err)
	}
	return paths, res
}

// TestStreamMatchesWholeImage: a single-variant JPEG or TIFF16 streamed
// in row bands (demosaic, highlights, capture sharpening, the fused pass,
// the encoder) is the whole-image path's output within one code value,
// for demosaic bands of a tile row, of heights that do not divide the
// image and of one below RCD's and reconstruct's margins; the four
// orientations that reorder rows (1, 3, 6, 8); clip and reconstruct with
// clipped discs across the bands' borders; capture sharpening on and off.
// The streamed run names the same steps; the reference does not stream.
func TestStreamMatchesWholeImage(t *testing.T) {
	dir := t.TempDir()
	defer func(b int) { streamBand = b }(streamBand)
	type tc struct {
		o         int
		highlight HighlightMode
		sharpen   string
		spec      string
		band      int
	}
	var cases []tc
	for i, o := range []int{1, 3, 6, 8} {
		for k, hl := range []HighlightMode{HighlightsReconstruct, HighlightsClip} {
			sh := []string{"auto", "off"}[(i+k)%2]
			spec := []string{"main=jpeg", "main=tiff16,space=adobergb"}[i%2]
			cases = append(cases, tc{o, hl, sh, spec, []int{128, 37, 5}[(i+k)%3]})
		}
	}
	cases = append(cases, tc{1, HighlightsReconstruct, "auto", "main=jpeg", 64}, tc{6, HighlightsReconstruct, "auto", "main=tiff16", 5},
		tc{0, HighlightsReconstruct, "auto", "main=jpeg", 128})
	// o 0: a real camera file without preview, cropped by its DefaultCrop.
	files := map[int]string{0: filepath.Join(testdata, "raw", "canon550d_colorchart.dng")}
	for _, c := range cases {
		if files[c.o] == "" {
			files[c.o] = writeClipped(t, dir, 300, 222, c.o, false, c.o != 1)
		}
		name := fmt.Sprintf("o%d_%s_sharpen-%s_%s_band%d", c.o, c.highlight, c.sharpen, strings.SplitN(strings.TrimPrefix(c.spec, "main="), ",", 2)[0], c.band)
		t.Run(name, func(t *testing.T) {
			s := DefaultSettings()
			s.Highlights, s.CaptureSharpen = c.highlight, c.sharpen
			streamBand = c.band
			got, sres := convertOpts(t, files[c.o], dir, name+"/stream", s, ConvertOptions{}, c.spec)
			want, wres := convertOpts(t, files[c.o], dir, name+"/whole", s, ConvertOptions{wholeImage: true}, c.spec)
			if !sres.Streamed || wres.Streamed {
				t.Fatalf("streamed %v, whole-image reference streamed %v", sres.Streamed, wres.Streamed)
			}
			if !slices.Equal(timingNames(sres), timingNames(wres)) {
				t.Errorf("steps differ:\n stream %q\n whole  %q", timingNames(sres), timingNames(wres))
			}
			if sres.Width != wres.Width || sres.Height != wres.Height || sres.Demosaic != "rcd" {
				t.Errorf("streamed %d×%d (%s), whole %d×%d", sres.Width, sres.Height, sres.Demosaic, wres.Width, wres.Height)
			}
			bits := 8
			if strings.Contains(c.spec, "tiff16") {
				bits = 16
			}
			a, b := decodeImage(t, got[0]), decodeImage(t, want[0])
			if d := maxCodeDiff(a, b, bits); d < 0 || d > 1 {
				t.Errorf("streamed output differs from the whole image's by %d code values (-1: size %v vs %v)", d, a.Bounds().Size(), b.Bounds().Size())
			}
			if fmt.Sprint(sres.CaptureSharpen) != fmt.Sprint(wres.CaptureSharpen) || fmt.Sprint(sres.Crop) != fmt.Sprint(wres.Crop) ||
				fmt.Sprint(sres.WhiteBalance) != fmt.Sprint(wres.WhiteBalance) || sres.Exposure != wres.Exposure {
				t.Errorf("results differ:\n stream %+v\n whole  %+v", sres, wres)
			}
		})
	}
}

// TestStreamNotTaken: what needs the whole image converts it whole: a
// variant that sharpens beside another (its output space does not fuse),
// a full-size PNG; the plan says a single JPEG and several variants
// would stream.
func TestStreamNotTaken(t *testing.T) {
	dir := t.TempDir()
	plain := writeClipped(t, dir, 160, 120, 1, false)
	withPreview := writeClipped(t, dir, 160, 120, 1, true)
	s := DefaultSettings()
	for _, c := range []struct {
		name, in string
		specs    []string
	}{
		{"two variants, one sharpened", plain, []string{"a=jpeg,sharpen=0.5", "b=tiff16"}},
		{"png", plain, []string{"main=png8"}},
	} {
		got, res := convertOpts(t, c.in, dir, c.name+"/a", s, ConvertOptions{}, c.specs...)
		if res.Streamed {
			t.Errorf("%s: streamed", c.name)
		}
		want, _ := convertOpts(t, c.in, dir, c.name+"/b", s, ConvertOptions{wholeImage: true}, c.specs...)
		for i := range got {
			if d := maxCodeDiff(decodeImage(t, got[i]), decodeImage(t, want[i]), 8); d != 0 {
				t.Errorf("%s: differs from the whole-image run by %d", c.name, d)
			}
		}
	}
	_, res := convertOpts(t, plain, dir, "single", s, ConvertOptions{}, "main=jpeg")
	if !res.Streamed {
		t.Error("a single JPEG of a file without preview did not stream")
	}
	// A file with a preview streams too, in two passes (stream_twopass.go,
	// TestStreamTwoPass).
	_, res = convertOpts(t, withPreview, dir, "preview", s, ConvertOptions{}, "main=jpeg")
	if !res.Streamed || !strings.Contains(res.Exposure.Source, "preview") {
		t.Errorf("a single JPEG of a file with a preview: streamed %v, exposure %q, want streamed with the preview's anchor measured", res.Streamed, res.Exposure.Source)
	}
	fi, err := ReadInfo(plain)
	if err != nil {
		t.Fatal(err)
	}
	s.Variants = variants(t, "main=jpeg")
	if p := PlanStages(fi, s).String(); !strings.Contains(p, "streamed in row bands, when the file needs no whole image: demosaic, crop, highlights") {
		t.Errorf("plan does not say it streams:\n%s", p)
	}
	s.Variants = variants(t, "a=jpeg", "b=jpeg,size=50%")
	if p := PlanStages(fi, s).String(); !strings.Contains(p, "streamed in row bands, when the file needs no whole image: demosaic, crop, highlights") {
		t.Errorf("plan of two variants does not say it streams:\n%s", p)
	}
	s.Variants = variants(t, "a=jpeg", "b=png8")
	if p := PlanStages(fi, s).String(); strings.Contains(p, "streamed") {
		t.Errorf("plan of a full-size PNG beside a JPEG streams:\n%s", p)
	}
}

// TestStreamCancelled: a conversion cancelled while it streams (after its
// first demosaic band) fails with the context's error, leaves no output
// and no temporary file; also in the first pass of a two-pass stream (a
// file with a preview).
func TestStreamCancelled(t *testing.T) {
	for _, preview := range []bool{false, true} {
		t.Run(fmt.Sprintf("preview=%v", preview), func(t *testing.T) { streamCancelled(t, preview) })
	}
}

func streamCancelled(t *testing.T, preview bool) {
	dir := t.TempDir()
	in := writeClipped(t, dir, 300, 600, 1, preview)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bands := 0
	streamBandHook = func(int) {
		bands++
		cancel()
	}
	defer func() { streamBandHook = nil }()
	out := filepath.Join(dir, "out", "x.jpg")
	os.MkdirAll(filepath.Dir(out), 0o755)
	s := DefaultSettings()
	res, err := ConvertOutputs(ctx, in, []OutputSpec{{Variant: s.OutputVariants()[0], Path: out}}, s, ConvertOptions{})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), in) {
		t.Fatalf("err %v, want context.Canceled naming the input", err)
	}
	if bands != 1 || res.Streamed || res.Decoded {
		t.Errorf("%d bands made after the cancel, streamed %v, decoded %v", bands, res.Streamed, res.Decoded)
	}
	if left, _ := os.ReadDir(filepath.Dir(out)); len(left) != 0 {
		t.Errorf("left %v", left)
	}
}

// TestStreamNotPlannedWBAuto: --wb auto is LibRaw's grey world, which only
// LibRaw's processing computes, so the file is demosaiced whole: the plan
// marks no step streamed, the estimate is the whole-image one, and the
// conversion does not stream (a streamed estimate for it let a batch
// overshoot --mem-budget).
func TestStreamNotPlannedWBAuto(t *testing.T) {
	dir := t.TempDir()
	plain := writeClipped(t, dir, 160, 120, 1, false)
	fi, err := ReadInfo(plain)
	if err != nil {
		t.Fatal(err)
	}
	s := DefaultSettings()
	streamed := func(s Settings) (n int) {
		for _, st := range PlanStages(fi, s).Steps {
			if st.Stream {
				n++
			}
		}
		return n
	}
	if streamed(s) == 0 {
		t.Fatal("camera WB: no step planned to stream")
	}
	if e := EstimateMemory(fi, s, 1); e.Whole == e.Total {
		t.Fatalf("camera WB: estimate %d, the same as the whole-image one", e.Total)
	}
	s.WhiteBalance.Mode = "auto"
	if n := streamed(s); n != 0 {
		t.Errorf("--wb auto: %d steps planned to stream", n)
	}
	if e := EstimateMemory(fi, s, 1); e.Total != e.Whole {
		t.Errorf("--wb auto: estimate %d, want the whole-image %d", e.Total, e.Whole)
	}
	if _, res := convertOpts(t, plain, dir, "auto", s, ConvertOptions{}, "main=jpeg"); res.Streamed {
		t.Error("--wb auto: streamed")
	}
}
