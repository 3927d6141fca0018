package encode

import (
	"bytes"
	"encoding/binary"
	"math/big"
	"testing"
	"time"

	"github.com/rwcarlsen/goexif/exif"
	"github.com/rwcarlsen/goexif/tiff"

	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

var testMeta = Metadata{
	Make:         "FUJIFILM",
	Model:        "X-T4",
	Lens:         "XF35mmF1.4 R",
	Software:     "rawbatch test",
	Dates:        Dates{DateTime: "2023:07:14 18:05:09", DateTimeOriginal: "2023:07:14 18:05:09"},
	ExposureTime: 1.0 / 250,
	FNumber:      5.6,
	ISO:          400,
	FocalLength:  35,
}

func tagString(t *testing.T, x *exif.Exif, name exif.FieldName) string {
	t.Helper()
	tag, err := x.Get(name)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return ""
	}
	s, err := tag.StringVal()
	if err != nil {
		t.Errorf("%s: %v", name, err)
	}
	return s
}

func tagRat(t *testing.T, x *exif.Exif, name exif.FieldName) *big.Rat {
	t.Helper()
	tag, err := x.Get(name)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return new(big.Rat)
	}
	if tag.Type != tiff.DTRational {
		t.Errorf("%s: type %v, want RATIONAL", name, tag.Type)
	}
	r, err := tag.Rat(0)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return new(big.Rat)
	}
	return r
}

func tagInt(t *testing.T, x *exif.Exif, name exif.FieldName) int {
	t.Helper()
	tag, err := x.Get(name)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return -1
	}
	v, err := tag.Int(0)
	if err != nil {
		t.Errorf("%s: %v", name, err)
	}
	return v
}

// checkTestMeta verifies that x (decoded by goexif) carries testMeta.
func checkTestMeta(t *testing.T, x *exif.Exif) {
	t.Helper()
	if s := tagString(t, x, exif.Make); s != "FUJIFILM" {
		t.Errorf("Make = %q", s)
	}
	if s := tagString(t, x, exif.Model); s != "X-T4" {
		t.Errorf("Model = %q", s)
	}
	if s := tagString(t, x, exif.LensModel); s != "XF35mmF1.4 R" {
		t.Errorf("LensModel = %q", s)
	}
	if s := tagString(t, x, exif.Software); s != "rawbatch test" {
		t.Errorf("Software = %q", s)
	}
	if tag, err := x.Get(exif.Orientation); err != nil || tag.Type != tiff.DTShort {
		t.Errorf("Orientation: %v %v", tag, err)
	} else if v, _ := tag.Int(0); v != 1 {
		t.Errorf("Orientation = %d, want 1", v)
	}
	if r := tagRat(t, x, exif.ExposureTime); r.Cmp(big.NewRat(1, 250)) != 0 {
		t.Errorf("ExposureTime = %v, want 1/250", r)
	}
	if tag, _ := x.Get(exif.ExposureTime); tag != nil {
		if n, d, _ := tag.Rat2(0); n != 1 || d != 250 {
			t.Errorf("ExposureTime stored as %d/%d, want 1/250", n, d)
		}
	}
	if r := tagRat(t, x, exif.FNumber); r.Cmp(big.NewRat(56, 10)) != 0 {
		t.Errorf("FNumber = %v, want 5.6", r)
	}
	if r := tagRat(t, x, exif.FocalLength); r.Cmp(big.NewRat(35, 1)) != 0 {
		t.Errorf("FocalLength = %v, want 35", r)
	}
	if v := tagInt(t, x, exif.ISOSpeedRatings); v != 400 {
		t.Errorf("ISO = %d, want 400", v)
	}
	if tag, _ := x.Get(exif.ISOSpeedRatings); tag != nil && tag.Type != tiff.DTShort {
		t.Errorf("ISO type %v, want SHORT", tag.Type)
	}
	if s := tagString(t, x, exif.DateTimeOriginal); s != "2023:07:14 18:05:09" {
		t.Errorf("DateTimeOriginal = %q", s)
	}
	if s := tagString(t, x, exif.DateTime); s != "2023:07:14 18:05:09" {
		t.Errorf("DateTime = %q", s)
	}
	if tag, err := x.Get(exif.ExifVersion); err != nil || string(tag.Val) != "0232" {
		t.Errorf("ExifVersion = %v, %v", tag, err)
	}
}

func TestEXIFGoexif(t *testing.T) {
	b := EXIF(testMeta)
	x, err := exif.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	checkTestMeta(t, x)
}

// TestEXIFStructure walks the TIFF structure directly: header, IFD entry
// ordering, value offsets inside the block and word aligned.
func TestEXIFStructure(t *testing.T) {
	b := EXIF(testMeta)
	if string(b[:4]) != "MM\x00*" || binary.BigEndian.Uint32(b[4:]) != 8 {
		t.Fatalf("bad TIFF header % x", b[:8])
	}
	var walk func(off uint32, depth int) []uint16
	walk = func(off uint32, depth int) []uint16 {
		n := int(binary.BigEndian.Uint16(b[off:]))
		var tags []uint16
		for i := 0; i < n; i++ {
			e := b[int(off)+2+12*i:]
			tag, typ, count := binary.BigEndian.Uint16(e), binary.BigEndian.Uint16(e[2:]), binary.BigEndian.Uint32(e[4:])
			if i > 0 && tag <= tags[len(tags)-1] {
				t.Errorf("IFD tags not ascending: %#x after %#x", tag, tags[len(tags)-1])
			}
			tags = append(tags, tag)
			size := map[uint16]uint32{tifftag.TypeASCII: 1, tifftag.TypeShort: 2, tifftag.TypeLong: 4, tifftag.TypeRational: 8, tifftag.TypeUndefined: 1}[typ] * count
			if size > 4 {
				v := binary.BigEndian.Uint32(e[8:])
				if v%2 != 0 || v+size > uint32(len(b)) {
					t.Errorf("tag %#x: value offset %d size %d (len %d)", tag, v, size, len(b))
				}
			}
			if tag == tifftag.ExifIFD {
				if depth > 0 {
					t.Fatal("nested Exif IFD pointer")
				}
				sub := walk(binary.BigEndian.Uint32(e[8:]), depth+1)
				if len(sub) == 0 {
					t.Error("empty Exif IFD")
				}
			}
		}
		if next := binary.BigEndian.Uint32(b[int(off)+2+12*n:]); next != 0 {
			t.Errorf("next IFD = %d, want 0", next)
		}
		return tags
	}
	ifd0 := walk(8, 0)
	want := []uint16{tifftag.Make, tifftag.Model, tifftag.Orientation, tifftag.Software, tifftag.DateTime, tifftag.ExifIFD}
	if len(ifd0) != len(want) {
		t.Fatalf("IFD0 tags %#x, want %#x", ifd0, want)
	}
	for i := range want {
		if ifd0[i] != want[i] {
			t.Errorf("IFD0 tags %#x, want %#x", ifd0, want)
		}
	}
}

func TestEXIFZeroAndEdgeValues(t *testing.T) {
	x, err := exif.Decode(bytes.NewReader(EXIF(Metadata{})))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []exif.FieldName{exif.Make, exif.Model, exif.LensModel, exif.ExposureTime, exif.FNumber, exif.ISOSpeedRatings, exif.DateTimeOriginal, exif.FocalLength, exif.Software} {
		if _, err := x.Get(f); err == nil {
			t.Errorf("zero Metadata wrote %s", f)
		}
	}
	if v := tagInt(t, x, exif.Orientation); v != 1 {
		t.Errorf("Orientation = %d", v)
	}

	md := Metadata{ExposureTime: 2.5, FNumber: 1.4, ISO: 102400, FocalLength: 23.5, Make: "A\x00B",
		DateTime: time.Date(2020, 1, 2, 3, 4, 5, 678e6, time.UTC)}
	x, err = exif.Decode(bytes.NewReader(EXIF(md)))
	if err != nil {
		t.Fatal(err)
	}
	if r := tagRat(t, x, exif.ExposureTime); r.Cmp(big.NewRat(5, 2)) != 0 {
		t.Errorf("ExposureTime 2.5 → %v", r)
	}
	if r := tagRat(t, x, exif.FNumber); r.Cmp(big.NewRat(7, 5)) != 0 {
		t.Errorf("FNumber 1.4 → %v", r)
	}
	if r := tagRat(t, x, exif.FocalLength); r.Cmp(big.NewRat(47, 2)) != 0 {
		t.Errorf("FocalLength 23.5 → %v", r)
	}
	if v := tagInt(t, x, exif.ISOSpeedRatings); v != 65535 {
		t.Errorf("ISO 102400: PhotographicSensitivity = %d, want 65535", v)
	}
	// goexif does not know the Exif 2.3 tags; read them directly.
	if typ, v := rawTag(t, EXIF(md), tifftag.SensitivityType); typ != tifftag.TypeShort || binary.BigEndian.Uint16(v) != 3 {
		t.Errorf("SensitivityType = type %d % x, want SHORT 3", typ, v)
	}
	if typ, v := rawTag(t, EXIF(md), tifftag.ISOSpeed); typ != tifftag.TypeLong || binary.BigEndian.Uint32(v) != 102400 {
		t.Errorf("ISOSpeed = type %d % x, want LONG 102400", typ, v)
	}
	if s := tagString(t, x, exif.Make); s != "A" {
		t.Errorf("Make with NUL = %q, want %q", s, "A")
	}
	if s := tagString(t, x, exif.SubSecTimeOriginal); s != "678" {
		t.Errorf("SubSecTimeOriginal = %q", s)
	}
	for _, c := range []struct {
		v    float64
		n, d uint32
	}{{1.0 / 3, 1, 3}, {0.3, 3, 10}, {1.0 / 8000, 1, 8000}, {30, 30, 1}, {0.0005, 1, 2000}, {1.0 / 1.6, 5, 8}} {
		if n, d := exposureRational(c.v); n != c.n || d != c.d {
			t.Errorf("exposureRational(%v) = %d/%d, want %d/%d", c.v, n, d, c.n, c.d)
		}
	}
}

// rawTag finds tag in IFD0 or the Exif IFD of a big-endian EXIF block and
// returns its type and the 4-byte value field.
func rawTag(t *testing.T, b []byte, tag uint16) (uint16, []byte) {
	t.Helper()
	offs := []uint32{binary.BigEndian.Uint32(b[4:])}
	for k := 0; k < len(offs); k++ {
		off := offs[k]
		n := int(binary.BigEndian.Uint16(b[off:]))
		for i := 0; i < n; i++ {
			e := b[int(off)+2+12*i:]
			switch binary.BigEndian.Uint16(e) {
			case tag:
				return binary.BigEndian.Uint16(e[2:]), e[8:12]
			case tifftag.ExifIFD:
				offs = append(offs, binary.BigEndian.Uint32(e[8:]))
			}
		}
	}
	t.Errorf("tag %#x not found", tag)
	return 0, make([]byte, 4)
}
