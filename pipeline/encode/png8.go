package encode

import (
	"bytes"
	"compress/zlib"
	"image"
	"io"
)

// PNG8 encodes img as an 8-bit-per-channel RGB PNG (IHDR colour type 2,
// bit depth 8, no alpha, no interlace) with zlib level DefaultPNGLevel,
// with the same chunks as PNG16: iCCP (when icc is non-empty) and eXIf
// (EXIF(md)) right after IHDR, then IDAT…, IEND. The image data is written
// by image/png through the same IHDR splice as PNG16.
//
// Opaque *image.RGBA and *image.NRGBA are encoded without copying;
// *image.NRGBA64 and *image.RGBA64 are rounded to 8 bits
// (round(v·255/65535)); other types (including grey images, which are
// written as RGB) go through draw.Draw. Translucent pixels are composited
// over black.
func PNG8(w io.Writer, img image.Image, icc []byte, md Metadata) error {
	if err := pngBounds(img); err != nil {
		return err
	}
	return writePNG(w, img, rgb8Source, DefaultPNGLevel, icc, md)
}

// pngMetaChunks returns the iCCP (if icc is non-empty) and eXIf chunks that
// PNG16 and PNG8 insert after IHDR.
func pngMetaChunks(icc []byte, md Metadata) ([]byte, error) {
	var extra bytes.Buffer
	if len(icc) > 0 {
		var z bytes.Buffer
		z.WriteString(iccProfileName)
		z.Write([]byte{0, 0}) // name terminator, compression method 0
		zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
		zw.Write(icc)
		if err := zw.Close(); err != nil {
			return nil, err
		}
		if err := writeChunk(&extra, "iCCP", z.Bytes()); err != nil {
			return nil, err
		}
	}
	if err := writeChunk(&extra, "eXIf", EXIF(md)); err != nil {
		return nil, err
	}
	if xmp := xmpOf(md); len(xmp) > 0 {
		// iTXt (PNG 1.2 §4.2.3.3): keyword XML:com.adobe.xmp, NUL,
		// uncompressed (flag 0, method 0), empty language and translated
		// keyword, then the packet (XMP Specification Part 3 §1.1.5).
		data := append([]byte("XML:com.adobe.xmp\x00\x00\x00\x00\x00"), xmp...)
		if err := writeChunk(&extra, "iTXt", data); err != nil {
			return nil, err
		}
	}
	return extra.Bytes(), nil
}
