package pipeline

import (
	"context"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/image/draw"

	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// TestPreviewSource: a variant asked with source=preview or source=auto is
// made from the embedded preview when it qualifies (a picture of the raw,
// not a thumbnail, at least the variant's size): no raw decode when every
// variant is, the preview's pixels at the variant's size; auto falls back
// to the raw data saying why (a thumbnail, no preview, a preview smaller
// than the variant), and preview then fails the file (unsupported, with
// the reason). The D30 CRW's preview is a 1440×960 JPEG of its 2160×1440
// picture.
func TestPreviewSource(t *testing.T) {
	dir := t.TempDir()
	d30 := filepath.Join(testdata, "raw", "canond30_CRW.CRW")
	thumb := writeClipped(t, dir, 300, 222, 1, true) // a 256 px thumbnail
	bare := writeClipped(t, dir, 300, 222, 1, false)
	for _, c := range []struct {
		name, in string
		specs    []string
		source   []string // each variant's reported source
		reason   string   // in the first variant's SourceReason
		decoded  bool
		err      string
	}{
		{"preview", d30, []string{"t=png16,size=720,source=preview"}, []string{"preview"}, "", false, ""},
		{"auto", d30, []string{"t=png16,size=720,source=auto"}, []string{"preview"}, "", false, ""},
		{"auto-larger", d30, []string{"t=jpeg,size=2000,source=auto"}, []string{"raw"}, "smaller than the variant", true, ""},
		{"preview-larger", d30, []string{"t=jpeg,size=2000,source=preview"}, nil, "", false, "smaller than the variant"},
		{"mixed", d30, []string{"t=png16,size=720,source=preview", "main=jpeg,size=300"}, []string{"preview", ""}, "", true, ""},
		{"auto-thumbnail", thumb, []string{"t=jpeg,size=100,source=auto"}, []string{"raw"}, "thumbnail", true, ""},
		{"preview-thumbnail", thumb, []string{"t=jpeg,size=100,source=preview"}, nil, "", false, "thumbnail"},
		{"auto-none", bare, []string{"t=jpeg,size=100,source=auto"}, []string{"raw"}, "no embedded preview", true, ""},
		{"auto-hdr", d30, []string{"t=avif,size=300,hdr=pq,source=auto"}, []string{"raw"}, "HDR variant needs the raw data", true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			s := DefaultSettings()
			s.Variants = variants(t, c.specs...)
			var outs []OutputSpec
			for _, v := range s.Variants {
				outs = append(outs, OutputSpec{Variant: v, Path: filepath.Join(d, v.Name+v.Ext())})
			}
			res, err := ConvertOutputs(context.Background(), c.in, outs, s, ConvertOptions{})
			if c.err != "" {
				if !errors.Is(err, rawerr.ErrUnsupported) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want unsupported: …%s…", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range res.Variants {
				got = append(got, v.Source)
			}
			slices.Sort(got)
			want := slices.Clone(c.source)
			slices.Sort(want)
			if !slices.Equal(got, want) || !strings.Contains(res.Variants[0].SourceReason, c.reason) && c.reason != "" {
				t.Errorf("sources %q (reason %q), want %q (…%s…)", got, res.Variants[0].SourceReason, want, c.reason)
			}
			unpacked := slices.ContainsFunc(res.Timings, func(st StageTiming) bool { return st.Stage == unpackStage.Name })
			if res.Decoded != c.decoded || unpacked != c.decoded {
				t.Errorf("decoded %v (unpack step %v), want %v", res.Decoded, unpacked, c.decoded)
			}
			if c.name != "preview" && c.name != "auto" {
				return
			}
			// The variant is the preview at its size: against the preview
			// downscaled in sRGB (Catmull-Rom), mean ΔE2000 ≤ 1.5 (the
			// variant is downscaled in linear light).
			out := decodeImage(t, outs[0].Path)
			if b := out.Bounds(); b.Dx() != 720 || b.Dy() != 480 {
				t.Fatalf("size %v, want 720×480", b.Size())
			}
			ref := image.NewRGBA(out.Bounds())
			draw.CatmullRom.Scale(ref, ref.Bounds(), embeddedJPEG(t, c.in), embeddedJPEG(t, c.in).Bounds(), draw.Src, nil)
			mean, worst := deltaEMeanMax(ref, out)
			t.Logf("against the preview: ΔE2000 mean %.3f, max %.2f", mean, worst)
			if mean > 1.5 {
				t.Errorf("ΔE2000 mean %.3f against the embedded preview, want ≤ 1.5", mean)
			}
		})
	}
}

// TestPreviewSourceOrientation: a preview is stored in the sensor's
// orientation, as the raw data is, and a variant made from it is turned
// upright by the raw's orientation: a DNG with orientation 6 (rotate 90°
// clockwise) whose 1200×800 preview is red on its left half and blue on
// its right gives a 400×600 portrait variant, red on top.
func TestPreviewSourceOrientation(t *testing.T) {
	dir := t.TempDir()
	sp := syntheticSpec(1200, 800)
	sp.Orientation = 6
	pv := image.NewRGBA(image.Rect(0, 0, 1200, 800))
	for y := range 800 {
		for x := range 1200 {
			c := color.RGBA{200, 30, 30, 255}
			if x >= 600 {
				c = color.RGBA{30, 30, 200, 255}
			}
			pv.SetRGBA(x, y, c)
		}
	}
	sp.Preview = pv
	in := filepath.Join(dir, "o6.dng")
	if err := synthdng.WriteFile(in, sp); err != nil {
		t.Fatal(err)
	}
	paths, res := convertOpts(t, in, dir, "out", DefaultSettings(), ConvertOptions{}, "t=png8,size=600,source=preview")
	_, rres := convertOpts(t, in, dir, "raw", DefaultSettings(), ConvertOptions{}, "t=png8,size=600")
	if rv, pv := rres.Variants[0], res.Variants[0]; rv.Width != pv.Width || rv.Height != pv.Height {
		t.Errorf("from the preview %d×%d, from the raw %d×%d", pv.Width, pv.Height, rv.Width, rv.Height)
	}
	if res.Decoded || res.Variants[0].Source != "preview" {
		t.Fatalf("decoded %v, source %q", res.Decoded, res.Variants[0].Source)
	}
	img := decodeImage(t, paths[0])
	if b := img.Bounds(); b.Dx() != 400 || b.Dy() != 600 {
		t.Fatalf("size %v, want 400×600", b.Size())
	}
	for _, p := range []struct {
		y       int
		redHigh bool
	}{{100, true}, {500, false}} {
		r, _, b, _ := img.At(200, p.y).RGBA()
		if (r > b) != p.redHigh {
			t.Errorf("pixel (200,%d): r %d b %d, want red %v", p.y, r>>8, b>>8, p.redHigh)
		}
	}
}

// embeddedJPEG returns the raw file's embedded JPEG preview, decoded.
func embeddedJPEG(t *testing.T, in string) image.Image {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	hdr, err := ReadHeader(in)
	if err != nil {
		t.Fatal(err)
	}
	j := &job{in: in, settings: DefaultSettings(), hdr: hdr}
	defer j.cleanup()
	if err := stageOpen(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	th, err := j.thumbnail()
	if err != nil {
		t.Fatal(err)
	}
	img, err := jpeg.Decode(strings.NewReader(string(th.Data)))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestThumbnailKeepsHeap: a 512 px JPEG made from the D30's preview gives
// no garbage back to the system (giveBack): its encoder's C memory is
// that of a 512 px image, so a worker making thumbnails keeps its heap's
// pages from file to file instead of faulting them in again (60 D30
// thumbnails: 235 000 page faults and 5.5 s of CPU with a give-back per
// file, 80 000 and 3.2 s without). A 1400 px JPEG (a 16 MB float image)
// still gives the garbage back before its encoder's coefficients.
func TestThumbnailKeepsHeap(t *testing.T) {
	d30 := filepath.Join(testdata, "raw", "canond30_CRW.CRW")
	n := 0
	giveBackHook = func() { n++ }
	defer func() { giveBackHook = func() {} }()
	for _, c := range []struct {
		spec string
		want bool
	}{{"t=jpeg,size=512,source=preview", false}, {"t=jpeg,size=1400,source=preview", true}} {
		n = 0
		d := t.TempDir()
		s := DefaultSettings()
		s.Variants = variants(t, c.spec)
		outs := []OutputSpec{{Variant: s.Variants[0], Path: filepath.Join(d, "t.jpg")}}
		if _, err := ConvertOutputs(context.Background(), d30, outs, s, ConvertOptions{}); err != nil {
			t.Fatal(err)
		}
		if (n > 0) != c.want {
			t.Errorf("%s: garbage given back %d times, want given back %v", c.spec, n, c.want)
		}
	}
}
