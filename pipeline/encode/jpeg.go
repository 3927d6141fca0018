package encode

import (
	"errors"
	"fmt"
	"image"
	"io"
	"runtime"

	"github.com/rawbatch/rawbatch/pipeline/internal/jpegturbo"
)

// JPEG marker and ICC embedding constants.
const (
	markerAPP1 = 0xE1
	markerAPP2 = 0xE2
	// maxSegmentPayload is the largest marker segment payload: the 16-bit
	// length field counts itself (ITU-T T.81 §B.1.1.4).
	maxSegmentPayload = 65535 - 2
	// iccChunkMax is the largest ICC chunk per APP2 segment, ICC.1:2010
	// Annex B.4: 65533 − len("ICC_PROFILE\0") − 2 = 65519 bytes.
	iccChunkMax = maxSegmentPayload - len(iccSig) - 2
	iccSig      = "ICC_PROFILE\x00"
	exifSig     = "Exif\x00\x00"
)

// JPEG encodes img at quality 1..100 with the default subsampling for
// that quality (JPEGSubsamplingFor): JPEGRows over ImageRows8(img), for
// callers that hold a whole image. img must be upright and already in the
// colour space described by icc; see ImageRows8 for the pixel types.
func JPEG(w io.Writer, img image.Image, quality int, icc []byte, md Metadata) error {
	if img.Bounds().Empty() {
		return errors.New("encode: empty image")
	}
	return JPEGRows(w, ImageRows8(img), JPEGOptions{Quality: quality}, icc, md)
}

// JPEGRows encodes src as a baseline JPEG with libjpeg-turbo
// (pipeline/internal/jpegturbo) at o.Quality (1..100, the IJG scale) and
// o.Subsampling ("" for JPEGSubsamplingFor(o.Quality)), with optimised
// Huffman tables, not progressive. Right after SOI it writes an APP1
// "Exif\0\0" segment holding EXIF(md), the APP1 XMP packet when md has
// one and, when icc is non-empty, the profile in APP2 "ICC_PROFILE\0"
// segments (ICC.1:2010 Annex B.4: chunks of at most 65519 bytes, each
// preceded by its 1-based sequence number and the chunk count, at most
// 255 chunks); no JFIF APP0.
//
// The rows are asked for in order, MaxJPEGRows at a time into one reused
// buffer (3·W·16 bytes), and compressed as they come; the output goes to
// w in 64 KiB writes, the last ones at the end (optimised tables need the
// whole image's coefficients: JPEGWorkingBytes). The goroutine holds its
// OS thread for the call (libjpeg's object lives on one thread). Errors:
// a bad quality, subsampling or size, an oversized EXIF/XMP/ICC block,
// libjpeg's own, and w's, wrapped (errors.Is finds them).
//
// With src.Bands set the encoder runs on a goroutine of its own (locked
// to its thread, its libjpeg object created, used and closed there), fed
// the bands src.Bands.Fill makes on the caller's goroutine through a
// queue of QueueBands; the file is the same byte for byte.
func JPEGRows(w io.Writer, src RowsRGB8, o JPEGOptions, icc []byte, md Metadata) error {
	if src.Bands.Fill != nil && src.W > 0 && src.H > 0 {
		return overlapped(src.H, 3*src.W, src.Bands, func(row func(y int, dst []byte)) error {
			return jpegRows(w, RowsRGB8{W: src.W, H: src.H, Row: row}, o, icc, md)
		})
	}
	return jpegRows(w, src, o, icc, md)
}

// jpegRows is JPEGRows through src.Row on the caller's goroutine.
func jpegRows(w io.Writer, src RowsRGB8, o JPEGOptions, icc []byte, md Metadata) error {
	if src.W <= 0 || src.H <= 0 || src.Row == nil {
		return errors.New("encode: empty image")
	}
	if o.Quality < 1 || o.Quality > 100 {
		return fmt.Errorf("encode: JPEG quality %d outside 1..100", o.Quality)
	}
	segs, err := jpegHeaderSegments(icc, md, xmpOf(md))
	if err != nil {
		return err
	}
	return jpegMarkers(w, src, o, splitSegments(segs), false)
}

// jpegMarkers compresses src (3 bytes a pixel, or 1 with gray: src.Row
// then fills W grey bytes) with markers right after SOI, on the caller's
// goroutine, its OS thread held for the call.
func jpegMarkers(w io.Writer, src RowsRGB8, o JPEGOptions, markers []jpegturbo.Marker, gray bool) error {
	if o.Quality < 1 || o.Quality > 100 {
		return fmt.Errorf("encode: JPEG quality %d outside 1..100", o.Quality)
	}
	hs, vs, err := jpegSampling(o.Subsampling, o.Quality)
	if err != nil {
		return err
	}
	comp := 3
	if gray {
		hs, vs, comp = 1, 1, 1
	}

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := jpegturbo.New()
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	defer c.Close()
	if err := c.Start(w, src.W, src.H, jpegturbo.Options{Quality: o.Quality, HSamp: hs, VSamp: vs, Gray: gray}, markers); err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	stride := comp * src.W
	buf := make([]byte, jpegturbo.MaxRows*stride)
	for y := 0; y < src.H; y += jpegturbo.MaxRows {
		n := min(jpegturbo.MaxRows, src.H-y)
		for i := range n {
			src.Row(y+i, buf[i*stride:(i+1)*stride])
		}
		if err := c.WriteRows(buf, n, stride); err != nil {
			return fmt.Errorf("encode: %w", err)
		}
	}
	if err := c.Finish(); err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	return nil
}

// splitSegments cuts the marker segments that jpegHeaderSegments built
// (FF xx, big-endian length, payload) into libjpeg markers.
func splitSegments(b []byte) []jpegturbo.Marker {
	var out []jpegturbo.Marker
	for len(b) >= 4 {
		n := int(b[2])<<8 | int(b[3])
		out = append(out, jpegturbo.Marker{Code: b[1], Data: b[4 : 2+n]})
		b = b[2+n:]
	}
	return out
}

// jpegHeaderSegments returns the APP1 Exif, APP1 XMP (xmp, when not
// empty) and APP2 ICC marker segments.
func jpegHeaderSegments(icc []byte, md Metadata, xmp []byte) ([]byte, error) {
	exif := EXIF(md)
	if len(exifSig)+len(exif) > maxSegmentPayload {
		return nil, fmt.Errorf("encode: EXIF block of %d bytes does not fit an APP1 segment", len(exif))
	}
	nChunks := (len(icc) + iccChunkMax - 1) / iccChunkMax
	if nChunks > 255 {
		return nil, fmt.Errorf("encode: ICC profile of %d bytes needs more than 255 APP2 segments", len(icc))
	}
	out := make([]byte, 0, 4+len(exifSig)+len(exif)+nChunks*(4+len(iccSig)+2)+len(icc))
	out = appendSegment(out, markerAPP1, []byte(exifSig), exif)
	if len(xmp) > 0 {
		if len(xmpJPEGSig)+len(xmp) > maxSegmentPayload {
			return nil, fmt.Errorf("encode: XMP packet of %d bytes does not fit an APP1 segment", len(xmp))
		}
		out = appendSegment(out, markerAPP1, []byte(xmpJPEGSig), xmp)
	}
	for i := 0; i < nChunks; i++ {
		chunk := icc[i*iccChunkMax : min(len(icc), (i+1)*iccChunkMax)]
		hdr := append([]byte(iccSig), byte(i+1), byte(nChunks))
		out = appendSegment(out, markerAPP2, hdr, chunk)
	}
	return out, nil
}

// appendSegment appends marker FF xx, the big-endian length (2 + payload)
// and the payload parts.
func appendSegment(out []byte, marker byte, parts ...[]byte) []byte {
	n := 2
	for _, p := range parts {
		n += len(p)
	}
	out = append(out, 0xFF, marker, byte(n>>8), byte(n))
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// rgba64ToRGBA converts 16-bit RGBA pixel data (big-endian, 8 bytes per
// pixel, premultiplied unless nonPremul) to *image.RGBA with
// round(v·255/65535) per channel.
func rgba64ToRGBA(pix []byte, stride int, r image.Rectangle, nonPremul bool) *image.RGBA {
	dst := image.NewRGBA(r)
	w, h := r.Dx(), r.Dy()
	for y := 0; y < h; y++ {
		src := pix[y*stride : y*stride+8*w]
		d := dst.Pix[y*dst.Stride : y*dst.Stride+4*w]
		for x := 0; x < w; x++ {
			s := src[8*x : 8*x+8 : 8*x+8]
			rr := uint32(s[0])<<8 | uint32(s[1])
			gg := uint32(s[2])<<8 | uint32(s[3])
			bb := uint32(s[4])<<8 | uint32(s[5])
			aa := uint32(s[6])<<8 | uint32(s[7])
			if nonPremul && aa != 0xFFFF {
				rr, gg, bb = rr*aa/0xFFFF, gg*aa/0xFFFF, bb*aa/0xFFFF
			}
			dd := d[4*x : 4*x+4 : 4*x+4]
			dd[0] = uint8((rr*255 + 32767) / 65535)
			dd[1] = uint8((gg*255 + 32767) / 65535)
			dd[2] = uint8((bb*255 + 32767) / 65535)
			dd[3] = uint8((aa*255 + 32767) / 65535)
		}
	}
	return dst
}
