package pipeline

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/jpeg"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/image/tiff"
	"golang.org/x/image/webp"

	"github.com/rawbatch/rawbatch/cache"
	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
	"github.com/rawbatch/rawbatch/state"
)

// TestConvertVariantsOneDecode: one decode writes four variants of
// different formats, sizes and colour spaces; each reads back with the
// right size, bit depth and embedded profile, and the chart's patches have
// the analytically expected colour in every space.
func TestConvertVariantsOneDecode(t *testing.T) {
	dir := t.TempDir()
	c := testChart()
	in := writeChart(t, dir, c, 6, 0) // stored rotated; upright it is the 96×64 chart
	s := referenceSettings()          // tone none, no baseline: analytic colours
	outs := []OutputSpec{
		{Variant: Variant{Name: "main", Format: "jpeg", Quality: 95, Space: "srgb"}, Path: filepath.Join(dir, "c.jpg")},
		{Variant: Variant{Name: "thumb", Format: "webp", Size: 48, Quality: 90, Space: "srgb"}, Path: filepath.Join(dir, "c.thumb.webp")},
		{Variant: Variant{Name: "print", Format: "tiff16", Space: "adobergb"}, Path: filepath.Join(dir, "c.print.tif")},
		{Variant: Variant{Name: "p3", Format: "png8", Space: "displayp3"}, Path: filepath.Join(dir, "c.p3.png")},
		// Downscaled by 2 from the camera image: colours must still be right.
		{Variant: Variant{Name: "half", Format: "png16", Size: 48, Space: "srgb"}, Path: filepath.Join(dir, "c.half.png")},
		// Same rendition as main: shares main's image, same bytes.
		{Variant: Variant{Name: "again", Format: "jpeg", Quality: 95, Space: "srgb"}, Path: filepath.Join(dir, "c.again.jpg")},
	}
	res, err := ConvertVariants(context.Background(), in, outs, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Decoded || len(res.Variants) != 6 {
		t.Fatalf("decoded %v, %d variants", res.Decoded, len(res.Variants))
	}
	read := func(p string) (image.Image, []byte) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var img image.Image
		switch filepath.Ext(p) {
		case ".jpg":
			img, err = jpeg.Decode(bytes.NewReader(b))
		case ".webp":
			img, err = webp.Decode(bytes.NewReader(b))
		case ".tif":
			img, err = tiff.Decode(bytes.NewReader(b))
		case ".png":
			img, err = png.Decode(bytes.NewReader(b))
		}
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		return img, b
	}
	// Sizes: the upright chart, 96×64; the thumb's long edge is 48.
	want := map[string][2]int{"c.jpg": {96, 64}, "c.thumb.webp": {48, 32}, "c.print.tif": {96, 64}, "c.p3.png": {96, 64}, "c.again.jpg": {96, 64}, "c.half.png": {48, 32}}
	a, _ := os.ReadFile(outs[0].Path)
	b, _ := os.ReadFile(outs[5].Path)
	if !bytes.Equal(a, b) {
		t.Error("two variants of one rendition differ")
	}
	for _, o := range outs {
		img, b := read(o.Path)
		sz := want[filepath.Base(o.Path)]
		if img.Bounds().Dx() != sz[0] || img.Bounds().Dy() != sz[1] {
			t.Errorf("%s: %v, want %dx%d", o.Path, img.Bounds(), sz[0], sz[1])
		}
		sp := variantSpace(o.Variant)
		switch o.Variant.Format {
		case "png16":
			switch img.(type) {
			case *image.RGBA64, *image.NRGBA64:
			default:
				t.Errorf("%s: %T, want 16-bit", o.Path, img)
			}
			if !bytes.Contains(b[:200], []byte("iCCP")) {
				t.Errorf("%s: no iCCP chunk", o.Path)
			}
		case "png8":
			if _, ok := img.(*image.RGBA); !ok {
				if _, ok := img.(*image.NRGBA); !ok {
					t.Errorf("%s: %T, want 8-bit", o.Path, img)
				}
			}
			if !bytes.Contains(b[:200], []byte("iCCP")) {
				t.Errorf("%s: no iCCP chunk", o.Path)
			}
		case "tiff16":
			switch img.(type) {
			case *image.RGBA64, *image.NRGBA64:
			default:
				t.Errorf("%s: %T, want 16-bit", o.Path, img)
			}
			fallthrough
		default:
			if !bytes.Contains(b, sp.ICC) {
				t.Errorf("%s: the %s ICC profile is not embedded", o.Path, sp.Name)
			}
		}
		if o.Variant.Format == "webp" {
			continue // lossy chroma: size and profile checked only
		}
		k := 1 // scale of the output against the chart
		if o.Variant.Size > 0 {
			k = 2
		}
		// Patch colours, decoded with the space's own transfer and matrix.
		for i, p := range c.Patches {
			var sum [3]float64
			n := 0
			for y := (p.Y0+4)/k + 1; y < (p.Y1-4)/k-1; y++ {
				for x := (p.X0+4)/k + 1; x < (p.X1-4)/k-1; x++ {
					r, g, bb, _ := img.At(x, y).RGBA()
					sum[0] += sp.Decode(float64(r) / 65535)
					sum[1] += sp.Decode(float64(g) / 65535)
					sum[2] += sp.Decode(float64(bb) / 65535)
					n++
				}
			}
			lin := [3]float64{sum[0] / float64(n), sum[1] / float64(n), sum[2] / float64(n)}
			xyz := sp.ToXYZ.Apply(lin)
			if sp.White != colour.SRGB.White {
				xyz = colour.Bradford(sp.White, colour.SRGB.White).Apply(xyz)
			}
			got := colour.XYZToLab(xyz, colour.SRGB.White)
			if de := colour.DeltaE2000(got, expectedLab(p.SRGBLinear, 1, ToneNone)); de > 2.5 {
				t.Errorf("%s patch %d: ΔE2000 %.2f", o.Path, i, de)
			}
		}
	}
}

// TestStageCacheKeepAndCorrupt: with Keep, the decoded image is cached and
// a later conversion decodes nothing; a corrupted entry is detected,
// deleted and rebuilt by decoding again; an ordinary directory works as the
// cache.
func TestStageCacheKeepAndCorrupt(t *testing.T) {
	dir := t.TempDir()
	c, err := cache.Open(filepath.Join(dir, "cache"), 0)
	if err != nil {
		t.Fatal(err)
	}
	opts := &CacheOptions{Cache: c, Keep: true}
	in := filepath.Join(testdata, "raw", "canon_eos_6d.dng")
	s := DefaultSettings()
	out := func(name string) []OutputSpec {
		return []OutputSpec{{Variant: Variant{Name: "main", Format: "jpeg", Space: "srgb"}, Path: filepath.Join(dir, name)}}
	}
	r1, err := ConvertVariants(context.Background(), in, out("a.jpg"), s, opts)
	if err != nil || !r1.Decoded || r1.FromCache {
		t.Fatalf("first: decoded %v, cached %v, %v", r1.Decoded, r1.FromCache, err)
	}
	r2, err := ConvertVariants(context.Background(), in, out("b.jpg"), s, opts)
	if err != nil || r2.Decoded || !r2.FromCache {
		t.Fatalf("second: decoded %v, cached %v, %v", r2.Decoded, r2.FromCache, err)
	}
	// The cache stores 16 bits a sample: highlights reconstructed between
	// the codes are rounded (TestStageCache16Bit bounds that on 16-bit
	// output), nothing visible. JPEG's 8×8 DCT quantisation can turn one
	// rounded code into a change across its block (measured: max 1.03 on
	// one pixel, mean 4e-5), so the bound on a pixel here is 2.
	if mean, worst := deltaEMeanMax(decodeImage(t, filepath.Join(dir, "a.jpg")), decodeImage(t, filepath.Join(dir, "b.jpg"))); mean > 1e-3 || worst > 2 {
		t.Errorf("the output from the cache differs from the decoded one: ΔE2000 mean %g, max %g", mean, worst)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "a.jpg"))
	// Corrupt the entry: flip a byte in the middle of its pixels.
	ents, _ := filepath.Glob(filepath.Join(dir, "cache", "*.rbc"))
	if len(ents) != 1 {
		t.Fatalf("cache entries %v", ents)
	}
	f, _ := os.OpenFile(ents[0], os.O_RDWR, 0)
	st, _ := f.Stat()
	buf := make([]byte, 1)
	f.ReadAt(buf, st.Size()/2)
	buf[0] ^= 0xff
	f.WriteAt(buf, st.Size()/2)
	f.Close()
	os.Chtimes(ents[0], st.ModTime().Add(40e9), st.ModTime().Add(40e9)) // a new version of the file
	r3, err := ConvertVariants(context.Background(), in, out("c.jpg"), s, opts)
	if err != nil || !r3.Decoded || r3.FromCache {
		t.Fatalf("after corruption: decoded %v, cached %v, %v", r3.Decoded, r3.FromCache, err)
	}
	c3, _ := os.ReadFile(filepath.Join(dir, "c.jpg"))
	if !bytes.Equal(a, c3) {
		t.Error("the rebuilt output differs")
	}
}

// TestStageCacheReadWithoutKeep: a conversion without Keep reads the
// entry a conversion with Keep stored and leaves it in place, so the next
// conversion without Keep decodes nothing either.
func TestStageCacheReadWithoutKeep(t *testing.T) {
	dir := t.TempDir()
	c, err := cache.Open(filepath.Join(dir, "cache"), 0)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(testdata, "raw", "canon_eos_6d.dng")
	out := func(name string) []OutputSpec {
		return []OutputSpec{{Variant: Variant{Name: "main", Format: "jpeg", Space: "srgb"}, Path: filepath.Join(dir, name)}}
	}
	if _, err := ConvertVariants(context.Background(), in, out("kept.jpg"), DefaultSettings(), &CacheOptions{Cache: c, Keep: true}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a.jpg", "b.jpg"} {
		r, err := ConvertVariants(context.Background(), in, out(name), DefaultSettings(), &CacheOptions{Cache: c})
		if err != nil || r.Decoded || !r.FromCache {
			t.Fatalf("%s without Keep: decoded %v, cached %v, %v", name, r.Decoded, r.FromCache, err)
		}
		if st, err := c.Stats(); err != nil || st.Entries != 1 {
			t.Fatalf("after %s without Keep: %+v, %v; want the kept entry in place", name, st, err)
		}
	}
}

// TestTIFF16GradientLevels: a smooth horizontal grey ramp converted
// end to end (decode, camera matrix, tone, streamed 16-bit quantiser, TIFF
// writer) keeps far more than 256 distinct levels along a row, and the
// levels rise monotonically, with a JPEG of the same ramp as the 8-bit
// counter-check (at most 256).
func TestTIFF16GradientLevels(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "ramp.dng")
	const w, h = 2400, 64
	n := synthdng.NeutralFor(synthdng.DefaultColorMatrix)
	err := synthdng.WriteFile(in, synthdng.Spec{Width: w, Height: h, BlackLevel: 512, WhiteLevel: 16383,
		Scene: func(x, y, c int) float64 { return 0.02 + 0.5*float64(x)/w*n[c] }})
	if err != nil {
		t.Fatal(err)
	}
	outs := []OutputSpec{
		{Variant: Variant{Name: "main", Format: "jpeg"}, Path: filepath.Join(dir, "ramp.jpg")},
		{Variant: Variant{Name: "print", Format: "tiff16"}, Path: filepath.Join(dir, "ramp.print.tif")},
	}
	if _, err := ConvertVariants(context.Background(), in, outs, DefaultSettings(), nil); err != nil {
		t.Fatal(err)
	}
	levels := func(path string, decode func(*os.File) (image.Image, error), shift uint) (int, bool) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		img, err := decode(f)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[uint32]bool{}
		mono, prev := true, uint32(0)
		y := img.Bounds().Dy() / 2
		for x := 8; x < img.Bounds().Dx()-8; x++ {
			_, g, _, _ := img.At(x, y).RGBA()
			g >>= shift
			seen[g] = true
			mono = mono && g >= prev
			prev = g
		}
		return len(seen), mono
	}
	n16, mono := levels(outs[1].Path, func(f *os.File) (image.Image, error) { return tiff.Decode(f) }, 0)
	n8, _ := levels(outs[0].Path, func(f *os.File) (image.Image, error) { return jpeg.Decode(f) }, 8)
	t.Logf("distinct green levels along a row: TIFF16 %d, JPEG %d", n16, n8)
	if n16 <= 1000 || !mono {
		t.Errorf("TIFF16: %d distinct levels (want > 1000), monotonic %v", n16, mono)
	}
	if n8 > 256 {
		t.Errorf("JPEG: %d levels, more than 8 bits can hold: the counter-check is broken", n8)
	}
}

// TestConvertVariantsDirectoryInTheWay: when one output's path is a
// directory, ConvertVariants fails naming it and renames no output at all.
func TestConvertVariantsDirectoryInTheWay(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(testdata, "raw", "canon_eos_6d.dng")
	outs := []OutputSpec{
		{Variant: Variant{Name: "main", Format: "jpeg"}, Path: filepath.Join(dir, "a.jpg")},
		{Variant: Variant{Name: "t", Format: "png8", Size: 32}, Path: filepath.Join(dir, "a.t.png")},
	}
	if err := os.Mkdir(outs[1].Path, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := ConvertVariants(context.Background(), in, outs, DefaultSettings(), nil)
	if err == nil || !strings.Contains(err.Error(), "a.t.png is a directory") {
		t.Fatalf("err = %v, want the directory named", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only the blocking directory (no output, no temporary file)", len(ents))
	}
}

// TestStageCacheWrongSize: an entry stored under the file's own key but
// with another size or channel count (forged, or from a bug) is not used:
// the file is decoded, a warning says why, the output is close to a
// cache-less conversion's (the run renders from the 16-bit entry it
// stores), and the next run is served by the entry rebuilt from the
// decode, writing the same output. Without the check a 6-channel entry makes the camera matrix read
// out of range.
func TestStageCacheWrongSize(t *testing.T) {
	in := filepath.Join(testdata, "raw", "canon_eos_6d.dng")
	s := DefaultSettings()
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.jpg")
	if _, err := ConvertFile(context.Background(), in, ref, s); err != nil {
		t.Fatal(err)
	}
	hash, _, _, err := state.HashFile(in)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := ReadInfo(in)
	if err != nil {
		t.Fatal(err)
	}
	w, h := fi.Width, fi.Height
	for name, forged := range map[string][3]int{"transposed": {h, w, 3}, "one channel": {w, h, 1}, "six channels": {w, h, 6}, "smaller": {w / 2, h, 3}} {
		t.Run(name, func(t *testing.T) {
			c, err := cache.Open(filepath.Join(t.TempDir(), "cache"), 0)
			if err != nil {
				t.Fatal(err)
			}
			opts := &CacheOptions{Cache: c, Keep: true}
			pix := make([]float32, forged[0]*forged[1]*forged[2])
			if err := c.Put(CacheKey(hash, s), forged[0], forged[1], forged[2], pix); err != nil {
				t.Fatal(err)
			}
			out := []OutputSpec{{Variant: Variant{Name: "main", Format: "jpeg", Space: "srgb"}, Path: filepath.Join(t.TempDir(), "a.jpg")}}
			r, err := ConvertVariants(context.Background(), in, out, s, opts)
			if err != nil || !r.Decoded || r.FromCache {
				t.Fatalf("decoded %v, from cache %v, %v", r.Decoded, r.FromCache, err)
			}
			if !strings.Contains(strings.Join(r.Warnings, "\n"), "stage cache entry not used") {
				t.Errorf("warnings %q, want one about the entry", r.Warnings)
			}
			// The storing run renders from the entry's 16-bit image (camera
			// RGB rounded to 1/32767.5, below 0 clipped, as a two-pass
			// stream's stored rows): a JPEG's ΔE2000 to the run without
			// the cache is 0.16 on average here.
			if mean, _ := deltaEMeanMax(decodeImage(t, ref), decodeImage(t, out[0].Path)); mean > 0.3 {
				t.Errorf("output differs from a conversion without the cache: ΔE2000 mean %g", mean)
			}
			stored, _ := os.ReadFile(out[0].Path)
			r, err = ConvertVariants(context.Background(), in, out, s, opts)
			if got, _ := os.ReadFile(out[0].Path); !bytes.Equal(got, stored) {
				t.Error("the hit's output differs from the storing run's")
			}
			if err != nil || !r.FromCache {
				t.Errorf("next run: from cache %v, %v; want the rebuilt entry used", r.FromCache, err)
			}
		})
	}
}

// TestWrittenByRawbatchLargeWebP: a WebP output whose EXIF chunk lies far
// beyond its first 64 KiB (after the image data) is still recognised as
// rawbatch's, so a re-run without records does not refuse it; a WebP
// without our EXIF is not.
func TestWrittenByRawbatchLargeWebP(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "big.webp")
	outs := []OutputSpec{{Variant: Variant{Name: "main", Format: "webp", Quality: 100}, Path: out}}
	if _, err := ConvertVariants(context.Background(), filepath.Join(testdata, "raw", "canond30_CRW.CRW"), outs, DefaultSettings(), nil); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	if i := bytes.Index(b, []byte("rawbatch\x00")); i < 64<<10 {
		t.Fatalf("test needs the EXIF past 64 KiB; it is at %d of %d bytes", i, len(b))
	}
	if !WrittenByRawbatch(out) {
		t.Error("rawbatch's own large WebP not recognised")
	}
	i := bytes.Index(b, []byte("rawbatch\x00"))
	copy(b[i:], "someone\x00\x00")
	foreign := filepath.Join(dir, "foreign.webp")
	os.WriteFile(foreign, b, 0o644)
	if WrittenByRawbatch(foreign) {
		t.Error("a WebP without rawbatch's EXIF counted as rawbatch's")
	}
}

// TestEncodeErrorNamesOutput: a failure to write an output names the output,
// not its temporary file, and keeps the cause.
func TestEncodeErrorNamesOutput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "missing-dir", "a.jpg")
	_, err := ConvertVariants(context.Background(), filepath.Join(testdata, "raw", "canon_eos_6d.dng"),
		[]OutputSpec{{Variant: Variant{Name: "main", Format: "jpeg"}, Path: out}}, DefaultSettings(), nil)
	if err == nil || !strings.Contains(err.Error(), "writing "+out+": no such file or directory") || strings.Contains(err.Error(), TempPrefix) {
		t.Errorf("err = %v, want it to name %s and not the temporary file", err, out)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v does not keep its cause", err)
	}
}
