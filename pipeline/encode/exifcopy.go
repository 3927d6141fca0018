package encode

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"

	exif "github.com/dsoprea/go-exif/v3"
	exifcommon "github.com/dsoprea/go-exif/v3/common"

	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// Tag is one standard EXIF or GPS tag copied from the raw file
// (tifftag.Entry, the type of header.Tag too).
type Tag = tifftag.Entry

// exifDirs are the entries of the three IFDs an output's EXIF holds, each
// sorted by tag number; gps may be empty, and exif is empty only when
// metadata is stripped.
type exifDirs struct {
	ifd0, exif, gps []ifdEntry
}

// mergedEntries returns the IFD entries written for md (see EXIF): the
// basic list, with every tag of md.Tags put in place of the basic entry of
// the same number or added; then Orientation = 1 and Software; then Artist
// and Copyright when set. With md.Strip, only Orientation = 1, Software
// and the Artist and Copyright given.
func mergedEntries(md Metadata) exifDirs {
	var d exifDirs
	if md.Strip {
		d.ifd0 = []ifdEntry{shortEntry(tifftag.Orientation, 1)}
		if md.Software != "" {
			// rawbatch recognises its own outputs by it (pipeline/outputs.go).
			d.ifd0 = append(d.ifd0, asciiEntry(tifftag.Software, md.Software))
		}
	} else {
		d.ifd0, d.exif = basicEntries(md)
		for _, t := range md.Tags {
			if t.Dir == tifftag.DirImage && (t.ID == tifftag.Orientation || t.ID == tifftag.Software) {
				continue
			}
			e, ok := tagEntry(t)
			if !ok {
				continue
			}
			switch t.Dir {
			case tifftag.DirImage:
				d.ifd0 = put(d.ifd0, e)
			case tifftag.DirExif:
				d.exif = put(d.exif, e)
			case tifftag.DirGPS:
				d.gps = put(d.gps, e)
			}
		}
	}
	if md.Artist != "" {
		d.ifd0 = put(d.ifd0, asciiEntry(tifftag.Artist, md.Artist))
	}
	if md.Copyright != "" {
		d.ifd0 = put(d.ifd0, asciiEntry(tifftag.Copyright, md.Copyright))
	}
	for _, l := range [][]ifdEntry{d.ifd0, d.exif, d.gps} {
		sort.Slice(l, func(i, j int) bool { return l[i].tag < l[j].tag })
	}
	return d
}

// tagEntry converts a copied tag; ASCII values are cut at their first NUL
// and dropped when nothing but spaces is left (an unset date of zeros).
func tagEntry(t Tag) (ifdEntry, bool) {
	sz := tifftag.TypeSize(t.Type)
	if sz == 0 || len(t.Value) == 0 || len(t.Value)%sz != 0 {
		return ifdEntry{}, false
	}
	if t.Type == tifftag.TypeASCII {
		s := t.Value
		if i := bytes.IndexByte(s, 0); i >= 0 {
			s = s[:i]
		}
		if len(bytes.TrimSpace(s)) == 0 {
			return ifdEntry{}, false
		}
		return asciiEntry(t.ID, string(s)), true
	}
	return ifdEntry{t.ID, t.Type, uint32(len(t.Value) / sz), t.Value}, true
}

// put replaces the entry of e's tag in l, or appends e.
func put(l []ifdEntry, e ifdEntry) []ifdEntry {
	for i := range l {
		if l[i].tag == e.tag {
			l[i] = e
			return l
		}
	}
	return append(l, e)
}

// encodeEXIF writes d as a big-endian Exif block (TIFF header, IFD0, Exif
// IFD, GPS IFD) through go-exif's IFD builder and encoder.
func encodeEXIF(d exifDirs) (out []byte, err error) {
	defer func() {
		// go-exif reports some failures by panicking.
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("encode: go-exif: %v", r)
		}
	}()
	im, err := exifcommon.NewIfdMappingWithStandard()
	if err != nil {
		return nil, fmt.Errorf("encode: go-exif: %w", err)
	}
	ti := exif.NewTagIndex()
	bo := binary.BigEndian
	add := func(ib *exif.IfdBuilder, path string, es []ifdEntry) error {
		for _, e := range es {
			if e.typ == tifftag.TypeASCII && len(e.data) > 4 && len(e.data)%2 == 1 {
				// go-exif packs values without padding: an extra NUL
				// keeps every value offset even (TIFF 6.0 §2).
				e.data = append(e.data[:len(e.data):len(e.data)], 0)
			}
			bt := exif.NewBuilderTag(path, e.tag, exifcommon.TagTypePrimitive(e.typ), exif.NewIfdBuilderTagValueFromBytes(e.data), bo)
			if err := ib.Add(bt); err != nil {
				return fmt.Errorf("encode: go-exif: tag %d: %w", e.tag, err)
			}
		}
		return nil
	}
	root := exif.NewIfdBuilder(im, ti, exifcommon.IfdStandardIfdIdentity, bo)
	if err := add(root, exifcommon.IfdStandardIfdIdentity.UnindexedString(), d.ifd0); err != nil {
		return nil, err
	}
	// The child IFD pointers (34665, 34853) sort after every IFD0 tag
	// copied, so appending them keeps IFD0 in ascending order.
	for _, c := range []struct {
		id *exifcommon.IfdIdentity
		es []ifdEntry
	}{{exifcommon.IfdExifStandardIfdIdentity, d.exif}, {exifcommon.IfdGpsInfoStandardIfdIdentity, d.gps}} {
		if len(c.es) == 0 {
			continue
		}
		ib := exif.NewIfdBuilder(im, ti, c.id, bo)
		if err := add(ib, c.id.UnindexedString(), c.es); err != nil {
			return nil, err
		}
		if err := root.AddChildIb(ib); err != nil {
			return nil, fmt.Errorf("encode: go-exif: %w", err)
		}
	}
	out, err = exif.NewIfdByteEncoder().EncodeToExif(root)
	if err != nil {
		return nil, fmt.Errorf("encode: go-exif: %w", err)
	}
	return out, nil
}
