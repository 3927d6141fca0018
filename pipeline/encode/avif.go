package encode

import (
	"errors"
	"fmt"
	"image"
	"io"
	"runtime"

	"github.com/rawbatch/rawbatch/pipeline/internal/avif"
)

// AVIFOptions are the settings of an AVIF encode.
type AVIFOptions struct {
	// Depth is 8, 10 or 12 bits per sample.
	Depth int
	// Quality is 1..100 (the AV1 quantizer ((100 − q)·63 + 50)/100).
	Quality int
	// Speed is libavif's speed, 0 (slowest, smallest) .. 10.
	Speed int
	// Subsampling of the chroma planes: "444", "422" or "420".
	Subsampling string
	// Primaries and Transfer are the CICP code points (ITU-T H.273) of an
	// SDR image's colour space, AVIFUnspecified when none exists (Adobe
	// RGB, ProPhoto: the ICC profile alone says). HDR sets its own.
	Primaries, Transfer int
	// HDR, when HDR.Transfer is set, makes an HDR image (see HDR).
	HDR HDR
}

// AVIFUnspecified is the CICP code point "unspecified" (ITU-T H.273).
const AVIFUnspecified = avif.PrimariesUnspec

// AVIF CICP code points of the SDR spaces (ITU-T H.273 tables 2 and 3).
const (
	CICPPrimariesBT709  = avif.PrimariesBT709
	CICPPrimariesP3D65  = avif.PrimariesP3D65
	CICPPrimariesBT2020 = avif.PrimariesBT2020
	CICPTransferSRGB    = avif.TransferSRGB
	CICPTransferBT709   = avif.TransferBT709
)

// AVIFDefaultSpeed is the libavif speed of an AVIF variant that gives none.
const AVIFDefaultSpeed = avif.DefaultSpeed

// AVIF encodes img as a still AVIF image with libavif
// (pipeline/internal/avif), YUV with the BT.601 matrix (BT.2020 NCL for HDR)
// in full range. An SDR image is tagged with icc (the pixels' space) and
// o's CICP; an HDR one (o.HDR.Transfer: its pixels 16-bit PQ or HLG code
// values on BT.2100 primaries) with CICP 9/16 or 9/18 alone, no ICC
// profile, and, when o.HDR.MaxCLL > 0, a clli property (content light
// level, ISO/IEC 23000-22 §7.4.4.2) on the primary item. The EXIF block
// is EXIF(md) (the Exif item, libavif adding the 4-byte TIFF header
// offset), the XMP packet xmpOf(md). 8-bit images take img's 8-bit
// samples; 10 and 12-bit ones its 16-bit samples rounded to the depth.
//
// The whole frame is held: a packed copy of the samples (3 or 6 bytes a
// pixel), libavif's YUV planes and the AV1 encoder's frames
// (AVIFWorkingBytes), and the encoded file, written to w at the end.
func AVIF(w io.Writer, img image.Image, o AVIFOptions, icc []byte, md Metadata) error {
	if img.Bounds().Empty() {
		return errors.New("encode: empty image")
	}
	yuv, err := avifYUV(o.Subsampling)
	if err != nil {
		return err
	}
	ao := avif.Options{
		Depth: o.Depth, YUV: yuv, Quality: o.Quality, Speed: o.Speed, Threads: encoderThreads(),
		Primaries: o.Primaries, Transfer: o.Transfer, Matrix: avif.MatrixBT601, FullRange: true,
		ICC: icc, EXIF: EXIF(md), XMP: xmpOf(md),
	}
	switch o.HDR.Transfer {
	case "":
	case HDRPQ, HDRHLG:
		if o.Depth == 8 {
			return fmt.Errorf("encode: AVIF %s needs 10 or 12 bits, not 8", o.HDR.Transfer)
		}
		ao.Primaries, ao.Transfer, ao.Matrix, ao.ICC = avif.PrimariesBT2020, avif.TransferPQ, avif.MatrixBT2020NCL, nil
		if o.HDR.Transfer == HDRHLG {
			ao.Transfer = avif.TransferHLG
		}
	default:
		return fmt.Errorf("encode: unknown HDR transfer %q (pq, hlg)", o.HDR.Transfer)
	}
	var p8 []byte
	var p16 []uint16
	var wd, ht int
	switch o.Depth {
	case 8:
		p8, wd, ht = packRGB8(img)
	case 10, 12:
		p16, wd, ht = packRGB16(img, o.Depth)
	default:
		return fmt.Errorf("encode: AVIF depth %d: want 8, 10 or 12", o.Depth)
	}
	out, err := avifEncode(wd, ht, p8, p16, ao)
	if err != nil {
		return err
	}
	if o.HDR.Transfer != "" && o.HDR.MaxCLL > 0 {
		if out, err = AVIFAddCLLI(out, o.HDR.MaxCLL, o.HDR.MaxFALL); err != nil {
			return err
		}
	}
	_, err = w.Write(out)
	return err
}

// avifEncode runs libavif on a locked thread of its own.
func avifEncode(w, h int, p8 []byte, p16 []uint16, o avif.Options) ([]byte, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	e, err := avif.New()
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	defer e.Close()
	out, err := e.Encode(w, h, p8, p16, 3*w, o)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return out, nil
}

func avifYUV(s string) (int, error) {
	switch s {
	case "444", "":
		return 444, nil
	case "422":
		return 422, nil
	case "420":
		return 420, nil
	}
	return 0, fmt.Errorf("encode: chroma subsampling %q: want 444, 422 or 420", s)
}

// AVIFWorkingBytes is the memory in bytes of encoding a width×height AVIF
// image with o (besides the quantised image it is given): the packed
// samples (3 bytes a pixel at 8 bits, 6 above), libavif's and the AV1
// encoder's (avif.WorkingBytes) and the encoded file (counted at 1 byte
// a pixel, far above what quality 100 gives).
func AVIFWorkingBytes(width, height int, o AVIFOptions) int64 {
	yuv, _ := avifYUV(o.Subsampling)
	px := int64(width) * int64(height)
	packed := 3 * px
	if o.Depth > 8 {
		packed = 6 * px
	}
	return packed + avif.WorkingBytes(width, height, o.Depth, yuv) + px
}
