package header

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/rawbatch/rawbatch/pipeline/sidecar"
	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// Tag is one standard tag (tifftag.Standard) of a raw file, as outputs copy
// it, its value converted to big-endian order (tifftag.Entry).
type Tag = tifftag.Entry

// Meta is the metadata of a raw file that its outputs carry beyond
// Header.EXIF: every standard EXIF and GPS tag, and the rating and label
// of its XMP.
type Meta struct {
	// Tags are the file's standard tags in file order, IFD0 first, then
	// the Exif IFD, then the GPS IFD. Exif attributes a TIFF/EP writer put
	// in IFD0 are moved to DirExif. Empty when the file has no EXIF
	// (CRW, headerless raws) or it could not be parsed (then Warnings
	// says so).
	Tags []Tag
	// Source names where Tags came from ("TIFF IFD0, Exif and GPS IFDs",
	// "CR3 CMT1, CMT2 and CMT4 boxes", "RAF embedded JPEG", ...), "" when
	// nowhere.
	Source string
	// Meta is the XMP metadata (rating, label, keywords, title, ...;
	// sidecar.Meta) of the file's XMP packet (tag 700), each field
	// overridden by the sidecar's (sidecar.Read: NAME.xmp or NAME.EXT.xmp
	// next to the file, the newer of the two). Rating falls back to the
	// IFD0 Rating tag (18246).
	sidecar.Meta
	// Sidecar is the path of the sidecar read, "" when none.
	Sidecar string
	// Warnings say why a file that should have EXIF has none, and name a
	// malformed XMP packet or sidecar (then ignored) or two sidecars.
	Warnings []string
}

// Limits of ReadMeta: values longer than maxTagValue bytes are skipped (a
// long UserComment; no other standard tag comes near), so that the copied
// tags fit a JPEG's 64 KiB APP1 segment.
const (
	maxTagValue = 8 << 10
)

// ReadMeta reads the standard EXIF and GPS tags and the XMP rating and
// label of the raw file at path, within the same read budget as Read
// (MaxRead bytes). Sources: TIFF-based raws (DNG, CR2, NEF, ARW, PEF, ORF,
// RW2 and others): IFD0, its Exif IFD (34665) and GPS IFD (34853); RW2's
// standard EXIF is in the JPEG of its IFD0 tag 0x2E, taken for tags IFD0
// lacks; CR3: the CMT1 (IFD0), CMT2 (Exif IFD) and CMT4 (GPS IFD) boxes,
// each a TIFF structure of its own (Canon's CR3 description, ExifTool
// Canon CR3); RAF: the Exif APP1 segment of its embedded JPEG; MRW: its
// TTW block (a TIFF structure). Other formats (CRW's CIFF, X3F, IIQ's own
// directory beyond its TIFF IFD0, headerless raws) give what their TIFF
// part holds, or no Tags, and no warning. The error is only for a file that cannot be opened or read;
// damaged EXIF gives Warnings instead.
func ReadMeta(path string) (Meta, error) { return ReadMetaWith(path, true) }

// ReadMetaWith is ReadMeta, reading the sidecar only when sidecars is
// true.
func ReadMetaWith(path string, sidecars bool) (Meta, error) {
	var m Meta
	f, st, err := openRegular(path)
	if err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	src, err := newSource(f, st.Size())
	defer src.release()
	if err != nil {
		return m, fmt.Errorf("%s: reading: %w", path, err)
	}
	var xmp []byte
	switch recognise(src.head).kind {
	case "TIFF":
		m.Source = "TIFF IFD0, Exif and GPS IFDs"
		if t, ok := newTIFFBlock(src, 0, src.size); ok {
			var d0 *ifd
			d0, xmp = m.readTIFF(t)
			if d0 != nil && t.bo.Uint16(src.head[2:]) == 0x55 {
				m.rw2JPEG(t, d0)
			}
		}
	case "CR3":
		m.Source = "CR3 CMT1, CMT2 and CMT4 boxes"
		c := parseCR3(src)
		for i, dir := range map[int]tifftag.Dir{0: tifftag.DirImage, 1: tifftag.DirExif, 3: tifftag.DirGPS} {
			pos, n := c.cmt[i][0], c.cmt[i][1]
			if n < 8 {
				continue
			}
			if t, ok := newTIFFBlock(src, pos, pos+n); ok {
				if d, ok := t.readIFD(t.ifd0); ok {
					m.addIFD(t, d, dir)
				}
			}
		}
		sortTags(m.Tags)
	case "MRW":
		m.Source = "MRW TTW block"
		o := &own{}
		parseMRW(src, o)
		if pos, n := o.exifBlob[0], o.exifBlob[1]; n >= 8 {
			if t, ok := newTIFFBlock(src, pos, pos+n); ok {
				m.readTIFF(t)
			}
		}
	case "RAF":
		m.Source = "RAF embedded JPEG"
		if hb, err := src.bytes(0x54, 8); err == nil {
			jOff, jLen := int64(binary.BigEndian.Uint32(hb)), int64(binary.BigEndian.Uint32(hb[4:]))
			if pos, n, ok := jpegExif(src, jOff, jLen); ok {
				if t, ok := newTIFFBlock(src, pos, pos+n); ok {
					m.readTIFF(t)
				}
			}
		}
	}
	if m.Source != "" && len(m.Tags) == 0 {
		m.Warnings = append(m.Warnings, fmt.Sprintf("%s: EXIF could not be read from the %s; the output carries the basic list (camera, lens, exposure, dates)", path, m.Source))
		m.Source = ""
	}
	if len(xmp) > 0 {
		if own, err := sidecar.Parse(xmp); err == nil {
			m.Meta = own
		} else {
			m.Warnings = append(m.Warnings, fmt.Sprintf("%s: its XMP packet (tag 700) is ignored: %v", path, err))
		}
	}
	if m.Rating == "" {
		for _, t := range m.Tags {
			if t.Dir == tifftag.DirImage && t.ID == tifftag.Rating && t.Type == tifftag.TypeShort && len(t.Value) >= 2 {
				if v := binary.BigEndian.Uint16(t.Value); v <= 5 {
					m.Rating = strconv.Itoa(int(v))
				}
			}
		}
	}
	if sidecars {
		side, found, warns := sidecar.Read(path)
		m.Sidecar = found.Path
		m.Warnings = append(m.Warnings, warns...)
		m.Meta = m.Meta.Over(side)
	}
	return m, nil
}

// ReadOwnXMP returns the XMP metadata of the packet inside the raw file at
// path (TIFF-based raws' IFD0 tag 700, as Lightroom and Adobe's DNG
// Converter write it into a DNG), reading only IFD0 and the packet; an
// empty Meta when the file has none. A malformed packet gives a warning
// naming the file and an empty Meta. The error is only for a file that
// cannot be opened or read.
func ReadOwnXMP(path string) (sidecar.Meta, []string, error) {
	f, st, err := openRegular(path)
	if err != nil {
		return sidecar.Meta{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	src, err := newSource(f, st.Size())
	defer src.release()
	if err != nil {
		return sidecar.Meta{}, nil, fmt.Errorf("%s: reading: %w", path, err)
	}
	if recognise(src.head).kind != "TIFF" {
		return sidecar.Meta{}, nil, nil
	}
	t, ok := newTIFFBlock(src, 0, src.size)
	if !ok {
		return sidecar.Meta{}, nil, nil
	}
	d0, ok := t.readIFD(t.ifd0)
	if !ok {
		return sidecar.Meta{}, nil, nil
	}
	e, ok := d0.find(tifftag.XMLPacket)
	if !ok || e.count > MaxRead/2 {
		return sidecar.Meta{}, nil, nil
	}
	var m Meta
	b := m.value(t, e)
	if len(b) == 0 {
		return sidecar.Meta{}, nil, nil
	}
	own, err := sidecar.Parse(b)
	if err != nil {
		return sidecar.Meta{}, []string{fmt.Sprintf("%s: its XMP packet (tag 700) is ignored: %v", path, err)}, nil
	}
	return own, nil, nil
}

// readTIFF reads IFD0 of t, its Exif and GPS IFDs, and returns IFD0 and
// its XMP packet (tag 700, nil when absent).
func (m *Meta) readTIFF(t *tiffBlock) (*ifd, []byte) {
	d0, ok := t.readIFD(t.ifd0)
	if !ok {
		return nil, nil
	}
	var xmp []byte
	if e, ok := d0.find(tifftag.XMLPacket); ok && e.count <= MaxRead/2 {
		xmp = m.value(t, e)
	}
	// The Exif IFD first: its value wins over a copy of the same
	// attribute in IFD0 (TIFF/EP).
	if d0.exifIFD != 0 && d0.exifIFD != d0.off {
		if d, ok := t.readIFD(d0.exifIFD); ok {
			m.addIFD(t, d, tifftag.DirExif)
		}
	}
	m.addIFD(t, d0, tifftag.DirImage)
	if e, ok := d0.find(tifftag.GPSIFD); ok {
		if off := t.num(e); off > 0 && off != d0.off && off != d0.exifIFD {
			if d, ok := t.readIFD(off); ok {
				m.addIFD(t, d, tifftag.DirGPS)
			}
		}
	}
	sortTags(m.Tags)
	return d0, xmp
}

// rw2JPEG adds the tags of the Exif block of a Panasonic RW2's embedded
// JPEG (IFD0 tag 0x2E), for those IFD0 itself lacks.
func (m *Meta) rw2JPEG(t *tiffBlock, d0 *ifd) {
	e, ok := d0.find(tifftag.PanasonicJpgFromRaw)
	if !ok {
		return
	}
	pos, n, ok := t.valueAt(e)
	if !ok {
		return
	}
	jpos, jn, ok := jpegExif(t.src, pos, n)
	if !ok {
		return
	}
	jt, ok := newTIFFBlock(t.src, jpos, jpos+jn)
	if !ok {
		return
	}
	var inner Meta
	inner.readTIFF(jt)
	for _, tg := range inner.Tags {
		if !m.has(tg.Dir, tg.ID) {
			m.Tags = append(m.Tags, tg)
		}
	}
	sortTags(m.Tags)
}

func (m *Meta) has(d tifftag.Dir, id uint16) bool {
	for _, t := range m.Tags {
		if t.Dir == d && t.ID == id {
			return true
		}
	}
	return false
}

// addIFD adds the standard tags of IFD d (of directory kind dir) that have
// a type go-exif writes (not SBYTE or SSHORT) and a value inside the
// block. An Exif attribute found in IFD0 (TIFF/EP) counts as DirExif.
func (m *Meta) addIFD(t *tiffBlock, d *ifd, dir tifftag.Dir) {
	for _, e := range d.entries {
		kd := dir
		if dir == tifftag.DirImage && !tifftag.IsStandard(kd, e.tag) && tifftag.IsStandard(tifftag.DirExif, e.tag) {
			kd = tifftag.DirExif
		}
		if !tifftag.IsStandard(kd, e.tag) || m.has(kd, e.tag) {
			continue
		}
		switch e.typ {
		case tifftag.TypeByte, tifftag.TypeASCII, tifftag.TypeShort, tifftag.TypeLong, tifftag.TypeRational,
			tifftag.TypeUndefined, tifftag.TypeSLong, tifftag.TypeSRational, tifftag.TypeFloat, tifftag.TypeDouble:
		default:
			continue
		}
		if uint64(e.count)*typeSize(e.typ) > maxTagValue {
			continue
		}
		v := m.value(t, e)
		if v == nil {
			continue
		}
		m.Tags = append(m.Tags, Tag{Dir: kd, ID: e.tag, Type: e.typ, Value: v})
	}
}

// value returns a copy of e's value bytes in big-endian order, nil when
// they lie outside the block.
func (m *Meta) value(t *tiffBlock, e entry) []byte {
	pos, n, ok := t.valueAt(e)
	if !ok {
		return nil
	}
	b, err := t.src.bytes(pos, n)
	if err != nil {
		return nil
	}
	out := append([]byte(nil), b...)
	if t.bo == binary.BigEndian {
		return out
	}
	unit := int(typeSize(e.typ))
	if e.typ == tifftag.TypeRational || e.typ == tifftag.TypeSRational {
		unit = 4 // two LONGs each
	}
	if e.typ == tifftag.TypeByte || e.typ == tifftag.TypeASCII || e.typ == tifftag.TypeUndefined {
		unit = 1
	}
	for i := 0; i+unit <= len(out); i += unit {
		for a, z := i, i+unit-1; a < z; a, z = a+1, z-1 {
			out[a], out[z] = out[z], out[a]
		}
	}
	return out
}

// sortTags orders tags by directory (IFD0, Exif, GPS), then number, as
// TIFF 6.0 §2 requires within an IFD.
func sortTags(tags []Tag) {
	rank := func(d tifftag.Dir) int {
		switch d {
		case tifftag.DirImage:
			return 0
		case tifftag.DirExif:
			return 1
		}
		return 2
	}
	for i := 1; i < len(tags); i++ {
		for j := i; j > 0; j-- {
			a, b := tags[j-1], tags[j]
			if rank(a.Dir) < rank(b.Dir) || rank(a.Dir) == rank(b.Dir) && a.ID <= b.ID {
				break
			}
			tags[j-1], tags[j] = b, a
		}
	}
}
