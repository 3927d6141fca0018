package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // the formats Thumbnail reads: rawbatch's outputs
	_ "image/png"
	"io"

	"github.com/gen2brain/webp"
	"github.com/rawbatch/rawbatch/pipeline/encode"
	"golang.org/x/image/draw"
	_ "golang.org/x/image/tiff"
)

// ErrThumbnailSource: Thumbnail cannot make a thumbnail of the file (a
// format it does not read, or more pixels than allowed).
var ErrThumbnailSource = errors.New("no thumbnail from this file")

// Thumbnail makes a preview of b, an output file rawbatch wrote (JPEG,
// PNG, TIFF or WebP), for a web page: decoded, scaled bilinearly to at
// most longEdge pixels on its long edge (never enlarged), and encoded as
// a JPEG at quality 85 carrying b's ICC profile (encode.ReadICC), so that
// a browser shows an Adobe RGB or ProPhoto output's colours as the
// output's own. A file of more than maxPixels pixels is refused before
// it is decoded. Errors: ErrThumbnailSource (wrapped), a damaged file or
// profile, the encoder's.
func Thumbnail(b []byte, longEdge int, maxPixels int64) ([]byte, error) {
	// WebP through libwebp (gen2brain/webp), whatever else registered
	// the format, its YCbCr taken as VP8's limited range (vp8RGB): Go's
	// YCbCr types are full range, which lifts blacks to 16 and dims
	// whites to 235.
	decodeConfig, decode := image.DecodeConfig, image.Decode
	if len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP" {
		decodeConfig = func(r io.Reader) (image.Config, string, error) { c, err := webp.DecodeConfig(r); return c, "webp", err }
		decode = func(r io.Reader) (image.Image, string, error) {
			m, err := webp.Decode(r)
			if err != nil {
				return nil, "webp", err
			}
			return vp8RGB(m), "webp", nil
		}
	}
	cfg, _, err := decodeConfig(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrThumbnailSource, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > maxPixels {
		return nil, fmt.Errorf("%w: %d×%d pixels", ErrThumbnailSource, cfg.Width, cfg.Height)
	}
	icc, err := encode.ReadICC(b)
	if err != nil {
		return nil, err
	}
	src, _, err := decode(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	sb := src.Bounds()
	w, h := sb.Dx(), sb.Dy()
	if long := max(w, h); long > longEdge {
		w, h = max(1, w*longEdge/long), max(1, h*longEdge/long)
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.BiLinear.Scale(dst, dst.Bounds(), src, sb, draw.Src, nil)
	var out bytes.Buffer
	if err := encode.JPEG(&out, dst, 85, icc, encode.Metadata{}); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// vp8RGB returns m as RGB when it is YCbCr as VP8 codes it (lossy WebP):
// ITU-R BT.601 with luma in 16..235 and chroma in 16..240 (RFC 6386
// §9.2 refers to BT.601; libwebp's VP8YuvToRgb: R = 1.164·(Y − 16) +
// 1.596·(Cr − 128), G = 1.164·(Y − 16) − 0.813·(Cr − 128) − 0.391·(Cb −
// 128), B = 1.164·(Y − 16) + 2.018·(Cb − 128)); any other image as it is.
func vp8RGB(m image.Image) image.Image {
	var yc *image.YCbCr
	switch t := m.(type) {
	case *image.YCbCr:
		yc = t
	case *image.NYCbCrA:
		yc = &t.YCbCr
	default:
		return m
	}
	b := yc.Bounds()
	out := image.NewRGBA(b)
	clamp := func(v float64) uint8 { return uint8(min(255, max(0, v+0.5))) }
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			yy := 1.164 * (float64(yc.Y[yc.YOffset(x, y)]) - 16)
			ci := yc.COffset(x, y)
			cb, cr := float64(yc.Cb[ci])-128, float64(yc.Cr[ci])-128
			i := out.PixOffset(x, y)
			out.Pix[i] = clamp(yy + 1.596*cr)
			out.Pix[i+1] = clamp(yy - 0.813*cr - 0.391*cb)
			out.Pix[i+2] = clamp(yy + 2.018*cb)
			out.Pix[i+3] = 255
		}
	}
	return out
}
