package pipeline

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
	"github.com/rawbatch/rawbatch/pipeline/look"
)

// scoreAgainstPreview is the look's measure of an output (docs/look.md): the mean
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

// scoreLook is scoreAgainstPreview for an output converted with s, with
// the preview in the output's geometry: when the conversion corrected the
// lens's distortion or TCA (the camera's own JPEG of most bodies did not),
// the preview goes through the same geometric correction first, as the
// lens stage does for the exposure anchor and the camera look
// (lensPreview), so that the score compares colour and tone cell by cell
// and not a 2 % change of scale. geometric reports that it did.
func scoreLook(t testing.TB, in, out string, s Settings, res Result) (score float64, geometric bool) {
	t.Helper()
	if res.Lens == nil || !strings.Contains(res.Lens.Corrections, "distortion") && !strings.Contains(res.Lens.Corrections, "TCA") {
		return scoreAgainstPreview(t, in, out), false
	}
	prev, space := previewInOutputGeometry(t, in, s)
	sc, err := look.ScorePreview(outputLinear(t, out), colour.SRGB, prev, space)
	if err != nil {
		t.Fatal(err)
	}
	return sc, true
}

// previewInOutputGeometry is in's embedded preview (the preview stage's
// reduced copy) after the lens stage with s, upright.
func previewInOutputGeometry(t testing.TB, in string, s Settings) (look.Image, *colour.Space) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	hdr, err := ReadHeader(in)
	if err != nil {
		t.Fatal(err)
	}
	// Settings that keep the preview; the lens geometry does not depend on
	// the look.
	s.Look, s.ExposureAnchor = LookDefault, AnchorPreview
	j := &job{in: in, settings: s, hdr: hdr}
	defer j.cleanup()
	for _, st := range activeStages(s) {
		if err := st.run(context.Background(), j); err != nil {
			t.Fatalf("%s: %s: %v", in, st.Name, err)
		}
		if st.Name == lensStage.Name {
			break
		}
	}
	if j.preview == nil || j.lens == nil || j.lens.Corrections == "" {
		t.Fatalf("%s: look %s: no preview kept (%v, %s) or no lens geometry corrected (%+v)", in, s.Look, j.preview != nil, j.previewNote, j.lens)
	}
	up := Orient(Image{W: j.preview.Image.W, H: j.preview.Image.H, Pix: j.preview.Image.Pix}, j.info.Flip)
	return look.Image{W: up.W, H: up.H, Pix: up.Pix}, j.preview.Space
}
