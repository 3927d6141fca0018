package pipeline

import (
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
	"github.com/rawbatch/rawbatch/pipeline/look"
)

// scoreAgainstPreview is issue 12's measure of an output: the mean
// CIEDE2000 between the 16-bit sRGB image out (upright) and the embedded
// preview of in (turned upright the same way), both reduced to 256 cells
// wide in linear light (look.ScorePreview). The preview is decoded at its
// full size here, not the pipeline's reduced copy: the score moves by up
// to 1 ΔE with the preview's resolution on the 6D DNG (2.31 from its
// 1024 px, 3.34 from 512 px), as the 256-cell grids then align
// differently.
func scoreAgainstPreview(t testing.TB, in, out string) float64 {
	t.Helper()
	prev, space := previewUpright(t, in)
	sc, err := look.ScorePreview(outputLinear(t, out), colour.SRGB, prev, space)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// previewUpright is in's embedded preview decoded at its full size,
// display-linear in its space, turned upright as the output is.
func previewUpright(t testing.TB, in string) (look.Image, *colour.Space) {
	t.Helper()
	s := DefaultSettings()
	// Nothing may need the preview, so the preview stage leaves it to
	// this call (LibRaw extracts a file's preview once per open).
	s.ExposureAnchor = AnchorNone
	s.WhiteBalance = WhiteBalance{Mode: "daylight"}
	j := openForPreview(t, in, s)
	th, err := j.h.Thumbnail()
	if err != nil {
		t.Fatalf("%s: %v", in, err)
	}
	bw, bh := 0, 0
	if th.Format == libraw.ThumbBitmap {
		bw, bh = th.Width, th.Height
	}
	pw, ph := j.pictureSize() // the output's area (--crop)
	p, err := look.DecodePreview(th.Data, bw, bh, th.Colors, pw, ph)
	if err != nil {
		t.Fatalf("%s: %v", in, err)
	}
	up := Orient(Image{W: p.Image.W, H: p.Image.H, Pix: p.Image.Pix}, j.info.Flip)
	return look.Image{W: up.W, H: up.H, Pix: up.Pix}, p.Space
}

// outputLinear reads a 16-bit sRGB output as linear sRGB.
func outputLinear(t testing.TB, out string) look.Image {
	t.Helper()
	img := decodeImage(t, out)
	w, h := img.Bounds().Dx(), img.Bounds().Dy()
	o := look.Image{W: w, H: h, Pix: make([]float32, 3*w*h)}
	for y := range h {
		for x := range w {
			r, g, b := rgb16(img, x, y)
			i := 3 * (y*w + x)
			o.Pix[i] = float32(colour.SRGBDecode(float64(r) / 65535))
			o.Pix[i+1] = float32(colour.SRGBDecode(float64(g) / 65535))
			o.Pix[i+2] = float32(colour.SRGBDecode(float64(b) / 65535))
		}
	}
	return o
}
