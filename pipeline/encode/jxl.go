package encode

import (
	"errors"
	"fmt"
	"image"
	"io"
	"runtime"

	"github.com/rawbatch/rawbatch/pipeline/internal/jxl"
)

// JXLOptions are the settings of a JPEG XL encode.
type JXLOptions struct {
	// Bits per sample: 8 or 16.
	Bits int
	// Lossless codes the samples exactly; otherwise Quality 1..100 sets
	// the butteraugli distance (jxl.Distance).
	Lossless bool
	Quality  int
	// Effort is libjxl's effort, 1 (fastest) .. 9.
	Effort int
	// HDR, when HDR.Transfer is set, makes an HDR image (see HDR).
	HDR HDR
}

// JXLDefaultEffort is the effort of a JPEG XL variant that gives none.
const JXLDefaultEffort = jxl.DefaultEffort

// JXL encodes img as a JPEG XL file with libjxl (pipeline/internal/jxl):
// an SDR image with icc as its colour profile (lossy: coded in XYB, the
// profile kept for decoders), an HDR one (o.HDR.Transfer: its pixels 16-bit
// PQ or HLG code values) with the colour encoding BT.2100 primaries, D65
// and that transfer function instead of an ICC profile, and its
// intensity target (peak luminance) MaxCLL when set (10000 nits for PQ,
// 1000 for HLG otherwise). EXIF(md) goes in an Exif box (ISO/IEC 18181-2:
// a 4-byte offset 0, then the TIFF block), xmpOf(md) in an "xml " box.
//
// The whole frame is held: a packed copy of the samples (3 or 6 bytes a
// pixel) and libjxl's planes (JXLWorkingBytes); the file is written to w
// as libjxl makes it, 64 KiB at a time.
func JXL(w io.Writer, img image.Image, o JXLOptions, icc []byte, md Metadata) error {
	if img.Bounds().Empty() {
		return errors.New("encode: empty image")
	}
	jo := jxl.Options{
		Bits: o.Bits, Lossless: o.Lossless, Quality: o.Quality, Effort: o.Effort,
		Colour: jxl.ColourICC, ICC: icc, EXIF: EXIF(md), XMP: xmpOf(md),
	}
	switch o.HDR.Transfer {
	case "":
	case HDRPQ, HDRHLG:
		if o.Bits != 16 {
			return fmt.Errorf("encode: JPEG XL %s needs 16 bits, not %d", o.HDR.Transfer, o.Bits)
		}
		jo.ICC, jo.Colour, jo.IntensityTarget = nil, jxl.ColourPQ, 10000
		if o.HDR.Transfer == HDRHLG {
			jo.Colour, jo.IntensityTarget = jxl.ColourHLG, 1000
		}
		if o.HDR.MaxCLL > 0 {
			jo.IntensityTarget = float64(o.HDR.MaxCLL)
		}
	default:
		return fmt.Errorf("encode: unknown HDR transfer %q (pq, hlg)", o.HDR.Transfer)
	}
	var p8 []byte
	var p16 []uint16
	var wd, ht int
	switch o.Bits {
	case 8:
		p8, wd, ht = packRGB8(img)
	case 16:
		p16, wd, ht = packRGB16(img, 16)
	default:
		return fmt.Errorf("encode: JPEG XL bits %d: want 8 or 16", o.Bits)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	e, err := jxl.New(encoderThreads())
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	defer e.Close()
	if err := e.Encode(w, wd, ht, p8, p16, jo); err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	return nil
}

// JXLWorkingBytes is the memory in bytes of encoding a width×height JPEG
// XL image with o (besides the quantised image it is given): the packed
// samples and libjxl's (jxl.WorkingBytes).
func JXLWorkingBytes(width, height int, o JXLOptions) int64 {
	px := int64(width) * int64(height)
	packed := 3 * px
	if o.Bits > 8 {
		packed = 6 * px
	}
	return packed + jxl.WorkingBytes(width, height, o.Effort, o.Lossless)
}
