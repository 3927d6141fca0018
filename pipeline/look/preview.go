package look

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/rawbatch/rawbatch/pipeline/colour"
)

// Usability limits of an embedded preview.
const (
	// MinPreviewLong, MinPreviewShort: the smallest usable preview, in
	// pixels along its long and short side (160×120, a 4:3 thumbnail).
	MinPreviewLong, MinPreviewShort = 160, 120
	// MinPreviewFraction: the preview must be at least 1/33 of the raw's
	// width (a 6000 px raw needs ≥ 182 px).
	MinPreviewFraction = 1.0 / 33
	// MaxAspectMismatch is the largest relative difference of aspect
	// ratios that a centre crop repairs (3 %: a 3:2 raw and a 16:10 or
	// letterboxed preview are not the same picture).
	MaxAspectMismatch = 0.03
)

// ErrPreviewUnusable is wrapped by DecodePreview's errors when the preview
// exists but must not be used as a reference (too small, other aspect,
// undecodable).
var ErrPreviewUnusable = errors.New("embedded preview unusable")

// Preview is a decoded embedded preview: Image is display-linear RGB
// (W×H×3, the space's transfer function undone) in Space, centre-cropped to
// the raw's aspect ratio when it differed by at most MaxAspectMismatch.
type Preview struct {
	Image Image
	Space *colour.Space
	// SpaceSource says how Space was chosen: "EXIF InteroperabilityIndex
	// R03", "EXIF InteroperabilityIndex R98", "EXIF ColorSpace sRGB" or
	// "assumed sRGB" (no EXIF colour space: camera previews are sRGB unless
	// they say otherwise).
	SpaceSource string
	// SourceW, SourceH are the preview's decoded size before the crop.
	SourceW, SourceH int
	// Cells is the cropped preview reduced straight from its decoded
	// pixels to the grid asked of DecodePreviewGrid (empty otherwise),
	// display-linear in Space.
	Cells Image
}

// DecodePreview decodes an embedded preview and checks it against the raw
// image it should show, of rawW×rawH visible pixels in the same
// orientation as the preview (previews are stored in sensor orientation
// like the raw data, so pass the raw's size before rotation). data is a
// JPEG file when bitmapW is 0, else an 8-bit sRGB bitmap of
// bitmapW×bitmapH pixels with colors (1 or 3) bytes each (LibRaw's
// LIBRAW_IMAGE_BITMAP). The colour space of a JPEG comes from its EXIF
// APP1 (ReadPreviewSpace); bitmaps are sRGB. Errors wrap
// ErrPreviewUnusable: undecodable data, smaller than MinPreviewLong ×
// MinPreviewShort or than MinPreviewFraction of rawW, or an aspect ratio
// differing by more than MaxAspectMismatch.
func DecodePreview(data []byte, bitmapW, bitmapH, colors, rawW, rawH int) (*Preview, error) {
	return DecodePreviewReduced(data, bitmapW, bitmapH, colors, rawW, rawH, 0)
}

// Grid reduces the preview to gw×gh cells (Reduce), display-linear in
// p.Space.
func (p *Preview) Grid(gw, gh int) (Image, error) {
	g, _, err := Reduce(p.Image, gw, gh, 0)
	return g, err
}

// EXIF tags read by ReadPreviewSpace (CIPA DC-008 / Exif 2.32 and DCF:
// ExifIFD pointer 0x8769, ColorSpace 0xA001 (1 = sRGB, 0xFFFF =
// uncalibrated), Interoperability IFD pointer 0xA005, InteroperabilityIndex
// 0x0001 ("R98" = DCF basic file, sRGB; "R03" = DCF option file, Adobe
// RGB)).
const (
	tagExifIFD    = 0x8769
	tagColorSpace = 0xA001
	tagInteropIFD = 0xA005
	tagInteropIdx = 0x0001
)

// ReadPreviewSpace returns the colour space a JPEG says it is in, from the
// EXIF of its first APP1 segment: InteroperabilityIndex "R03" → Adobe RGB,
// "R98" → sRGB, else ColorSpace 1 → sRGB, else sRGB assumed. The second
// result names the source (see Preview.SpaceSource). Damaged or missing
// EXIF gives the assumption, never an error.
func ReadPreviewSpace(jpg []byte) (*colour.Space, string) {
	tiff := exifTIFF(jpg)
	if tiff == nil {
		return colour.SRGB, "assumed sRGB"
	}
	var bo binary.ByteOrder
	switch string(tiff[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return colour.SRGB, "assumed sRGB"
	}
	ifd0 := bo.Uint32(tiff[4:8])
	exif, ok := ifdValue(tiff, bo, ifd0, tagExifIFD)
	if !ok {
		return colour.SRGB, "assumed sRGB"
	}
	if inter, ok := ifdValue(tiff, bo, exif, tagInteropIFD); ok {
		if idx, ok := ifdASCII(tiff, bo, inter, tagInteropIdx); ok {
			switch idx {
			case "R03":
				return colour.AdobeRGB, "EXIF InteroperabilityIndex R03"
			case "R98":
				return colour.SRGB, "EXIF InteroperabilityIndex R98"
			}
		}
	}
	if cs, ok := ifdValue(tiff, bo, exif, tagColorSpace); ok && cs == 1 {
		return colour.SRGB, "EXIF ColorSpace sRGB"
	}
	return colour.SRGB, "assumed sRGB"
}

// exifTIFF returns the TIFF structure inside the first APP1 "Exif\0\0"
// segment of a JPEG, or nil.
func exifTIFF(j []byte) []byte {
	if len(j) < 4 || j[0] != 0xFF || j[1] != 0xD8 {
		return nil
	}
	for i := 2; i+4 <= len(j); {
		if j[i] != 0xFF {
			return nil
		}
		m := j[i+1]
		if m == 0xD8 || (m >= 0xD0 && m <= 0xD7) || m == 0x01 {
			i += 2
			continue
		}
		if m == 0xDA || m == 0xD9 {
			return nil
		}
		n := int(binary.BigEndian.Uint16(j[i+2 : i+4]))
		if n < 2 || i+2+n > len(j) {
			return nil
		}
		seg := j[i+4 : i+2+n]
		if m == 0xE1 && len(seg) >= 14 && string(seg[:6]) == "Exif\x00\x00" {
			return seg[6:]
		}
		i += 2 + n
	}
	return nil
}

// ifdEntry finds tag in the IFD at off and returns its type, count and
// the offset of its 4-byte value field.
func ifdEntry(t []byte, bo binary.ByteOrder, off uint32, tag uint16) (typ uint16, count uint32, valOff int, ok bool) {
	if int64(off)+2 > int64(len(t)) {
		return 0, 0, 0, false
	}
	n := int(bo.Uint16(t[off:]))
	for e := 0; e < n; e++ {
		p := int(off) + 2 + 12*e
		if p+12 > len(t) {
			return 0, 0, 0, false
		}
		if bo.Uint16(t[p:]) == tag {
			return bo.Uint16(t[p+2:]), bo.Uint32(t[p+4:]), p + 8, true
		}
	}
	return 0, 0, 0, false
}

// ifdValue returns a SHORT or LONG scalar tag.
func ifdValue(t []byte, bo binary.ByteOrder, off uint32, tag uint16) (uint32, bool) {
	typ, _, p, ok := ifdEntry(t, bo, off, tag)
	switch {
	case !ok:
		return 0, false
	case typ == 3:
		return uint32(bo.Uint16(t[p:])), true
	case typ == 4 || typ == 13:
		return bo.Uint32(t[p:]), true
	}
	return 0, false
}

// ifdASCII returns an ASCII tag's text up to its first NUL.
func ifdASCII(t []byte, bo binary.ByteOrder, off uint32, tag uint16) (string, bool) {
	typ, n, p, ok := ifdEntry(t, bo, off, tag)
	if !ok || (typ != 2 && typ != 7) {
		return "", false
	}
	var b []byte
	if n <= 4 {
		b = t[p : p+int(n)]
	} else {
		o := bo.Uint32(t[p:])
		if int64(o)+int64(n) > int64(len(t)) {
			return "", false
		}
		b = t[o : o+n]
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b), true
}
