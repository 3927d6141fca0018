package pipeline

import (
	"context"
	"errors"
	"image"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/cache"
	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// writeClippedChart writes a small synthetic DNG whose patches clip in
// one, two or all channels, so that highlight reconstruction (the default
// --highlights) leaves values between the 16-bit codes in the image the
// stage cache stores.
func writeClippedChart(t *testing.T, dir string) string {
	t.Helper()
	c := synthdng.Chart{W: 600, H: 400, Background: [3]float64{0.18, 0.18, 0.18}}
	for i, rgb := range [][3]float64{{1.6, 1.1, 0.7}, {3, 3, 3}, {0.8, 1.4, 0.4}, {0.5, 0.3, 2.2}, {0.9, 0.9, 0.9}, {0.02, 0.05, 0.6}} {
		x0, y0 := 30+(i%3)*190, 40+(i/3)*180
		c.Patches = append(c.Patches, synthdng.Patch{X0: x0, Y0: y0, X1: x0 + 150, Y1: y0 + 140, SRGBLinear: rgb})
	}
	cw, ch, scene := synthdng.ChartScene(c, 1, synthdng.DefaultColorMatrix, 1)
	p := filepath.Join(dir, "clipped.dng")
	if err := synthdng.WriteFile(p, synthdng.Spec{Width: cw, Height: ch, BlackLevel: 512, WhiteLevel: 16383, Scene: scene}); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStageCache16Bit: the stage cache stores its image as 16-bit
// samples (an entry is 96 + 6 bytes a pixel, plus its metadata), and a
// 16-bit PNG rendered from a hit equals, pixel by pixel, the one the
// storing run rendered (which renders from the rounded image it stores):
// for LibRaw's AHD (the whole-image path) with highlights clipped or
// reconstructed, and for rawbatch's RCD (streamed in two passes, the
// entry being pass 1's rows). The bounds are those of the 16-bit rounding
// itself (at most one code value in all but 0.01 % of the pixels, ΔE2000
// max ≤ 0.01 and mean ≤ 1e-4; RCD: mean ≤ 0.005, max ≤ 0.05); measured 0.
func TestStageCache16Bit(t *testing.T) {
	dir := t.TempDir()
	sixD := filepath.Join(testdata, "raw", "canon_eos_6d.dng")
	for _, c := range []struct {
		name, in string
		hl       HighlightMode
		exact    bool // the cached image is LibRaw's k/65535 values
		rcd      bool // demosaiced by RCD (float32 between the codes)
	}{
		{"6d-clip", sixD, HighlightsClip, true, false},
		{"6d-reconstruct", sixD, HighlightsReconstruct, false, false},
		{"clipped-chart-reconstruct", writeClippedChart(t, dir), HighlightsReconstruct, false, false},
		{"clipped-chart-rcd", writeClippedChart(t, dir), HighlightsReconstruct, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			ca, err := cache.Open(filepath.Join(d, "cache"), 0)
			if err != nil {
				t.Fatal(err)
			}
			s := DefaultSettings()
			s.Format = PNG16
			s.Highlights = c.hl
			s.Demosaic = "ahd"
			if c.rcd {
				s.Demosaic = "rcd"
			}
			conv := func(name string, opts *CacheOptions) (string, Result) {
				p := filepath.Join(d, name)
				r, err := ConvertVariants(context.Background(), c.in, []OutputSpec{{Variant: Variant{Name: "main", Format: "png16", Space: "srgb"}, Path: p}}, s, opts)
				if err != nil {
					t.Fatal(err)
				}
				return p, r
			}
			opts := &CacheOptions{Cache: ca, Keep: true}
			fresh, r := conv("fresh.png", opts)
			if r.FromCache || !r.Decoded {
				t.Fatalf("first conversion: from cache %v, decoded %v", r.FromCache, r.Decoded)
			}
			hit, r := conv("hit.png", opts)
			if !r.FromCache || r.Decoded {
				t.Fatalf("second conversion: from cache %v, decoded %v", r.FromCache, r.Decoded)
			}

			ents, _ := filepath.Glob(filepath.Join(d, "cache", "*.rbc"))
			if len(ents) != 1 {
				t.Fatalf("cache entries %v", ents)
			}
			fi, err := os.Stat(ents[0])
			if err != nil {
				t.Fatal(err)
			}
			e, err := ca.Get(strings.TrimSuffix(filepath.Base(ents[0]), ".rbc"))
			if err != nil {
				t.Fatal(err)
			}
			min16 := cache.EntryBytes(e.W, e.H, e.C)
			if fi.Size() < min16 || fi.Size() > min16+cache.MaxMetaBytes+8 || min16 != 96+2*int64(e.W*e.H*e.C) {
				t.Errorf("entry of a %d×%d×%d image is %d bytes, want 96 + 2 a sample (%d) and its metadata", e.W, e.H, e.C, fi.Size(), min16)
			}

			a, b := decodeImage(t, fresh), decodeImage(t, hit)
			hist := codeDiffs(a, b)
			mean, maxDE := deltaEMeanMax(a, b)
			px := a.Bounds().Dx() * a.Bounds().Dy()
			over := px - hist[0] - hist[1]
			t.Logf("%s: %d×%d; pixels by largest channel difference (of 65535): %v; ΔE2000 mean %.2g, max %.2g", c.name, a.Bounds().Dx(), a.Bounds().Dy(), hist, mean, maxDE)
			if c.rcd {
				if maxDE > 0.05 || mean > 0.005 {
					t.Errorf("rendered from the cache (RCD): ΔE2000 mean %g (want ≤ 0.005), max %g (want ≤ 0.05)", mean, maxDE)
				}
				return
			}
			if c.exact && over > 0 || float64(over) > 1e-4*float64(px) {
				t.Errorf("%d of %d pixels differ by more than 1 code value from the fresh decode's", over, px)
			}
			if maxDE > 0.01 || mean > 1e-4 {
				t.Errorf("rendered from the cache: ΔE2000 mean %g (want ≤ 1e-4), max %g (want ≤ 0.01)", mean, maxDE)
			}
		})
	}
}

// codeDiffs counts the pixels of two images of one size by the largest
// difference of their 16-bit channels.
func codeDiffs(a, b image.Image) map[int]int {
	hist := map[int]int{}
	for y := range a.Bounds().Dy() {
		for x := range a.Bounds().Dx() {
			r1, g1, b1 := rgb16(a, x, y)
			r2, g2, b2 := rgb16(b, x, y)
			d := 0
			for _, v := range []int{int(r1) - int(r2), int(g1) - int(g2), int(b1) - int(b2)} {
				d = max(d, v, -v)
			}
			hist[d]++
		}
	}
	return hist
}

// deltaEMeanMax compares two images of one size (read as sRGB) with
// CIEDE2000 and returns the mean and the largest difference.
func deltaEMeanMax(a, b image.Image) (mean, worst float64) {
	n := 0
	for y := range a.Bounds().Dy() {
		for x := range a.Bounds().Dx() {
			r1, g1, b1 := rgb16(a, x, y)
			r2, g2, b2 := rgb16(b, x, y)
			de := colour.DeltaE2000(colour.SRGB16ToLab(r1, g1, b1), colour.SRGB16ToLab(r2, g2, b2))
			mean += de
			worst = max(worst, de)
			n++
		}
	}
	return mean / float64(n), worst
}

// TestStageCacheHitEqualsMiss: a stage cache hit renders what the run that
// stored the entry rendered (ΔE2000 mean ≤ 0.02; the storing run renders
// from the rounded image it stores, so they are equal in practice), for a
// full-size JPEG (streamed: the storing run writes pass 1's rows, the hit
// runs the last pass from the mapped entry), a downscaled JPEG and a
// TIFF16 (the whole-image path, from the float image made of the entry;
// the downscaled JPEG's storing run streams),
// on a file turned by its orientation (flip 6: rows and columns swapped)
// with an embedded preview (the anchor's findings come from the entry) and
// one without. A hit decodes nothing and reports what the storing run
// found (white balance, crop, exposure, capture sharpening, demosaic).
func TestStageCacheHitEqualsMiss(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name    string
		o       int
		preview bool
	}{{"upright", 1, false}, {"turned-preview", 6, true}} {
		in := writeClipped(t, dir, 640, 416, c.o, c.preview)
		for _, v := range []Variant{
			{Name: "main", Format: "jpeg", Space: "srgb", Quality: 97, Subsampling: "444"},
			{Name: "web", Format: "jpeg", Space: "srgb", Size: 300},
			{Name: "print", Format: "tiff16", Space: "srgb"},
		} {
			t.Run(c.name+"/"+v.Name, func(t *testing.T) {
				d := t.TempDir()
				ca, err := cache.Open(filepath.Join(d, "cache"), 0)
				if err != nil {
					t.Fatal(err)
				}
				opts := &CacheOptions{Cache: ca, Keep: true}
				ext := map[string]string{"jpeg": ".jpg", "tiff16": ".tif"}[v.Format]
				conv := func(name string) (string, Result) {
					p := filepath.Join(d, name+ext)
					r, err := ConvertVariants(context.Background(), in, []OutputSpec{{Variant: v, Path: p}}, DefaultSettings(), opts)
					if err != nil {
						t.Fatal(err)
					}
					return p, r
				}
				miss, r1 := conv("miss")
				hit, r2 := conv("hit")
				if r1.FromCache || !r1.Decoded || !r2.FromCache || r2.Decoded {
					t.Fatalf("from cache %v, %v; decoded %v, %v; want false, true; true, false", r1.FromCache, r2.FromCache, r1.Decoded, r2.Decoded)
				}
				// A full-size JPEG streams both times; a downscaled one
				// streams when stored (its rows fed to the downscaler)
				// and is made from the entry's float image on the hit.
				want1, want2 := r1.Streamed, r1.Streamed
				switch {
				case v.Format == "jpeg" && v.Size == 0:
					want1, want2 = true, true
				case v.Size > 0:
					want1, want2 = true, false
				}
				if r1.Streamed != want1 || r2.Streamed != want2 {
					t.Errorf("streamed: storing run %v, hit %v; want %v, %v", r1.Streamed, r2.Streamed, want1, want2)
				}
				if r1.Exposure != r2.Exposure || *r1.WhiteBalance != *r2.WhiteBalance && !strings.Contains(string(r2.WhiteBalance.Reason), "stage cache") ||
					*r1.Crop != *r2.Crop || *r1.CaptureSharpen != *r2.CaptureSharpen || r1.Demosaic != r2.Demosaic || r1.Width != r2.Width || r1.Height != r2.Height {
					t.Errorf("hit reports\n%+v\nstoring run\n%+v", r2, r1)
				}
				mean, worst := deltaEMeanMax(decodeImage(t, miss), decodeImage(t, hit))
				t.Logf("ΔE2000 mean %.3g, max %.3g; streamed %v", mean, worst, r1.Streamed)
				if mean > 0.02 {
					t.Errorf("hit against the storing run: ΔE2000 mean %g, want ≤ 0.02", mean)
				}
			})
		}
	}
}

// TestStageCacheStreamedCorrupt: an entry written by a streamed conversion
// whose payload is damaged is a miss (deleted, the file decoded and
// streamed again, the entry rewritten), and the run after it reads the
// rewritten entry.
func TestStageCacheStreamedCorrupt(t *testing.T) {
	d := t.TempDir()
	in := writeClipped(t, d, 640, 416, 1, false)
	ca, err := cache.Open(filepath.Join(d, "cache"), 0)
	if err != nil {
		t.Fatal(err)
	}
	opts := &CacheOptions{Cache: ca, Keep: true}
	conv := func() Result {
		r, err := ConvertVariants(context.Background(), in, []OutputSpec{{Variant: Variant{Name: "main", Format: "jpeg", Space: "srgb"}, Path: filepath.Join(d, "a.jpg")}}, DefaultSettings(), opts)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := conv(); !r.Streamed || r.FromCache {
		t.Fatalf("storing run: streamed %v, from cache %v", r.Streamed, r.FromCache)
	}
	ents, _ := filepath.Glob(filepath.Join(d, "cache", "*.rbc"))
	if len(ents) != 1 {
		t.Fatalf("entries %v", ents)
	}
	b, err := os.ReadFile(ents[0])
	if err != nil {
		t.Fatal(err)
	}
	b[96+len(b)/2] ^= 0x40
	if err := os.WriteFile(ents[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := conv(); r.FromCache || !r.Decoded || !r.Streamed {
		t.Fatalf("corrupt entry: from cache %v, decoded %v, streamed %v; want a streamed decode", r.FromCache, r.Decoded, r.Streamed)
	}
	if r := conv(); !r.FromCache || r.Decoded {
		t.Fatalf("after the rewrite: from cache %v, decoded %v", r.FromCache, r.Decoded)
	}
}

// TestStageCacheAcrossPaths: an entry the whole-image path stored (a
// full-size PNG's run) serves a later streamed full-size JPEG on a
// turned file (flip 6): its rows are laid out upright as the stream's,
// so the hit renders what a streamed run renders (ΔE2000 mean ≤ 0.02).
func TestStageCacheAcrossPaths(t *testing.T) {
	d := t.TempDir()
	in := writeClipped(t, d, 640, 416, 6, true)
	main := Variant{Name: "main", Format: "jpeg", Space: "srgb", Quality: 97, Subsampling: "444"}
	conv := func(c *cache.Cache, v Variant, name string) (string, Result) {
		p := filepath.Join(d, name)
		r, err := ConvertVariants(context.Background(), in, []OutputSpec{{Variant: v, Path: p}}, DefaultSettings(), &CacheOptions{Cache: c, Keep: true})
		if err != nil {
			t.Fatal(err)
		}
		return p, r
	}
	whole, err := cache.Open(filepath.Join(d, "whole"), 0)
	if err != nil {
		t.Fatal(err)
	}
	streamed, err := cache.Open(filepath.Join(d, "streamed"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, r := conv(whole, Variant{Name: "web", Format: "png8", Space: "srgb"}, "web.png"); r.Streamed || r.FromCache {
		t.Fatalf("storing run: streamed %v, from cache %v; want the whole-image path", r.Streamed, r.FromCache)
	}
	hit, r := conv(whole, main, "hit.jpg")
	if !r.Streamed || !r.FromCache {
		t.Fatalf("hit: streamed %v, from cache %v", r.Streamed, r.FromCache)
	}
	ref, r := conv(streamed, main, "ref.jpg")
	if !r.Streamed || r.FromCache {
		t.Fatalf("reference: streamed %v, from cache %v", r.Streamed, r.FromCache)
	}
	mean, worst := deltaEMeanMax(decodeImage(t, ref), decodeImage(t, hit))
	t.Logf("ΔE2000 mean %.3g, max %.3g", mean, worst)
	if mean > 0.02 {
		t.Errorf("streamed hit of the whole path's entry against a streamed run: ΔE2000 mean %g, want ≤ 0.02", mean)
	}
}

// TestStageCacheVariantsStore: a streamed conversion of several variants
// that stores its entry (--keep-cache) keeps its rows for the cache
// instead of letting a lead variant drive a pass that stores none, and a
// later run with more variants reads the entry, each output within
// ΔE2000 mean 0.02 of the storing run's.
func TestStageCacheVariantsStore(t *testing.T) {
	d := t.TempDir()
	in := writeClipped(t, d, 640, 416, 1, false)
	ca, err := cache.Open(filepath.Join(d, "cache"), 0)
	if err != nil {
		t.Fatal(err)
	}
	opts := &CacheOptions{Cache: ca, Keep: true}
	vs := []Variant{
		{Name: "main", Format: "jpeg", Space: "srgb"},
		{Name: "web", Format: "jpeg", Space: "srgb", Size: 300},
	}
	conv := func(run string, vs []Variant) Result {
		var outs []OutputSpec
		for _, v := range vs {
			outs = append(outs, OutputSpec{Variant: v, Path: filepath.Join(d, run+"-"+v.Name+".jpg")})
		}
		r, err := ConvertVariants(context.Background(), in, outs, DefaultSettings(), opts)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r1 := conv("miss", vs)
	for _, w := range r1.Warnings {
		if strings.Contains(w, "not cached") {
			t.Fatalf("storing run: %s", w)
		}
	}
	if !r1.Streamed || r1.FromCache {
		t.Fatalf("storing run: streamed %v, from cache %v", r1.Streamed, r1.FromCache)
	}
	r2 := conv("hit", append(vs, Variant{Name: "thumb", Format: "jpeg", Space: "srgb", Size: 120}))
	if !r2.FromCache || r2.Decoded {
		t.Fatalf("second run: from cache %v, decoded %v", r2.FromCache, r2.Decoded)
	}
	for _, v := range vs {
		mean, _ := deltaEMeanMax(decodeImage(t, filepath.Join(d, "miss-"+v.Name+".jpg")), decodeImage(t, filepath.Join(d, "hit-"+v.Name+".jpg")))
		if mean > 0.02 {
			t.Errorf("%s: hit against the storing run: ΔE2000 mean %g, want ≤ 0.02", v.Name, mean)
		}
	}
}

// TestStageCacheHitAdmittedToStream: a conversion admitted at a streamed
// estimate (ConvertOptions.Admitted below Whole) that finds an entry runs
// a single full-size JPEG from the entry's rows, and stops with
// rawerr.ErrNeedsWhole before making the whole image for a downscaled
// variant the entry cannot stream (a sharpened one), leaving the entry.
func TestStageCacheHitAdmittedToStream(t *testing.T) {
	d := t.TempDir()
	in := writeClipped(t, d, 640, 416, 1, false)
	ca, err := cache.Open(filepath.Join(d, "cache"), 0)
	if err != nil {
		t.Fatal(err)
	}
	main := Variant{Name: "main", Format: "jpeg", Space: "srgb"}
	out := func(v Variant) []OutputSpec { return []OutputSpec{{Variant: v, Path: filepath.Join(d, v.Name+".jpg")}} }
	if _, err := ConvertOutputs(context.Background(), in, out(main), DefaultSettings(), ConvertOptions{Cache: &CacheOptions{Cache: ca, Keep: true}}); err != nil {
		t.Fatal(err)
	}
	streamed := ConvertOptions{Cache: &CacheOptions{Cache: ca, Keep: true}, Admitted: 1 << 20, Whole: 1 << 30}
	r, err := ConvertOutputs(context.Background(), in, out(main), DefaultSettings(), streamed)
	if err != nil || !r.FromCache || !r.Streamed {
		t.Fatalf("full-size JPEG admitted to stream: from cache %v, streamed %v, err %v", r.FromCache, r.Streamed, err)
	}
	sharp := Variant{Name: "sharp", Format: "jpeg", Space: "srgb", Size: 200, Sharpen: 0.5}
	if _, err := ConvertOutputs(context.Background(), in, out(sharp), DefaultSettings(), streamed); !errors.Is(err, rawerr.ErrNeedsWhole) {
		t.Fatalf("sharpened variant admitted to stream: %v, want ErrNeedsWhole", err)
	}
	r, err = ConvertOutputs(context.Background(), in, out(sharp), DefaultSettings(), ConvertOptions{Cache: &CacheOptions{Cache: ca, Keep: true}})
	if err != nil || !r.FromCache {
		t.Fatalf("admitted whole: from cache %v, err %v", r.FromCache, err)
	}
}

// TestStageCacheStreamedDenoiseNoAnchorRows: a streamed file split at its
// denoise step whose anchor needs no stored rows (measured on the CFA
// data, here with a lens corrected) and whose entry the stage cache keeps
// writes pass 2's rows back into the stored bands for the entry: none is
// let go while pass 2 reads them (it panicked), and the hit renders the
// storing run's picture.
func TestStageCacheStreamedDenoiseNoAnchorRows(t *testing.T) {
	in := realFiles(t, 1536, 1024, synthdng.RealDNG)[0]
	d := t.TempDir()
	ca, err := cache.Open(filepath.Join(d, "cache"), 0)
	if err != nil {
		t.Fatal(err)
	}
	v := Variant{Name: "main", Format: "jpeg", Space: "srgb"}
	conv := func(name string) (string, Result) {
		p := filepath.Join(d, name+".jpg")
		r, err := ConvertVariants(context.Background(), in, []OutputSpec{{Variant: v, Path: p}}, DefaultSettings(), &CacheOptions{Cache: ca, Keep: true})
		if err != nil {
			t.Fatal(err)
		}
		return p, r
	}
	miss, r1 := conv("miss")
	hit, r2 := conv("hit")
	if !r1.Streamed || r1.Denoise == nil || r1.Denoise.Strength == 0 || r1.FromCache || !r2.FromCache {
		t.Fatalf("streamed %v, denoise %+v, from cache %v then %v: want a streamed denoised store, then a hit", r1.Streamed, r1.Denoise, r1.FromCache, r2.FromCache)
	}
	if mean, _ := deltaEMeanMax(decodeImage(t, miss), decodeImage(t, hit)); mean > 0.02 {
		t.Errorf("hit against the storing run: ΔE2000 mean %g, want ≤ 0.02", mean)
	}
}
