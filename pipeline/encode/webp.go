package encode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"io"
	"math"

	"github.com/gen2brain/webp"
)

// WebPMethod is the libwebp method (0 = fastest … 6 = slowest, smallest)
// that WebP uses; 4 is libwebp's default.
const WebPMethod = 4

// MaxWebPSide is the largest WebP width or height (VP8/VP8L store 14 bits).
const MaxWebPSide = 16383

// WebP container flags of the VP8X chunk (WebP container specification,
// "Extended File Format"; RFC 9649 §2.7).
const (
	vp8xFlagICC   = 0x20
	vp8xFlagAlpha = 0x10
	vp8xFlagEXIF  = 0x08
	vp8xFlagXMP   = 0x04
)

// WebP encodes img as a WebP file with libwebp through
// github.com/gen2brain/webp: lossy VP8 at quality 1..100 (libwebp's scale,
// method WebPMethod) or, when lossless is true, lossless VP8L (quality is
// then ignored, but must still be in 1..100). The pixels are 8-bit RGB,
// converted as for PNG8 (16-bit images rounded, translucent pixels
// composited over black).
//
// The library writes a simple-format file (RIFF "WEBP" with one VP8 or VP8L
// chunk) and no metadata, so WebP rewrites the container into the extended
// format (WebP container specification, "Extended File Format"; RFC 9649
// §2.7): VP8X (flags ICC when icc is non-empty, EXIF always, Alpha only if
// the bitstream carries alpha; canvas size = image size), ICCP (the profile
// bytes, when icc is non-empty), the library's image chunks (ALPH, VP8 /
// VP8L) unchanged, then EXIF (the TIFF block of EXIF(md), starting "MM",
// without an "Exif\0\0" prefix, as libwebp's tools write it) and, unless
// md.Strip, "XMP " (the packet of md.XMP; flag XMP in VP8X). Chunks are
// padded to even sizes.
//
// The whole encoded file is held in memory before it is written to w.
func WebP(w io.Writer, img image.Image, quality int, lossless bool, icc []byte, md Metadata) error {
	if quality < 1 || quality > 100 {
		return fmt.Errorf("encode: WebP quality %d outside 1..100", quality)
	}
	b := img.Bounds()
	if b.Empty() {
		return errors.New("encode: empty image")
	}
	if b.Dx() > MaxWebPSide || b.Dy() > MaxWebPSide {
		return fmt.Errorf("encode: %dx%d image too large for WebP (max %d)", b.Dx(), b.Dy(), MaxWebPSide)
	}
	src := webpSource(img)
	var enc bytes.Buffer
	if err := webp.Encode(&enc, src, webp.Options{Quality: quality, Lossless: lossless, Method: WebPMethod}); err != nil {
		return fmt.Errorf("encode: webp: %w", err)
	}
	out, err := webpExtend(enc.Bytes(), b.Dx(), b.Dy(), icc, EXIF(md), xmpOf(md))
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

// webpSource returns an opaque 8-bit RGBA or NRGBA image whose Pix is
// tightly packed from the first pixel (gen2brain/webp passes Pix to libwebp
// with stride 4·width).
func webpSource(img image.Image) image.Image {
	s := rgb8Source(img)
	var pix []byte
	var stride int
	var r image.Rectangle
	switch m := s.(type) {
	case *image.RGBA:
		pix, stride, r = m.Pix, m.Stride, m.Rect
	case *image.NRGBA:
		pix, stride, r = m.Pix, m.Stride, m.Rect
	}
	if stride == 4*r.Dx() && len(pix) >= 4*r.Dx()*r.Dy() {
		return s
	}
	m := image.NewRGBA(image.Rect(0, 0, r.Dx(), r.Dy()))
	draw.Draw(m, m.Rect, s, r.Min, draw.Src)
	return m
}

type riffChunk struct {
	id   string
	data []byte
}

// webpChunks parses a RIFF WEBP file into its chunks.
func webpChunks(b []byte) ([]riffChunk, error) {
	if len(b) < 12 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WEBP" {
		return nil, errors.New("encode: webp: encoder output is not RIFF WEBP")
	}
	size := binary.LittleEndian.Uint32(b[4:])
	if uint64(size)+8 > uint64(len(b)) {
		return nil, errors.New("encode: webp: truncated RIFF")
	}
	b = b[12 : 8+size]
	var cs []riffChunk
	for len(b) > 0 {
		if len(b) < 8 {
			return nil, errors.New("encode: webp: truncated chunk header")
		}
		n := uint64(binary.LittleEndian.Uint32(b[4:]))
		if 8+n > uint64(len(b)) {
			return nil, errors.New("encode: webp: truncated chunk")
		}
		cs = append(cs, riffChunk{string(b[:4]), b[8 : 8+n]})
		b = b[min(uint64(len(b)), 8+n+n%2):]
	}
	return cs, nil
}

// webpExtend rewrites a simple (or extended) WebP file from the encoder
// into the extended format with ICCP and EXIF chunks.
func webpExtend(enc []byte, width, height int, icc, exif, xmp []byte) ([]byte, error) {
	cs, err := webpChunks(enc)
	if err != nil {
		return nil, err
	}
	var img []riffChunk
	var flags byte
	for _, c := range cs {
		switch c.id {
		case "ALPH":
			flags |= vp8xFlagAlpha
			img = append(img, c)
		case "VP8 ":
			w, h, err := vp8Size(c.data)
			if err != nil {
				return nil, err
			}
			if w != width || h != height {
				return nil, fmt.Errorf("encode: webp: VP8 frame %dx%d, want %dx%d", w, h, width, height)
			}
			img = append(img, c)
		case "VP8L":
			w, h, alpha, err := vp8lHeader(c.data)
			if err != nil {
				return nil, err
			}
			if w != width || h != height {
				return nil, fmt.Errorf("encode: webp: VP8L image %dx%d, want %dx%d", w, h, width, height)
			}
			if alpha {
				flags |= vp8xFlagAlpha
			}
			img = append(img, c)
		case "VP8X", "ICCP", "EXIF", "XMP ":
			// Replaced below (the library writes none of them for
			// still images, but VP8X may appear with alpha).
		default:
			return nil, fmt.Errorf("encode: webp: unexpected chunk %q from encoder", c.id)
		}
	}
	if len(img) == 0 || (img[len(img)-1].id != "VP8 " && img[len(img)-1].id != "VP8L") {
		return nil, errors.New("encode: webp: encoder output has no image chunk")
	}
	if len(icc) > 0 {
		flags |= vp8xFlagICC
	}
	flags |= vp8xFlagEXIF
	if len(xmp) > 0 {
		flags |= vp8xFlagXMP
	}
	vp8x := make([]byte, 10)
	vp8x[0] = flags
	putUint24LE(vp8x[4:], uint32(width-1))
	putUint24LE(vp8x[7:], uint32(height-1))

	chunks := []riffChunk{{"VP8X", vp8x}}
	if len(icc) > 0 {
		chunks = append(chunks, riffChunk{"ICCP", icc})
	}
	chunks = append(chunks, img...)
	chunks = append(chunks, riffChunk{"EXIF", exif})
	if len(xmp) > 0 {
		chunks = append(chunks, riffChunk{"XMP ", xmp})
	}

	total := uint64(4) // "WEBP"
	for _, c := range chunks {
		total += 8 + uint64(len(c.data)) + uint64(len(c.data)%2)
	}
	if total > math.MaxUint32-1 {
		return nil, errors.New("encode: webp: file too large for RIFF")
	}
	out := make([]byte, 0, 8+total)
	out = append(out, "RIFF"...)
	out = binary.LittleEndian.AppendUint32(out, uint32(total))
	out = append(out, "WEBP"...)
	for _, c := range chunks {
		out = append(out, c.id...)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(c.data)))
		out = append(out, c.data...)
		if len(c.data)%2 == 1 {
			out = append(out, 0)
		}
	}
	return out, nil
}

func putUint24LE(b []byte, v uint32) {
	b[0], b[1], b[2] = byte(v), byte(v>>8), byte(v>>16)
}

// vp8Size reads the frame size of a VP8 key frame (RFC 6386 §9.1: 3-byte
// frame tag, start code 9D 01 2A, then 14-bit width and height, each with
// 2 scale bits).
func vp8Size(b []byte) (w, h int, err error) {
	if len(b) < 10 || b[0]&1 != 0 || b[3] != 0x9D || b[4] != 0x01 || b[5] != 0x2A {
		return 0, 0, errors.New("encode: webp: bad VP8 key frame header")
	}
	return int(binary.LittleEndian.Uint16(b[6:]) & 0x3FFF), int(binary.LittleEndian.Uint16(b[8:]) & 0x3FFF), nil
}

// vp8lHeader reads a VP8L header (RFC 9649 §3.2: signature 0x2F, then
// 14 bits width−1, 14 bits height−1, 1 bit alpha_is_used, 3 bits version).
func vp8lHeader(b []byte) (w, h int, alpha bool, err error) {
	if len(b) < 5 || b[0] != 0x2F {
		return 0, 0, false, errors.New("encode: webp: bad VP8L header")
	}
	v := binary.LittleEndian.Uint32(b[1:])
	return int(v&0x3FFF) + 1, int(v>>14&0x3FFF) + 1, v>>28&1 != 0, nil
}

// WebPNative reports whether WebP is encoded by the system's libwebp
// (loaded at run time by github.com/gen2brain/webp; Debian: libwebp-dev)
// rather than by the same library compiled to WebAssembly, which is slower
// and needs more memory.
func WebPNative() bool { return webp.Dynamic() == nil }

// WebPToRGB converts a decoded lossy WebP (*image.YCbCr or
// *image.NYCbCrA, as x/image/webp and gen2brain/webp return) to RGBA with
// the conversion WebP specifies: ITU-R BT.601 limited range ("studio
// swing", Y 16–235; RFC 6386 §2 and libwebp's src/dsp/yuv.h:
// R = 1.164(Y−16) + 1.596(Cr−128), …). Go's YCbCr.At uses the JFIF
// full-range formulas instead, which shifts colours by several levels
// and caps PSNR near 30 dB whatever the quality (golang/go#40173).
// Other images are returned
// unchanged.
func WebPToRGB(img image.Image) image.Image {
	var m *image.YCbCr
	switch s := img.(type) {
	case *image.YCbCr:
		m = s
	case *image.NYCbCrA:
		m = &s.YCbCr
	default:
		return img
	}
	b := m.Bounds()
	out := image.NewRGBA(b)
	clip := func(v float64) uint8 { return uint8(max(0, min(255, v+0.5))) }
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			yy := 1.164 * (float64(m.Y[m.YOffset(x, y)]) - 16)
			cb := float64(m.Cb[m.COffset(x, y)]) - 128
			cr := float64(m.Cr[m.COffset(x, y)]) - 128
			out.SetRGBA(x, y, color.RGBA{clip(yy + 1.596*cr), clip(yy - 0.391*cb - 0.813*cr), clip(yy + 2.018*cb), 255})
		}
	}
	return out
}
