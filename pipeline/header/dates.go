package header

import (
	"encoding/binary"
	"strings"
	"time"

	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// Dates are the EXIF date and time strings exactly as the file stores them
// (ASCII, NUL and surrounding spaces removed), "" when absent. They are
// copied into outputs as they are: the camera's wall-clock time is never
// converted to an instant and back, so no time zone of the converting
// machine (and no daylight-saving gap or overlap in it) can change them.
// Sources: Exif 2.32 (CIPA DC-008-2019) §4.6.5 Tables 4 and 7; the field
// names are the standard's (exiftool calls DateTime "ModifyDate" and
// DateTimeDigitized "CreateDate").
type Dates struct {
	// DateTime (IFD0, 306), DateTimeOriginal (36867), DateTimeDigitized
	// (36868): "YYYY:MM:DD HH:MM:SS" local time as the camera recorded it.
	DateTime, DateTimeOriginal, DateTimeDigitized string
	// SubSecTime (37520), SubSecTimeOriginal (37521), SubSecTimeDigitized
	// (37522): decimal digits of the fraction of a second ("00", "123").
	SubSecTime, SubSecTimeOriginal, SubSecTimeDigitized string
	// OffsetTime (36880), OffsetTimeOriginal (36881), OffsetTimeDigitized
	// (36882): the offset from UTC of the matching date, "+HH:MM"/"-HH:MM".
	OffsetTime, OffsetTimeOriginal, OffsetTimeDigitized string
}

// maxDateLen: longer ASCII values are not dates: ignored.
const maxDateLen = 64

// fields returns the address of each Dates field by its tag.
func (d *Dates) fields() map[uint16]*string {
	return map[uint16]*string{
		tifftag.DateTime: &d.DateTime, tifftag.DateTimeOriginal: &d.DateTimeOriginal, tifftag.DateTimeDigitized: &d.DateTimeDigitized,
		tifftag.SubSecTime: &d.SubSecTime, tifftag.SubSecTimeOriginal: &d.SubSecTimeOriginal, tifftag.SubSecTimeDigitized: &d.SubSecTimeDigitized,
		tifftag.OffsetTime: &d.OffsetTime, tifftag.OffsetTimeOriginal: &d.OffsetTimeOriginal, tifftag.OffsetTimeDigitized: &d.OffsetTimeDigitized,
	}
}

// merge fills the empty fields of d from o.
func (d *Dates) merge(o Dates) {
	src := o.fields()
	for tag, p := range d.fields() {
		if *p == "" {
			*p = *src[tag]
		}
	}
}

// readDates reads the Dates strings from the first IFD of the TIFF
// structure b and from the Exif IFD it points at (a CR3 CMT2 block is an
// Exif IFD stored as IFD0 of its own TIFF, so its dates are in IFD0). b
// must have passed sanitizeTIFF: every entry is checked again against b
// here, values outside b or of another type than ASCII are ignored.
func readDates(b []byte) Dates {
	var d Dates
	if len(b) < 8 {
		return d
	}
	p := &gxPass{b: b}
	var ok bool
	if p.bo, ok = tiffByteOrder(b); !ok {
		return d
	}
	ifd0 := int64(p.bo.Uint32(b[4:]))
	ifds := []int64{ifd0}
	if sub, ok := p.pointer(b, ifd0, tifftag.ExifIFD); ok && sub != ifd0 {
		ifds = append(ifds, sub)
	}
	fields := d.fields()
	for _, off := range ifds {
		for tag, f := range fields {
			if *f != "" {
				continue
			}
			if e, ok := p.entry(b, off, tag); ok {
				*f = asciiValue(b, p.bo, e)
			}
		}
	}
	return d
}

// asciiValue returns the ASCII value of the 12-byte IFD entry e in b, cut
// at the first NUL and trimmed of spaces; "" when e is not a short ASCII
// value that lies in b or holds anything but printable ASCII.
func asciiValue(b []byte, bo binary.ByteOrder, e []byte) string {
	if bo.Uint16(e[2:]) != tifftag.TypeASCII {
		return ""
	}
	n := int64(bo.Uint32(e[4:]))
	if n == 0 || n > maxDateLen {
		return ""
	}
	var v []byte
	if n <= 4 {
		v = e[8 : 8+n]
	} else {
		off := int64(bo.Uint32(e[8:]))
		if off+n > int64(len(b)) {
			return ""
		}
		v = b[off : off+n]
	}
	if i := strings.IndexByte(string(v), 0); i >= 0 {
		v = v[:i]
	}
	for _, c := range v {
		if c < 0x20 || c > 0x7e {
			return ""
		}
	}
	return strings.TrimSpace(string(v))
}

// exifDateLayout is the form of the EXIF date strings.
const exifDateLayout = "2006:01:02 15:04:05"

// Capture returns the capture time the strings give: DateTimeOriginal,
// else DateTime, read as the camera's wall clock. Its location is a fixed,
// unnamed zone of the matching offset (OffsetTimeOriginal, OffsetTime)
// when the file has one, so that a time layout's -0700 or MST shows the
// photo's offset; else UTC (a wall clock of unknown zone: -0700 gives
// +0000, MST "UTC"). The converting machine's time zone never enters, so a
// time in its daylight-saving gap keeps its wall clock. Sub-seconds are
// left out. Zero when neither string is a date after 1900.
func (d Dates) Capture() time.Time {
	for _, c := range [][2]string{{d.DateTimeOriginal, d.OffsetTimeOriginal}, {d.DateTime, d.OffsetTime}} {
		loc := time.UTC
		if off, ok := parseOffset(c[1]); ok {
			loc = time.FixedZone("", off)
		}
		if t, err := time.ParseInLocation(exifDateLayout, c[0], loc); err == nil && t.Year() > 1900 {
			return t
		}
	}
	return time.Time{}
}

// parseOffset parses an EXIF OffsetTime* value, "+HH:MM" or "-HH:MM",
// into seconds east of UTC.
func parseOffset(s string) (int, bool) {
	if len(s) != 6 || (s[0] != '+' && s[0] != '-') || s[3] != ':' {
		return 0, false
	}
	digits := func(a, b byte) (int, bool) {
		if a < '0' || a > '9' || b < '0' || b > '9' {
			return 0, false
		}
		return int(a-'0')*10 + int(b-'0'), true
	}
	h, ok1 := digits(s[1], s[2])
	m, ok2 := digits(s[4], s[5])
	if !ok1 || !ok2 || h > 14 || m > 59 {
		return 0, false
	}
	off := (h*60 + m) * 60
	if s[0] == '-' {
		off = -off
	}
	return off, true
}

// wallClock returns the wall-clock fields of t, in t's own location, as
// the same wall clock in UTC.
func wallClock(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}
