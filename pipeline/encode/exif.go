// Package encode writes the pipeline's output files: baseline JPEG (8-bit),
// PNG, TIFF and WebP, each tagged with an embedded ICC profile, an EXIF
// block built from Metadata (the raw's standard EXIF and GPS tags, written
// by go-exif) and an XMP packet.
//
// The package depends only on the standard library and pipeline/tifftag
// (the TIFF tag table): callers pass the ICC profile bytes of the colour
// space the pixels are already in (for example colour.SRGB.ICC), and pixels
// must already be upright (EXIF Orientation is always written as 1).
//
// References: Exif 2.32 (CIPA DC-008-2019) and TIFF 6.0 for the EXIF
// structure; ICC.1:2010 Annex B.4 for ICC profiles in JPEG APP2; the PNG
// specification (PNG 1.2 §4.2.2.4 iCCP, §3.2 chunk layout) and
// "Extensions to the PNG 1.2 Specification" 1.5.0 §3.7 for the eXIf chunk.
package encode

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// Metadata is the EXIF subset carried into outputs. Zero values (and
// negative, NaN or infinite numbers) are omitted from the written EXIF.
type Metadata struct {
	Make, Model, Lens, Software string
	// DateTime is the capture time for files whose dates are not EXIF
	// strings (LibRaw's timestamp, CRW): used only when Dates has none of
	// DateTime, DateTimeOriginal and DateTimeDigitized. It is then written
	// as DateTimeOriginal (Exif IFD) alone, in the form
	// "2006:01:02 15:04:05", using the wall-clock fields of the value in its
	// own location; a non-zero sub-second part is written as
	// SubSecTimeOriginal (milliseconds).
	DateTime time.Time
	// Dates are the raw's EXIF date strings, copied byte for byte (see
	// Dates).
	Dates        Dates
	ExposureTime float64 // seconds
	FNumber      float64 // f-number N (dimensionless)
	ISO          int     // ISO 12232 sensitivity / speed
	FocalLength  float64 // mm (actual, not 35 mm equivalent)

	// Tags are the raw's own standard EXIF and GPS tags (tifftag.Standard),
	// copied over the fields above (see EXIF); nil when the raw has no
	// readable EXIF, leaving the fields above alone.
	Tags []Tag
	// Artist and Copyright, when set, replace the raw's (IFD0 315, 33432).
	Artist, Copyright string
	// Strip keeps only what colour management needs: no EXIF but
	// Orientation = 1 and Software (by which rawbatch knows its own
	// outputs), and Artist and Copyright when set; no XMP. The callers' ICC
	// profile is written as always.
	Strip bool
	// XMP is the XMP packet's content (see XMPPacket); not written with
	// Strip or when it is empty.
	XMP XMP
}

// Dates are EXIF date and time strings as the source file stores them
// (Exif 2.32 §4.6.5): DateTime (IFD0 306), DateTimeOriginal (36867) and
// DateTimeDigitized (36868) as "YYYY:MM:DD HH:MM:SS", their SubSecTime*
// (37520–37522) fraction digits and OffsetTime* (36880–36882) "±HH:MM"
// offsets from UTC. Each non-empty field is written unchanged, so the
// converting machine's time zone never enters, and only those: a file
// with only DateTime (a modification time, exiftool's ModifyDate) does not
// get it as DateTimeOriginal, which photo managers sort by as the capture
// time. Same fields as header.Dates, so one converts to the other.
type Dates struct {
	DateTime, DateTimeOriginal, DateTimeDigitized       string
	SubSecTime, SubSecTimeOriginal, SubSecTimeDigitized string
	OffsetTime, OffsetTimeOriginal, OffsetTimeDigitized string
}

const exifTimeLayout = "2006:01:02 15:04:05"

type ifdEntry struct {
	tag, typ uint16
	count    uint32
	data     []byte // big-endian value bytes
}

var be = binary.BigEndian

func asciiEntry(tag uint16, s string) ifdEntry {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	b := append([]byte(s), 0)
	return ifdEntry{tag, tifftag.TypeASCII, uint32(len(b)), b}
}

func shortEntry(tag uint16, v uint16) ifdEntry {
	return ifdEntry{tag, tifftag.TypeShort, 1, be.AppendUint16(nil, v)}
}

func longEntry(tag uint16, v uint32) ifdEntry {
	return ifdEntry{tag, tifftag.TypeLong, 1, be.AppendUint32(nil, v)}
}

func rationalEntry(tag uint16, num, den uint32) ifdEntry {
	return ifdEntry{tag, tifftag.TypeRational, 1, be.AppendUint32(be.AppendUint32(nil, num), den)}
}

func valid(v float64) bool { return v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }

// rational returns num/den ≈ v (v > 0) from the continued-fraction
// convergents of v, stopping at a relative error below 1e-9 or before num or
// den would exceed maxTerm.
func rational(v float64, maxTerm uint64) (num, den uint32) {
	// Convergents h/k of the continued fraction of v.
	h0, h1 := uint64(0), uint64(1)
	k0, k1 := uint64(1), uint64(0)
	x := v
	for i := 0; i < 64; i++ {
		a := math.Floor(x)
		if a > float64(maxTerm) {
			break
		}
		ai := uint64(a)
		h2, k2 := ai*h1+h0, ai*k1+k0
		if h2 > maxTerm || k2 > maxTerm {
			break
		}
		h0, h1, k0, k1 = h1, h2, k1, k2
		if math.Abs(float64(h1)/float64(k1)-v) <= 1e-9*v {
			break
		}
		frac := x - a
		if frac < 1e-12 {
			break
		}
		x = 1 / frac
	}
	if k1 == 0 { // v larger than maxTerm
		return uint32(maxTerm), 1
	}
	return uint32(h1), uint32(k1)
}

// exposureRational writes sub-second times as 1/N when that is exact to
// 1e-6 relative (as cameras do: 1/250), otherwise the best rational.
func exposureRational(t float64) (num, den uint32) {
	if t < 1 {
		n := math.Round(1 / t)
		if n >= 1 && n <= math.MaxUint32 && math.Abs(1/n-t) <= 1e-6*t {
			return 1, uint32(n)
		}
	}
	return rational(t, math.MaxUint32)
}

// EXIF returns a big-endian ("MM") TIFF-structured Exif block, written
// by go-exif (github.com/dsoprea/go-exif/v3): the bytes that follow
// "Exif\0\0" in a JPEG APP1 segment, and the content of a PNG eXIf or
// WebP EXIF chunk. It holds IFD0, the Exif IFD and, when the raw has GPS
// tags, the GPS IFD (Exif 2.32 §4.5–4.6), in this order of precedence:
//
//   - the basic list, built from the fields of md: IFD0 Make, Model,
//     Software, DateTime; Exif IFD ExposureTime (RATIONAL, s), FNumber
//     (RATIONAL), PhotographicSensitivity/ISOSpeedRatings (SHORT; for ISO
//     > 65535 it is 65535 and SensitivityType = 3 plus ISOSpeed (LONG)
//     carry the value, Exif 2.32 §4.6.5), ExifVersion "0232",
//     DateTimeOriginal, DateTimeDigitized, OffsetTime*, FocalLength
//     (RATIONAL, mm), SubSecTime*, LensModel; entries whose field is zero
//     are omitted;
//   - every tag of md.Tags (the raw's standard tags), in place of the basic
//     entry of the same number or added, except Orientation and Software;
//   - Orientation = 1 (the pixels are upright) and Software = md.Software;
//   - md.Artist and md.Copyright when set.
//
// With md.Strip only IFD0 Orientation = 1 and Software are written (and
// Artist and Copyright when set). Strings are cut at the first NUL. Should go-exif
// fail, the tags of the raw are left out (and, failing again, the basic
// list is written by this package's own IFD writer).
func EXIF(md Metadata) []byte {
	d := mergedEntries(md)
	if b, err := encodeEXIF(d); err == nil && len(exifSig)+len(b) <= maxSegmentPayload {
		return b
	}
	md.Tags = nil
	d = mergedEntries(md)
	if b, err := encodeEXIF(d); err == nil {
		return b
	}
	out := []byte{'M', 'M', 0, 42, 0, 0, 0, 8}
	ifd0 := d.ifd0
	if len(d.exif) > 0 {
		ifd0 = append(ifd0, longEntry(tifftag.ExifIFD, 0))
	}
	out, exifPtrAt := appendIFD(out, ifd0, tifftag.ExifIFD)
	if len(d.exif) > 0 {
		be.PutUint32(out[exifPtrAt:], uint32(len(out)))
		out, _ = appendIFD(out, d.exif, 0)
	}
	return out
}

// basicEntries returns the entries of the basic list (see EXIF) of IFD0
// (with Orientation = 1) and of the Exif IFD, unsorted.
func basicEntries(md Metadata) (ifd0, exif []ifdEntry) {
	if md.Make != "" {
		ifd0 = append(ifd0, asciiEntry(tifftag.Make, md.Make))
	}
	if md.Model != "" {
		ifd0 = append(ifd0, asciiEntry(tifftag.Model, md.Model))
	}
	ifd0 = append(ifd0, shortEntry(tifftag.Orientation, 1))
	if md.Software != "" {
		ifd0 = append(ifd0, asciiEntry(tifftag.Software, md.Software))
	}
	d := dates(md)
	if d.DateTime != "" {
		ifd0 = append(ifd0, asciiEntry(tifftag.DateTime, d.DateTime))
	}
	for _, f := range []struct {
		tag uint16
		s   string
	}{
		{tifftag.DateTimeOriginal, d.DateTimeOriginal}, {tifftag.DateTimeDigitized, d.DateTimeDigitized},
		{tifftag.SubSecTime, d.SubSecTime}, {tifftag.SubSecTimeOriginal, d.SubSecTimeOriginal}, {tifftag.SubSecTimeDigitized, d.SubSecTimeDigitized},
		{tifftag.OffsetTime, d.OffsetTime}, {tifftag.OffsetTimeOriginal, d.OffsetTimeOriginal}, {tifftag.OffsetTimeDigitized, d.OffsetTimeDigitized},
	} {
		if f.s != "" {
			exif = append(exif, asciiEntry(f.tag, f.s))
		}
	}
	if valid(md.ExposureTime) {
		n, d := exposureRational(md.ExposureTime)
		exif = append(exif, rationalEntry(tifftag.ExposureTime, n, d))
	}
	if valid(md.FNumber) {
		n, d := rational(md.FNumber, 1<<20)
		exif = append(exif, rationalEntry(tifftag.FNumber, n, d))
	}
	if md.ISO > 0 {
		if md.ISO <= math.MaxUint16 {
			exif = append(exif, shortEntry(tifftag.PhotographicSensitivity, uint16(md.ISO)))
		} else {
			iso := uint32(min(md.ISO, math.MaxUint32))
			exif = append(exif,
				shortEntry(tifftag.PhotographicSensitivity, math.MaxUint16),
				shortEntry(tifftag.SensitivityType, 3), // 3 = ISO speed
				longEntry(tifftag.ISOSpeed, iso))
		}
	}
	if valid(md.FocalLength) {
		n, d := rational(md.FocalLength, 1<<20)
		exif = append(exif, rationalEntry(tifftag.FocalLength, n, d))
	}
	if md.Lens != "" {
		exif = append(exif, asciiEntry(tifftag.LensModel, md.Lens))
	}
	exif = append(exif, ifdEntry{tifftag.ExifVersion, tifftag.TypeUndefined, 4, []byte("0232")})
	return ifd0, exif
}

// dates returns the date strings EXIF writes: md.Dates as they are, or,
// when it has no date, md.DateTime as DateTimeOriginal (see Metadata).
func dates(md Metadata) Dates {
	d := md.Dates
	if d.DateTimeOriginal == "" && d.DateTime == "" && d.DateTimeDigitized == "" && !md.DateTime.IsZero() {
		d.DateTimeOriginal = md.DateTime.Format(exifTimeLayout)
		if ms := md.DateTime.Nanosecond() / 1e6; ms > 0 {
			d.SubSecTimeOriginal = fmt.Sprintf("%03d", ms)
		}
	}
	return d
}

// appendIFD appends an IFD (at the current, even, offset) followed by its
// out-of-line values, each word-aligned as TIFF 6.0 §2 requires. It returns
// the offset of the value field of entry patchTag (0 if absent).
func appendIFD(out []byte, entries []ifdEntry, patchTag uint16) ([]byte, int) {
	return appendIFDAt(out, 0, entries, patchTag)
}

// appendIFDAt is appendIFD for a block whose byte 0 lies at file offset
// base: value offsets are written relative to the file.
func appendIFDAt(out []byte, base int, entries []ifdEntry, patchTag uint16) ([]byte, int) {
	dataOff := base + len(out) + 2 + 12*len(entries) + 4
	out = be.AppendUint16(out, uint16(len(entries)))
	var extra []byte
	patchAt := 0
	for _, e := range entries {
		out = be.AppendUint16(out, e.tag)
		out = be.AppendUint16(out, e.typ)
		out = be.AppendUint32(out, e.count)
		if e.tag == patchTag {
			patchAt = len(out)
		}
		if len(e.data) <= 4 {
			var v [4]byte
			copy(v[:], e.data)
			out = append(out, v[:]...)
			continue
		}
		out = be.AppendUint32(out, uint32(dataOff+len(extra)))
		extra = append(extra, e.data...)
		if len(extra)%2 == 1 {
			extra = append(extra, 0)
		}
	}
	out = be.AppendUint32(out, 0) // no next IFD
	return append(out, extra...), patchAt
}
