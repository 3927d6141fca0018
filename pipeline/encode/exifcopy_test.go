package encode

import (
	"bytes"
	"encoding/binary"
	"image"
	"strings"
	"testing"

	"github.com/rwcarlsen/goexif/exif"

	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

func shortTag(d tifftag.Dir, id, v uint16) Tag {
	return Tag{Dir: d, ID: id, Type: tifftag.TypeShort, Value: binary.BigEndian.AppendUint16(nil, v)}
}

func asciiTag(d tifftag.Dir, id uint16, s string) Tag {
	return Tag{Dir: d, ID: id, Type: tifftag.TypeASCII, Value: append([]byte(s), 0)}
}

// copiedMeta is testMeta with raw tags: an Orientation of 6 and another
// Software (both replaced), an ExposureTime that overrides the basic one,
// a flash and serial number, an artist, and a GPS latitude.
func copiedMeta() Metadata {
	md := testMeta
	md.Tags = []Tag{
		shortTag(tifftag.DirImage, tifftag.Orientation, 6),
		asciiTag(tifftag.DirImage, tifftag.Software, "Adobe Photoshop Camera Raw"),
		asciiTag(tifftag.DirImage, tifftag.Artist, "Ada"),
		{Dir: tifftag.DirExif, ID: tifftag.ExposureTime, Type: tifftag.TypeRational, Value: []byte{0, 0, 0, 10, 0, 0, 0x09, 0xc4}}, // 10/2500
		shortTag(tifftag.DirExif, 37385, 16),
		asciiTag(tifftag.DirExif, 42033, "033024001432"),
		asciiTag(tifftag.DirExif, tifftag.DateTimeDigitized, "\x00\x00\x00"), // empty: not copied
		asciiTag(tifftag.DirGPS, 1, "N"),
		{Dir: tifftag.DirGPS, ID: 2, Type: tifftag.TypeRational, Value: []byte{0, 0, 0, 48, 0, 0, 0, 1, 0, 0, 0, 51, 0, 0, 0, 1, 0, 0, 0, 24, 0, 0, 0, 1}},
	}
	return md
}

// TestEXIFMergesRawTags: the raw's tags are copied over the basic list,
// Orientation stays 1 and Software rawbatch's, empty strings are dropped,
// and GPS gets its IFD (goexif reads it back).
func TestEXIFMergesRawTags(t *testing.T) {
	x, err := exif.Decode(bytes.NewReader(EXIF(copiedMeta())))
	if err != nil {
		t.Fatal(err)
	}
	if o := tagInt(t, x, exif.Orientation); o != 1 {
		t.Errorf("Orientation = %d, want 1", o)
	}
	if s := tagString(t, x, exif.Software); s != "rawbatch test" {
		t.Errorf("Software = %q, want rawbatch's", s)
	}
	if s := tagString(t, x, exif.Artist); s != "Ada" {
		t.Errorf("Artist = %q", s)
	}
	if r := tagRat(t, x, exif.ExposureTime); r.FloatString(4) != "0.0040" {
		t.Errorf("ExposureTime = %v, want the raw's 10/2500", r)
	}
	if v := tagInt(t, x, exif.Flash); v != 16 {
		t.Errorf("Flash = %d", v)
	}
	if _, err := x.Get(exif.DateTimeDigitized); err == nil {
		t.Error("an empty DateTimeDigitized was copied")
	}
	if tg, err := x.Get(exif.GPSLatitude); err != nil || tg.Count != 3 {
		t.Errorf("GPSLatitude: %v %v", tg, err)
	}
	if s := tagString(t, x, exif.GPSLatitudeRef); s != "N" {
		t.Errorf("GPSLatitudeRef = %q", s)
	}
	// With Artist and Copyright set, they replace the raw's.
	md := copiedMeta()
	md.Artist, md.Copyright = "Grace", "(c) Grace"
	x, err = exif.Decode(bytes.NewReader(EXIF(md)))
	if err != nil {
		t.Fatal(err)
	}
	if a, c := tagString(t, x, exif.Artist), tagString(t, x, exif.Copyright); a != "Grace" || c != "(c) Grace" {
		t.Errorf("Artist, Copyright = %q, %q", a, c)
	}
}

// TestTIFFCarriesGPS: a TIFF output holds the same Exif and GPS IFDs, and
// the XMP packet as tag 700.
func TestTIFFCarriesGPS(t *testing.T) {
	md := copiedMeta()
	md.XMP = XMP{DerivedFrom: "a.dng"}
	var b bytes.Buffer
	if err := TIFF16(&b, image.NewNRGBA64(image.Rect(0, 0, 4, 4)), nil, md, true); err != nil {
		t.Fatal(err)
	}
	x, err := exif.Decode(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if s := tagString(t, x, exif.GPSLatitudeRef); s != "N" {
		t.Errorf("GPSLatitudeRef = %q", s)
	}
	if v := tagInt(t, x, exif.Flash); v != 16 {
		t.Errorf("Flash = %d", v)
	}
	if !bytes.Contains(b.Bytes(), XMPPacket(md.XMP)) {
		t.Error("no XMP packet in the TIFF")
	}
}

// TestEXIFStrip: with Strip only Orientation and Software remain, and no
// XMP packet is made.
func TestEXIFStrip(t *testing.T) {
	md := copiedMeta()
	md.Strip = true
	md.XMP = XMP{DerivedFrom: "a.dng", Rating: "3"}
	b := EXIF(md)
	if n := binary.BigEndian.Uint16(b[8:]); n != 2 {
		t.Errorf("stripped IFD0 has %d entries, want 2 (Orientation, Software)", n)
	}
	x, err := exif.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []exif.FieldName{exif.Artist, exif.Make, exif.ExposureTime, exif.GPSLatitude, exif.DateTimeOriginal} {
		if _, err := x.Get(n); err == nil {
			t.Errorf("%s kept with Strip", n)
		}
	}
	if xmpOf(md) != nil {
		t.Error("an XMP packet with Strip")
	}
}

// TestXMPPacket: the packet is well-formed, escapes its values, and is
// written into every format.
func TestXMPPacket(t *testing.T) {
	x := XMP{DerivedFrom: "R&D <1>.CR3", Rating: "4", Label: "Red"}
	p := string(XMPPacket(x))
	for _, want := range []string{"<stRef:filePath>R&amp;D &lt;1&gt;.CR3</stRef:filePath>", "<xmp:Rating>4</xmp:Rating>", "<xmp:Label>Red</xmp:Label>", `<?xpacket end="r"?>`} {
		if !strings.Contains(p, want) {
			t.Errorf("packet lacks %s:\n%s", want, p)
		}
	}
	if XMPPacket(XMP{}) != nil {
		t.Error("a packet for nothing")
	}
	md := testMeta
	md.XMP = x
	img := image.NewNRGBA64(image.Rect(0, 0, 4, 4))
	for name, write := range map[string]func(*bytes.Buffer) error{
		"jpeg":   func(b *bytes.Buffer) error { return JPEG(b, img, 90, nil, md) },
		"png16":  func(b *bytes.Buffer) error { return PNG16(b, img, nil, md) },
		"png8":   func(b *bytes.Buffer) error { return PNG8(b, img, nil, md) },
		"tiff16": func(b *bytes.Buffer) error { return TIFF16(b, img, nil, md, false) },
		"webp":   func(b *bytes.Buffer) error { return WebP(b, img, 90, false, nil, md) },
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Contains(b.Bytes(), XMPPacket(x)) {
			t.Errorf("%s: no XMP packet", name)
		}
	}
}

// TestEXIFTooLargeFallsBack: raw tags that would not fit a JPEG APP1
// segment are left out (the basic list stays), so the file never fails.
func TestEXIFTooLargeFallsBack(t *testing.T) {
	md := copiedMeta()
	for i := 0; i < 9; i++ {
		md.Tags = append(md.Tags, Tag{Dir: tifftag.DirExif, ID: uint16(37510 + i), Type: tifftag.TypeUndefined, Value: make([]byte, 8000)})
	}
	b := EXIF(md)
	if len(b) > 65000 {
		t.Fatalf("EXIF of %d bytes", len(b))
	}
	x, err := exif.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if s := tagString(t, x, exif.Model); s != "X-T4" {
		t.Errorf("Model = %q: the basic list is lost", s)
	}
	if _, err := x.Get(exif.Artist); err == nil {
		t.Error("the raw's tags kept though the block is too large")
	}
	var out bytes.Buffer
	if err := JPEG(&out, image.NewNRGBA64(image.Rect(0, 0, 4, 4)), 90, nil, md); err != nil {
		t.Errorf("JPEG: %v", err)
	}
}
