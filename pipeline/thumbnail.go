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
	// the format, its YCbCr taken as VP8's limited range (WebPToRGB): Go's
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
			return encode.WebPToRGB(m), "webp", nil
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
