package encode

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"math/rand"
	"testing"

	gwebp "github.com/gen2brain/webp"
	"github.com/rwcarlsen/goexif/exif"
	xwebp "golang.org/x/image/webp"
)

// checkWebPContainer verifies the extended-format layout written by WebP:
// VP8X (flags, canvas), ICCP (if icc), the image chunk, EXIF; and returns
// the image chunk's FourCC.
func checkWebPContainer(t *testing.T, out []byte, w, h int, icc []byte) string {
	t.Helper()
	if binary.LittleEndian.Uint32(out[4:]) != uint32(len(out)-8) {
		t.Errorf("RIFF size %d, file %d", binary.LittleEndian.Uint32(out[4:]), len(out))
	}
	cs, err := webpChunks(out)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.id)
	}
	want := []string{"VP8X", "ICCP", "?", "EXIF"}
	if len(icc) == 0 {
		want = []string{"VP8X", "?", "EXIF"}
	}
	if len(ids) != len(want) {
		t.Fatalf("chunks %q, want %q", ids, want)
	}
	img := ""
	for i := range want {
		if want[i] == "?" {
			img = ids[i]
			if img != "VP8 " && img != "VP8L" {
				t.Errorf("image chunk %q", img)
			}
		} else if ids[i] != want[i] {
			t.Errorf("chunks %q, want %q", ids, want)
		}
	}
	x := cs[0].data
	wantFlags := byte(vp8xFlagEXIF)
	if len(icc) > 0 {
		wantFlags |= vp8xFlagICC
	}
	if len(x) != 10 || x[0] != wantFlags || x[1]|x[2]|x[3] != 0 {
		t.Errorf("VP8X % x, want flags %#x", x, wantFlags)
	}
	if cw, ch := int(x[4])|int(x[5])<<8|int(x[6])<<16, int(x[7])|int(x[8])<<8|int(x[9])<<16; cw+1 != w || ch+1 != h {
		t.Errorf("canvas %dx%d, want %dx%d", cw+1, ch+1, w, h)
	}
	if len(icc) > 0 && !bytes.Equal(cs[1].data, icc) {
		t.Errorf("ICCP chunk: %d bytes, differs from the %d-byte profile", len(cs[1].data), len(icc))
	}
	ex, err := exif.Decode(bytes.NewReader(cs[len(cs)-1].data))
	if err != nil {
		t.Fatalf("EXIF chunk: %v", err)
	}
	checkTestMeta(t, ex)
	return img
}

func TestWebPLossy(t *testing.T) {
	icc := srgbProfile(t)
	src := smoothRGBA(301, 203) // odd sizes
	var buf bytes.Buffer
	if err := WebP(&buf, src, 80, false, icc, testMeta); err != nil {
		t.Fatal(err)
	}
	out := buf.Bytes()
	if id := checkWebPContainer(t, out, 301, 203, icc); id != "VP8 " {
		t.Errorf("lossy image chunk %q", id)
	}
	dec, err := xwebp.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("x/image/webp: %v", err)
	}
	if dec.Bounds().Dx() != 301 || dec.Bounds().Dy() != 203 {
		t.Fatalf("decoded %v", dec.Bounds())
	}
	// Compare with WebP's own YCbCr→RGB conversion (see WebPToRGB);
	// Go's JFIF conversion alone gives ≈30 dB at any quality.
	p := psnr(t, src, WebPToRGB(dec))
	t.Logf("q=80: %d bytes, PSNR %.1f dB (Go's YCbCr.At: %.1f dB)", len(out), p, psnr(t, src, dec))
	if p < 36 {
		t.Errorf("PSNR %.1f dB < 36", p)
	}
	// libwebp's own (strict) demuxer must accept the container too.
	dec2, err := gwebp.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("libwebp: %v", err)
	}
	if p2 := psnr(t, src, WebPToRGB(dec2)); p2 < 36 {
		t.Errorf("libwebp decode PSNR %.1f", p2)
	}
	// Lower quality gives a smaller file.
	var low bytes.Buffer
	if err := WebP(&low, src, 10, false, icc, testMeta); err != nil {
		t.Fatal(err)
	}
	if low.Len() >= len(out) {
		t.Errorf("q=10 file %d bytes, not smaller than q=80 %d", low.Len(), len(out))
	}
}

func TestWebPLossless(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	src := smoothRGBA(97, 61)
	for i := 0; i < len(src.Pix); i += 4 { // add noise: exactness must hold
		src.Pix[i] += byte(r.Intn(5))
	}
	var buf bytes.Buffer
	if err := WebP(&buf, src, 75, true, nil, testMeta); err != nil {
		t.Fatal(err)
	}
	out := buf.Bytes()
	if id := checkWebPContainer(t, out, 97, 61, nil); id != "VP8L" {
		t.Errorf("lossless image chunk %q", id)
	}
	dec, err := xwebp.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("x/image/webp: %v", err)
	}
	if p := psnr(t, src, dec); p != posInf {
		t.Errorf("lossless PSNR %.1f dB, want exact", p)
	}
	// libwebp's demuxer must accept the container. (gen2brain/webp decodes
	// still images to 4:2:0 YCbCr, so its pixels are not compared.)
	if dec2, err := gwebp.Decode(bytes.NewReader(out)); err != nil {
		t.Errorf("libwebp: %v", err)
	} else if dec2.Bounds().Dx() != 97 || dec2.Bounds().Dy() != 61 {
		t.Errorf("libwebp: decoded %v", dec2.Bounds())
	}
}

var posInf = func() float64 { var z float64; return 1 / z }()

// TestWebPInputs: 16-bit input is rounded to 8 bits, and sub-images (whose
// Stride is not 4·width) are encoded correctly.
func TestWebPInputs(t *testing.T) {
	big := smoothRGBA(120, 90)
	sub := big.SubImage(image.Rect(10, 20, 73, 61)).(*image.RGBA)
	want := image.NewRGBA(image.Rect(0, 0, 63, 41))
	for y := 0; y < 41; y++ {
		for x := 0; x < 63; x++ {
			want.SetRGBA(x, y, sub.RGBAAt(10+x, 20+y))
		}
	}
	src16 := image.NewNRGBA64(image.Rect(0, 0, 63, 41))
	for y := 0; y < 41; y++ {
		for x := 0; x < 63; x++ {
			c := want.RGBAAt(x, y)
			// 8-bit value v as 16 bits v·257 ± 100 still rounds to v.
			src16.SetNRGBA64(x, y, color.NRGBA64{uint16(c.R)*257 + 100, uint16(c.G)*257 - min(uint16(c.G)*257, 100), uint16(c.B) * 257, 0xFFFF})
		}
	}
	for name, img := range map[string]image.Image{"sub-image": sub, "NRGBA64": src16} {
		var buf bytes.Buffer
		if err := WebP(&buf, img, 90, true, nil, testMeta); err != nil {
			t.Fatal(err)
		}
		dec, err := xwebp.Decode(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if dec.Bounds().Dx() != 63 || dec.Bounds().Dy() != 41 {
			t.Fatalf("%s: decoded %v", name, dec.Bounds())
		}
		if p := psnr(t, want, dec); p != posInf {
			t.Errorf("%s: PSNR %.1f, want exact", name, p)
		}
	}
}

func TestWebPErrors(t *testing.T) {
	src := smoothRGBA(8, 8)
	for _, q := range []int{0, -1, 101} {
		if err := WebP(&bytes.Buffer{}, src, q, false, nil, Metadata{}); err == nil {
			t.Errorf("quality %d accepted", q)
		}
	}
	if err := WebP(&bytes.Buffer{}, image.NewRGBA(image.Rect(0, 0, 16384, 1)), 80, false, nil, Metadata{}); err == nil {
		t.Error("16384 px wide image accepted")
	}
	if err := WebP(&failWriter{n: 10}, src, 80, false, nil, testMeta); err == nil {
		t.Error("write error not reported")
	}
	if _, err := webpExtend([]byte("RIFF\x04\x00\x00\x00WEBP"), 8, 8, nil, nil, nil); err == nil {
		t.Error("file without image chunk accepted")
	}
}

// BenchmarkWebP512 encodes a 512×341 photo-like (smooth plus noise) image,
// the size of a preview.
func BenchmarkWebP512(b *testing.B) {
	src := smoothRGBA(512, 341)
	r := rand.New(rand.NewSource(7))
	for i := range src.Pix {
		if i%4 != 3 {
			src.Pix[i] += byte(r.Intn(8))
		}
	}
	gwebp.Init() // compile the WASM module outside the timing
	for _, tc := range []struct {
		name     string
		lossless bool
	}{{"lossy-q80", false}, {"lossless", true}} {
		b.Run(tc.name, func(b *testing.B) {
			var buf bytes.Buffer
			b.SetBytes(512 * 341 * 3)
			for b.Loop() {
				buf.Reset()
				if err := WebP(&buf, src, 80, tc.lossless, nil, testMeta); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(buf.Len())/1e3, "kB/file")
		})
	}
}
