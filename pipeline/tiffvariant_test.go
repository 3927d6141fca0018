package pipeline

import (
	"context"
	"image"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/image/tiff"
)

// TIFF variants with each compression decode (x/image/tiff, which reads LZW
// and Deflate) to the pixels of the same rendition written as PNG: 16-bit
// against png16, 8-bit against png8, with no level of difference.
func TestTIFFVariantsCompressions(t *testing.T) {
	dir := t.TempDir()
	in := writeChart(t, dir, testChart(), 6, 0)
	var outs []OutputSpec
	add := func(name, format, compress, predictor, ext string) {
		outs = append(outs, OutputSpec{Variant: Variant{Name: name, Format: format, Space: "adobergb", Compress: compress, Predictor: predictor}.Normal(),
			Path: filepath.Join(dir, "c."+name+ext)})
	}
	add("ref16", "png16", "", "", ".png")
	add("ref8", "png8", "", "", ".png")
	for _, c := range []struct{ compress, predictor string }{{"", ""}, {"deflate", ""}, {"deflate", "none"}, {"lzw", ""}, {"lzw", "none"}} {
		add("t16-"+c.compress+c.predictor, "tiff16", c.compress, c.predictor, ".tif")
		add("t8-"+c.compress+c.predictor, "tiff8", c.compress, c.predictor, ".tif")
	}
	if _, err := ConvertVariants(context.Background(), in, outs, referenceSettings(), nil); err != nil {
		t.Fatal(err)
	}
	ref16, ref8 := decodeImage(t, outs[0].Path), decodeImage(t, outs[1].Path)
	for _, o := range outs[2:] {
		f, err := os.Open(o.Path)
		if err != nil {
			t.Fatal(err)
		}
		img, err := tiff.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: x/image/tiff: %v", filepath.Base(o.Path), err)
		}
		ref := ref16
		if o.Variant.Format == "tiff8" {
			ref = ref8
		}
		if d := maxDiff16(ref, img); d > 0 {
			t.Errorf("%s: differs from the PNG by up to %d (of 65535)", filepath.Base(o.Path), d)
		}
	}
}

// maxDiff16 is the largest difference of a 16-bit R, G or B sample between
// a and b (65535 when their sizes differ).
func maxDiff16(a, b image.Image) int {
	if a.Bounds().Size() != b.Bounds().Size() {
		return 65535
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
	return m
}
