package pipeline

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/encode"
)

// TestThumbnail: a thumbnail keeps its output's levels (a WebP's dark
// and light patches within 4 of 255: not lifted and dimmed as a
// limited-range decode would make them), is at most the long edge, and
// carries the output's ICC profile (a ProPhoto PNG's).
func TestThumbnail(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 800, 400))
	for y := range 400 {
		for x := range 800 {
			v := uint8(20)
			if x >= 400 {
				v = 235
			}
			img.SetNRGBA(x, y, color.NRGBA{v, v, v, 255})
		}
	}
	pro, ok := colour.ICCProfile("ProPhoto-v4")
	if !ok {
		t.Fatal("no ProPhoto profile")
	}
	var webp, png bytes.Buffer
	if err := encode.WebP(&webp, img, 90, false, nil, encode.Metadata{}); err != nil {
		t.Fatal(err)
	}
	if err := encode.PNG16(&png, img, pro, encode.Metadata{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		file []byte
		icc  []byte
	}{{"webp", webp.Bytes(), nil}, {"png16 prophoto", png.Bytes(), pro}} {
		th, err := Thumbnail(c.file, 512, 1<<20)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		dec, err := jpeg.Decode(bytes.NewReader(th))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if b := dec.Bounds(); b.Dx() != 512 || b.Dy() != 256 {
			t.Errorf("%s: thumbnail %v, want 512×256", c.name, b)
		}
		for _, p := range []struct{ x, want int }{{100, 20}, {400, 235}} {
			r, _, _, _ := dec.At(p.x, 128).RGBA()
			if got := int(r >> 8); math.Abs(float64(got-p.want)) > 4 {
				t.Errorf("%s: level %d at x=%d, want %d", c.name, got, p.x, p.want)
			}
		}
		icc, err := encode.ReadICC(th)
		if err != nil || !bytes.Equal(icc, c.icc) {
			t.Errorf("%s: thumbnail's ICC profile %d bytes (%v), want the output's %d", c.name, len(icc), err, len(c.icc))
		}
	}
	if _, err := Thumbnail(png.Bytes(), 512, 1000); err == nil {
		t.Error("a file over maxPixels made a thumbnail")
	}
}
