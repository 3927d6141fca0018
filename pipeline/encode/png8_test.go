package encode

import (
	"bytes"
	"compress/zlib"
	"image"
	"image/color"
	"image/png"
	"io"
	"testing"

	"github.com/rwcarlsen/goexif/exif"
)

func TestPNG8(t *testing.T) {
	icc := srgbProfile(t)
	src := smoothRGBA(201, 57)
	var buf bytes.Buffer
	if err := PNG8(&buf, src, icc, testMeta); err != nil {
		t.Fatal(err)
	}
	out := buf.Bytes()
	dec, err := png.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := dec.(*image.RGBA); !ok {
		t.Errorf("decoded as %T, want *image.RGBA (8-bit)", dec)
	}
	if p := psnr(t, src, dec); p != posInf {
		t.Errorf("pixels differ: PSNR %.1f", p)
	}
	cs := pngChunks(t, out)
	ihdr := cs[0].data
	if cs[0].typ != "IHDR" || ihdr[8] != 8 || ihdr[9] != 2 {
		t.Fatalf("IHDR %s depth %d colour type %d, want 8, 2", cs[0].typ, ihdr[8], ihdr[9])
	}
	if cs[1].typ != "iCCP" {
		t.Fatalf("chunk after IHDR %s", cs[1].typ)
	}
	_, rest, _ := bytes.Cut(cs[1].data, []byte{0})
	zr, err := zlib.NewReader(bytes.NewReader(rest[1:]))
	if err != nil {
		t.Fatal(err)
	}
	if prof, err := io.ReadAll(zr); err != nil || !bytes.Equal(prof, icc) {
		t.Errorf("iCCP profile differs (%v)", err)
	}
	if cs[2].typ != "eXIf" {
		t.Fatalf("third chunk %s, want eXIf", cs[2].typ)
	}
	x, err := exif.Decode(bytes.NewReader(cs[2].data))
	if err != nil {
		t.Fatal(err)
	}
	checkTestMeta(t, x)

	// The metadata chunks are byte-identical to PNG16's.
	var b16 bytes.Buffer
	if err := PNG16(&b16, gradient64(10, 10), icc, testMeta); err != nil {
		t.Fatal(err)
	}
	c16 := pngChunks(t, b16.Bytes())
	for i := 1; i <= 2; i++ {
		if c16[i].typ != cs[i].typ || !bytes.Equal(c16[i].data, cs[i].data) {
			t.Errorf("chunk %d: PNG8 %s differs from PNG16 %s", i, cs[i].typ, c16[i].typ)
		}
	}
}

func TestPNG8InputTypes(t *testing.T) {
	gray := image.NewGray(image.Rect(0, 0, 20, 10))
	for i := range gray.Pix {
		gray.Pix[i] = byte(i * 7)
	}
	n64 := image.NewNRGBA64(image.Rect(0, 0, 20, 10))
	for y := 0; y < 10; y++ {
		for x := 0; x < 20; x++ {
			n64.SetNRGBA64(x, y, color.NRGBA64{uint16(x * 3000), 128, 65535 - uint16(y*5000), 0xFFFF})
		}
	}
	translucent := image.NewNRGBA(image.Rect(0, 0, 20, 10))
	for i := range translucent.Pix {
		translucent.Pix[i] = 200
	}
	for name, tc := range map[string]struct {
		img  image.Image
		want func(x, y int) color.RGBA
	}{
		"Gray": {gray, func(x, y int) color.RGBA { v := gray.GrayAt(x, y).Y; return color.RGBA{v, v, v, 255} }},
		"NRGBA64": {n64, func(x, y int) color.RGBA {
			c := n64.NRGBA64At(x, y)
			r8 := func(v uint16) uint8 { return uint8((uint32(v)*255 + 32767) / 65535) }
			return color.RGBA{r8(c.R), r8(c.G), r8(c.B), 255}
		}},
		// 200 at alpha 200/255 over black: 200·200/255 = 156.9 → 157.
		"NRGBA translucent": {translucent, func(x, y int) color.RGBA { return color.RGBA{157, 157, 157, 255} }},
	} {
		var buf bytes.Buffer
		if err := PNG8(&buf, tc.img, nil, Metadata{}); err != nil {
			t.Fatal(err)
		}
		cs := pngChunks(t, buf.Bytes())
		if ihdr := cs[0].data; ihdr[8] != 8 || ihdr[9] != 2 {
			t.Errorf("%s: depth %d colour type %d", name, ihdr[8], ihdr[9])
		}
		if cs[1].typ != "eXIf" {
			t.Errorf("%s: chunk after IHDR %s, want eXIf (no profile given)", name, cs[1].typ)
		}
		dec, err := png.Decode(&buf)
		if err != nil {
			t.Fatal(err)
		}
		for y := 0; y < 10; y++ {
			for x := 0; x < 20; x++ {
				r, g, b, a := dec.At(x, y).RGBA()
				got := color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), uint8(a >> 8)}
				if w := tc.want(x, y); got != w {
					t.Fatalf("%s (%d,%d) = %v, want %v", name, x, y, got, w)
				}
			}
		}
	}
	if err := PNG8(io.Discard, image.NewRGBA(image.Rect(0, 0, 0, 0)), nil, Metadata{}); err == nil {
		t.Error("empty image accepted")
	}
}
