package encode

import (
	"bufio"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"image/jpeg"
	"io"
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

// JPEG encodes img as a baseline 4:2:0 JPEG with the standard library
// encoder at quality 1..100 (the libjpeg/IJG quality scale of image/jpeg),
// inserting right after SOI an APP1 "Exif\0\0" segment holding EXIF(md) and,
// when icc is non-empty, the profile in APP2 "ICC_PROFILE\0" segments
// (ICC.1:2010 Annex B.4: chunks of at most 65519 bytes, each preceded by its
// 1-based sequence number and the chunk count, at most 255 chunks).
//
// img must be upright and already in the colour space described by icc; it
// is encoded as 8 bits per channel. *image.RGBA, *image.YCbCr, *image.Gray
// and opaque *image.NRGBA are encoded without conversion or copying;
// *image.NRGBA64 and *image.RGBA64 are rounded to 8 bits
// (round(v·255/65535)) in a tight loop; other types go through draw.Draw.
// JPEG has no alpha: translucent pixels are composited over black. Output
// is buffered; w is written with large writes.
func JPEG(w io.Writer, img image.Image, quality int, icc []byte, md Metadata) error {
	if quality < 1 || quality > 100 {
		return fmt.Errorf("encode: JPEG quality %d outside 1..100", quality)
	}
	b := img.Bounds()
	if b.Empty() {
		return errors.New("encode: empty image")
	}
	segs, err := jpegHeaderSegments(icc, md)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	sw := &spliceWriter{w: bw, head: 2, insert: segs, check: func(h []byte) error {
		if h[0] != 0xFF || h[1] != 0xD8 {
			return errors.New("encode: JPEG encoder output does not start with SOI")
		}
		return nil
	}}
	if err := jpeg.Encode(sw, jpegSource(img), &jpeg.Options{Quality: quality}); err != nil {
		return err
	}
	if !sw.done {
		return errors.New("encode: JPEG encoder wrote no SOI")
	}
	return bw.Flush()
}

// jpegHeaderSegments returns the APP1 Exif and APP2 ICC marker segments.
func jpegHeaderSegments(icc []byte, md Metadata) ([]byte, error) {
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
	if xmp := xmpOf(md); len(xmp) > 0 {
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

// jpegSource returns img or an equivalent image of a type for which
// image/jpeg has a fast path (*image.RGBA, *image.YCbCr, *image.Gray).
func jpegSource(img image.Image) image.Image {
	switch m := img.(type) {
	case *image.RGBA, *image.YCbCr, *image.Gray:
		return m
	case *image.NRGBA:
		if m.Opaque() { // identical bytes when alpha = 255: alias, no copy
			return &image.RGBA{Pix: m.Pix, Stride: m.Stride, Rect: m.Rect}
		}
	case *image.NRGBA64:
		return rgba64ToRGBA(m.Pix, m.Stride, m.Rect, true)
	case *image.RGBA64:
		return rgba64ToRGBA(m.Pix, m.Stride, m.Rect, false)
	}
	b := img.Bounds()
	dst := image.NewRGBA(b)
	draw.Draw(dst, b, img, b.Min, draw.Src)
	return dst
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

// spliceWriter passes the first head bytes written through to w, checks
// them, writes insert, and then passes everything else through.
type spliceWriter struct {
	w      io.Writer
	head   int
	seen   []byte
	insert []byte
	check  func(head []byte) error
	done   bool
}

func (s *spliceWriter) Write(p []byte) (int, error) {
	n := 0
	if !s.done {
		k := min(len(p), s.head-len(s.seen))
		s.seen = append(s.seen, p[:k]...)
		if _, err := s.w.Write(p[:k]); err != nil {
			return 0, err
		}
		n, p = k, p[k:]
		if len(s.seen) < s.head {
			return n, nil
		}
		if err := s.check(s.seen); err != nil {
			return n, err
		}
		if _, err := s.w.Write(s.insert); err != nil {
			return n, err
		}
		s.done = true
	}
	if len(p) == 0 {
		return n, nil
	}
	m, err := s.w.Write(p)
	return n + m, err
}
