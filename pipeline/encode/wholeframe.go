package encode

import (
	"github.com/rawbatch/rawbatch/pipeline/internal/thp"
	"image"
	"runtime"
)

// HDR transfer functions of the AVIF and JPEG XL outputs (HDROptions).
const (
	// HDRPQ is SMPTE ST 2084 (PQ), BT.2100 primaries.
	HDRPQ = "pq"
	// HDRHLG is BT.2100 HLG (ARIB STD-B67), BT.2100 primaries.
	HDRHLG = "hlg"
)

// HDR says how a whole-frame format's pixels are coded when they are HDR:
// Transfer is "" for SDR (the pixels are in the space of the ICC profile
// given), HDRPQ or HDRHLG (16-bit code values of that transfer function on
// BT.2100 primaries, no ICC profile). MaxCLL and MaxFALL are the content
// light level (CTA-861.3: the brightest pixel's and the frame average's
// largest component, in nits), written when MaxCLL > 0.
type HDR struct {
	Transfer        string
	MaxCLL, MaxFALL int
}

// packRGB8 returns img as tightly packed 8-bit RGB samples (3·W·H bytes),
// converted as ImageRows8 does.
// (Whole-frame encoders copy the samples into their own planes anyway.)
func packRGB8(img image.Image) (out []byte, w, h int) {
	src := ImageRows8(img)
	w, h = src.W, src.H
	out = thp.Bytes(3 * w * h)
	for y := range h {
		src.Row(y, out[3*w*y:3*w*(y+1)])
	}
	return out, w, h
}

// packRGB16 returns img as tightly packed RGB samples of depth bits
// (3·W·H values in 0..2^depth−1, round(v·(2^depth−1)/65535) of the 16-bit
// value v): *image.NRGBA64 read directly, other images through At
// (alpha ignored: the pipeline's images are opaque).
func packRGB16(img image.Image, depth int) (out []uint16, w, h int) {
	b := img.Bounds()
	w, h = b.Dx(), b.Dy()
	out = thp.Uint16s(3 * w * h)
	top := uint32(1)<<depth - 1
	scale := func(v uint32) uint16 { return uint16((v*top + 32767) / 65535) }
	if m, ok := img.(*image.NRGBA64); ok {
		for y := range h {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
			o := out[3*w*y:]
			for x := range w {
				p := row[8*x:]
				o[3*x] = scale(uint32(p[0])<<8 | uint32(p[1]))
				o[3*x+1] = scale(uint32(p[2])<<8 | uint32(p[3]))
				o[3*x+2] = scale(uint32(p[4])<<8 | uint32(p[5]))
			}
		}
		return out, w, h
	}
	for y := range h {
		o := out[3*w*y:]
		for x := range w {
			r, g, bl, _ := img.At(b.Min.X+x, b.Min.Y+y).RGBA()
			o[3*x], o[3*x+1], o[3*x+2] = scale(r), scale(g), scale(bl)
		}
	}
	return out, w, h
}

// encoderThreads is how many threads the AV1 and JPEG XL encoders may use:
// GOMAXPROCS, as the develop's own parallel loops.
func encoderThreads() int { return runtime.GOMAXPROCS(0) }
