package header

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/rwcarlsen/goexif/exif"
	"github.com/rwcarlsen/goexif/mknote"

	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// EXIF is the capture metadata found in the file. Zero values mean "not
// found".
type EXIF struct {
	// Make, Model: TIFF/EXIF Make (271) and Model (272) as written by the
	// camera (not LibRaw's normalised names); "" when the file lacks one.
	// A DNG with neither has its UniqueCameraModel (50708) as Model; a file
	// that names no camera (a headerless raw) LibRaw's names.
	Make, Model string
	// Lens: EXIF LensModel (42036); else the Canon maker-note LensModel
	// (0x95), a Nikon maker-note Lens range, or LibRaw's lens name.
	Lens string
	// DateTime: the capture time as the camera's wall clock, whatever the
	// converting machine's time zone: EXIF DateTimeOriginal (36867), else
	// DateTime (306), in the zone of its OffsetTime* or in UTC
	// (Dates.Capture); else LibRaw's timestamp, as its wall clock in UTC.
	DateTime time.Time
	// ExposureTime in seconds (33434), FNumber as an f-number (33437),
	// FocalLength in millimetres (37386).
	ExposureTime, FNumber, FocalLength float64
	// ISO: EXIF ISOSpeedRatings / PhotographicSensitivity (34855).
	ISO int
	// Dates: the date, sub-second and time-offset strings as written
	// (see Dates); outputs copy these rather than DateTime.
	Dates Dates
}

// Limits on what goexif may be given. goexif (rwcarlsen/goexif, 2019) has
// no bounds of its own: it follows IFD chains until it sees the same offset
// twice in a row (so A→B→A loops forever), multiplies counts by type sizes
// in uint32 (so a wrapped product allocates Count values), and its maker-
// note parsers index into short values (a 2-byte Nikon MakerNote panics).
// Panics are recovered; loops and allocations are prevented by giving it
// only a sanitised copy of at most maxExifBlob bytes (see sanitizeTIFF).
const (
	maxExifBlob     = 256 << 10
	maxExifEntries  = 8192     // IFD entries goexif may decode per blob
	maxExifWeight   = 16 << 20 // bytes goexif may allocate for tag values per blob (estimate)
	maxMakerNoteLen = 128 << 10
)

// exifResult is what decodeExif got from goexif.
type exifResult struct {
	EXIF
	orientation int
	warnings    []string
}

// decodeExif runs goexif on blob (a TIFF structure: the first bytes of a
// TIFF-based file, or a CR3 CMT box) after sanitizing a copy, and then the
// Canon or Nikon maker-note parser. Panics inside goexif are recovered and
// reported as warnings; the fields decoded before the panic are kept.
func decodeExif(blob []byte, what string, canon bool) (res exifResult) {
	b := append([]byte(nil), blob...)
	if !sanitizeTIFF(b, canon) {
		res.warnings = append(res.warnings, what+": EXIF not decoded: TIFF structure unsafe for goexif (cycle, bad offsets or oversized counts)")
		return res
	}
	var x *exif.Exif
	func() {
		defer func() {
			if r := recover(); r != nil {
				res.warnings = append(res.warnings, fmt.Sprintf("%s: goexif panicked: %v", what, r))
				x = nil
			}
		}()
		var err error
		x, err = exif.Decode(bytes.NewReader(b))
		if err != nil && x == nil {
			res.warnings = append(res.warnings, fmt.Sprintf("%s: goexif: %v", what, err))
		}
	}()
	if x == nil {
		return res
	}
	res.fill(x)
	res.Dates = readDates(b)
	res.DateTime = res.Dates.Capture()
	// Maker notes, only for a lens name EXIF lacks: called one by one (not
	// registered globally) so that a panic in one keeps what was found.
	if res.Lens != "" {
		return res
	}
	if strings.HasPrefix(res.Make, "Canon") {
		res.makerNote(x, mknote.Canon, what+": Canon maker note")
		if res.Lens == "" {
			res.Lens = tagString(x, mknote.LensModel)
		}
	}
	if strings.HasPrefix(strings.ToUpper(res.Make), "NIKON") {
		res.makerNote(x, mknote.NikonV3, what+": Nikon maker note")
		if res.Lens == "" {
			res.Lens = nikonLens(x)
		}
	}
	return res
}

func (res *exifResult) makerNote(x *exif.Exif, p exif.Parser, what string) {
	defer func() {
		if r := recover(); r != nil {
			res.warnings = append(res.warnings, fmt.Sprintf("%s: goexif panicked: %v", what, r))
		}
	}()
	if err := p.Parse(x); err != nil {
		res.warnings = append(res.warnings, fmt.Sprintf("%s: %v", what, err))
	}
}

// fill copies the fields of x; each getter recovers on its own.
func (res *exifResult) fill(x *exif.Exif) {
	res.Make = tagString(x, exif.Make)
	res.Model = tagString(x, exif.Model)
	res.Lens = tagString(x, exif.LensModel)
	res.ExposureTime = tagRat(x, exif.ExposureTime)
	res.FNumber = tagRat(x, exif.FNumber)
	res.FocalLength = tagRat(x, exif.FocalLength)
	res.ISO = tagInt(x, exif.ISOSpeedRatings)
	if o := tagInt(x, exif.Orientation); o >= 1 && o <= 8 {
		res.orientation = o
	}
	// DateTime is not goexif's x.DateTime(): that parses in the machine's
	// time zone (decodeExif sets it from the date strings).
}

func tagString(x *exif.Exif, n exif.FieldName) (s string) {
	defer func() {
		if recover() != nil {
			s = ""
		}
	}()
	t, err := x.Get(n)
	if err != nil {
		return ""
	}
	s, err = t.StringVal()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.ToValidUTF8(s, ""))
}

func tagInt(x *exif.Exif, n exif.FieldName) (v int) {
	defer func() {
		if recover() != nil {
			v = 0
		}
	}()
	t, err := x.Get(n)
	if err != nil {
		return 0
	}
	v, err = t.Int(0)
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// tagRat reads a rational with Rat2 (Tag.Rat panics on a zero
// denominator).
func tagRat(x *exif.Exif, n exif.FieldName) (v float64) {
	defer func() {
		if recover() != nil {
			v = 0
		}
	}()
	t, err := x.Get(n)
	if err != nil {
		return 0
	}
	num, den, err := t.Rat2(0)
	if err != nil || den == 0 || num < 0 || den < 0 {
		return 0
	}
	return float64(num) / float64(den)
}

// nikonLens formats the Nikon maker-note Lens tag (0x84: min/max focal
// length in mm, min/max f-number at those) as "18-70mm f/3.5-4.5".
func nikonLens(x *exif.Exif) (s string) {
	defer func() {
		if recover() != nil {
			s = ""
		}
	}()
	t, err := x.Get(mknote.Lens)
	if err != nil {
		return ""
	}
	var v [4]float64
	for i := range v {
		n, d, err := t.Rat2(i)
		if err != nil || d <= 0 || n < 0 {
			return ""
		}
		v[i] = float64(n) / float64(d)
	}
	if v[0] <= 0 {
		return ""
	}
	g := func(f float64) string { return strings.TrimSuffix(fmt.Sprintf("%.1f", f), ".0") }
	fl := g(v[0]) + "mm"
	if v[1] > v[0] {
		fl = g(v[0]) + "-" + g(v[1]) + "mm"
	}
	ap := ""
	if v[2] > 0 {
		ap = " f/" + g(v[2])
		if v[3] > v[2] {
			ap += "-" + g(v[3])
		}
	}
	return fl + ap
}

// goexif's view of TIFF types: types 1..12 (no type 13).
func gxTypeSize(t uint16) uint64 {
	if t == tifftag.TypeIFD {
		return 0
	}
	return typeSize(t)
}

// keepTags are the entries goexif is left to decode: the EXIF fields read
// (IFD0 Make, Model, Orientation, DateTime; Exif ExposureTime, FNumber,
// ISO, DateTimeOriginal, DateTimeDigitized, FocalLength, LensModel,
// MakerNote; the SubSecTime and OffsetTime strings of Dates), the Exif IFD
// pointer, and the Canon maker-note LensModel
// (0x95). keepNikon is the Nikon maker-note Lens (0x84).
var (
	keepTags = map[uint16]bool{
		tifftag.Make: true, tifftag.Model: true, tifftag.Orientation: true, tifftag.DateTime: true, tifftag.ExifIFD: true,
		tifftag.ExposureTime: true, tifftag.FNumber: true, tifftag.PhotographicSensitivity: true,
		tifftag.DateTimeOriginal: true, tifftag.DateTimeDigitized: true, tifftag.FocalLength: true, tifftag.LensModel: true,
		tifftag.MakerNote: true, tifftag.CanonLensModel: true,
		tifftag.OffsetTime: true, tifftag.OffsetTimeOriginal: true, tifftag.OffsetTimeDigitized: true,
		tifftag.SubSecTime: true, tifftag.SubSecTimeOriginal: true, tifftag.SubSecTimeDigitized: true,
	}
	keepNikon = map[uint16]bool{tifftag.NikonLens: true}
)

// sanitizeTIFF makes b, a complete TIFF structure as goexif's tiff.Decode
// reads it, safe for goexif: the magic word is set to 42 (ORF and RW2 use
// other values), every IFD chain is cut before a repeated offset, an offset
// outside b or after maxChain IFDs, and every entry goexif would read (IFD
// chain, Exif, GPS and Interop IFDs, the Canon maker-note IFD, the TIFF
// inside a Nikon maker note) whose value is out of b, of unknown type, of
// zero count or whose count×size overflows 32 bits is turned into a
// harmless 1-byte UNDEFINED value. A read-only pass then checks the result
// (writes can alias other structures); false means goexif must not run.
func sanitizeTIFF(b []byte, canon bool) bool {
	if len(b) < 8 {
		return false
	}
	if !(&gxPass{b: b, write: true, canon: canon, keep: keepTags}).run() {
		return false
	}
	return (&gxPass{b: b, canon: canon}).run()
}

type gxPass struct {
	b       []byte
	bo      binary.ByteOrder
	write   bool
	canon   bool            // the Make is Canon: goexif's Canon parser reads the maker note as an IFD
	keep    map[uint16]bool // entries left as they are; the others become 1-byte UNDEFINED
	entries int
	weight  uint64
}

func (p *gxPass) run() bool {
	b := p.b
	var ok bool
	if p.bo, ok = tiffByteOrder(b); !ok {
		return false
	}
	if p.bo.Uint16(b[2:]) != 42 {
		if !p.write {
			return false
		}
		p.bo.PutUint16(b[2:], 42)
	}
	chain, ok := p.chain(b, 4)
	if !ok {
		return false
	}
	// Sub-IFDs goexif opens through IFD0 (Exif, GPS) and the Exif IFD
	// (Interop); we clean the ones named by any chain IFD.
	var exifIFDs []int64
	for _, off := range chain {
		for _, tag := range []uint16{tifftag.ExifIFD, tifftag.GPSIFD} {
			if sub, ok := p.pointer(b, off, tag); ok {
				if !p.clean(b, sub) {
					return false
				}
				if tag == tifftag.ExifIFD {
					exifIFDs = append(exifIFDs, sub)
				}
			}
		}
	}
	for _, e := range exifIFDs {
		if sub, ok := p.pointer(b, e, tifftag.InteropIFD); ok && !p.clean(b, sub) {
			return false
		}
		if !p.makerNote(b, e) {
			return false
		}
	}
	return true
}

// chain walks the IFD chain whose first offset is stored at b[ptr:],
// cleaning each IFD; it returns the IFD offsets.
func (p *gxPass) chain(b []byte, ptr int) ([]int64, bool) {
	seen := map[int64]bool{}
	var offs []int64
	for i := 0; ; i++ {
		if ptr < 0 || ptr+4 > len(b) {
			return nil, false
		}
		off := int64(int32(p.bo.Uint32(b[ptr:])))
		if off == 0 {
			return offs, true
		}
		n, fits := p.count(b, off)
		if i >= maxChain || seen[off] || !fits {
			if i == 0 || !p.write {
				return nil, false
			}
			p.bo.PutUint32(b[ptr:], 0)
			return offs, true
		}
		seen[off] = true
		offs = append(offs, off)
		if !p.clean(b, off) {
			return nil, false
		}
		ptr = int(off) + 2 + 12*n
	}
}

// count returns goexif's entry count of the IFD at off (int16, negative
// read as 0) and whether the whole IFD, next-offset included, lies in b.
func (p *gxPass) count(b []byte, off int64) (int, bool) {
	if off < 0 || off+2 > int64(len(b)) {
		return 0, false
	}
	n := max(int(int16(p.bo.Uint16(b[off:]))), 0)
	return n, off+2+12*int64(n)+4 <= int64(len(b))
}

// clean makes the entries of the IFD at off that lie in b safe.
func (p *gxPass) clean(b []byte, off int64) bool {
	if off < 0 || off+2 > int64(len(b)) {
		return true // goexif fails to read it: an error, not a hazard
	}
	n, _ := p.count(b, off)
	for i := 0; i < n; i++ {
		pos := off + 2 + 12*int64(i)
		if pos+12 > int64(len(b)) {
			break
		}
		p.entries++
		if p.entries > maxExifEntries {
			return false
		}
		e := b[pos : pos+12]
		typ, cnt := p.bo.Uint16(e[2:]), p.bo.Uint32(e[4:])
		sz := gxTypeSize(typ)
		vl := sz * uint64(cnt)
		bad := sz == 0 || cnt == 0 || cnt == math.MaxUint32 || vl > math.MaxUint32
		if !bad && vl > 4 {
			bad = uint64(p.bo.Uint32(e[8:]))+vl > uint64(len(b))
		}
		if p.write && !bad && !p.keep[p.bo.Uint16(e)] {
			bad = true // not needed: spare goexif the decoding
		}
		if bad {
			if !p.write {
				return false
			}
			p.bo.PutUint16(e[2:], tifftag.TypeUndefined)
			p.bo.PutUint32(e[4:], 1)
			vl, cnt = 1, 1
		}
		// goexif keeps the value bytes and converts numbers to []int64,
		// [][]int64 or []float64 of cnt elements.
		p.weight += vl + 48*uint64(cnt)
		if p.weight > maxExifWeight {
			return false
		}
	}
	return true
}

// pointer returns the value of a LONG/SHORT pointer tag in the IFD at off.
func (p *gxPass) pointer(b []byte, off int64, tag uint16) (int64, bool) {
	e, ok := p.entry(b, off, tag)
	if !ok {
		return 0, false
	}
	typ, cnt := p.bo.Uint16(e[2:]), p.bo.Uint32(e[4:])
	switch {
	case cnt != 1:
		return 0, false
	case typ == tifftag.TypeLong || typ == tifftag.TypeSLong:
		return int64(p.bo.Uint32(e[8:])), true
	case typ == tifftag.TypeShort || typ == tifftag.TypeSShort:
		return int64(p.bo.Uint16(e[8:])), true
	}
	return 0, false
}

func (p *gxPass) entry(b []byte, off int64, tag uint16) ([]byte, bool) {
	if off < 0 || off+2 > int64(len(b)) {
		return nil, false
	}
	n, _ := p.count(b, off)
	for i := 0; i < n; i++ {
		pos := off + 2 + 12*int64(i)
		if pos+12 > int64(len(b)) {
			break
		}
		if p.bo.Uint16(b[pos:]) == tag {
			return b[pos : pos+12], true
		}
	}
	return nil, false
}

// makerNote cleans the maker note of the Exif IFD at off the way goexif's
// mknote parsers read it: Canon as one IFD at the value offset (offsets
// relative to the TIFF), Nikon type 3 as a TIFF starting 10 bytes in.
func (p *gxPass) makerNote(b []byte, off int64) bool {
	e, ok := p.entry(b, off, tifftag.MakerNote)
	if !ok {
		return true
	}
	cnt := uint64(p.bo.Uint32(e[4:]))
	if gxTypeSize(p.bo.Uint16(e[2:])) != 1 || cnt <= 4 {
		return true
	}
	start := uint64(p.bo.Uint32(e[8:]))
	if start+cnt > uint64(len(b)) {
		return true
	}
	v := b[start : start+cnt]
	if bytes.HasPrefix(v, []byte("Nikon\x00")) {
		if len(v) < 18 {
			return true // goexif panics or errors here: recovered, not a hazard
		}
		if (&gxPass{b: v[10:], write: p.write, keep: keepNikon}).run() {
			return true
		}
		if !p.write {
			return false
		}
		v[0] = 'X' // goexif's Nikon parser then leaves it alone
		return true
	}
	if !p.canon {
		return true
	}
	return p.clean(b, int64(start))
}
