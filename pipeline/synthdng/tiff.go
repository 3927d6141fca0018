package synthdng

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"

	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

var le = binary.LittleEndian

// entry is one 12-byte IFD entry plus its encoded (little-endian) value.
type entry struct {
	tag   uint16
	typ   uint16
	count uint32
	data  []byte
}

// ifd is a TIFF image file directory under construction. Entries are sorted by
// tag when encoded, as TIFF 6.0 requires.
type ifd struct {
	entries []entry
}

func (d *ifd) add(tag, typ uint16, count int, data []byte) {
	d.entries = append(d.entries, entry{tag: tag, typ: typ, count: uint32(count), data: data})
}

func (d *ifd) shorts(tag uint16, v ...uint16) {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		le.PutUint16(b[2*i:], x)
	}
	d.add(tag, tifftag.TypeShort, len(v), b)
}

func (d *ifd) longs(tag uint16, v ...uint32) {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		le.PutUint32(b[4*i:], x)
	}
	d.add(tag, tifftag.TypeLong, len(v), b)
}

func (d *ifd) bytes(tag uint16, v ...byte) {
	d.add(tag, tifftag.TypeByte, len(v), append([]byte(nil), v...))
}

func (d *ifd) undefined(tag uint16, v []byte) {
	d.add(tag, tifftag.TypeUndefined, len(v), append([]byte(nil), v...))
}

func (d *ifd) ascii(tag uint16, s string) {
	b := append([]byte(s), 0)
	d.add(tag, tifftag.TypeASCII, len(b), b)
}

// rationals writes unsigned num/den pairs.
func (d *ifd) rationals(tag uint16, nd ...uint32) {
	b := make([]byte, 4*len(nd))
	for i, x := range nd {
		le.PutUint32(b[4*i:], x)
	}
	d.add(tag, tifftag.TypeRational, len(nd)/2, b)
}

// srationals writes signed num/den pairs.
func (d *ifd) srationals(tag uint16, nd ...int32) {
	b := make([]byte, 4*len(nd))
	for i, x := range nd {
		le.PutUint32(b[4*i:], uint32(x))
	}
	d.add(tag, tifftag.TypeSRational, len(nd)/2, b)
}

func align4(n int) int { return (n + 3) &^ 3 }

// dirSize is the directory proper (entry count, n entries, next-IFD offset)
// padded to a 4-byte boundary.
func (d *ifd) dirSize() int { return align4(2 + 12*len(d.entries) + 4) }

// size is the number of bytes the IFD occupies when encoded: the directory
// followed by every value longer than 4 bytes, each padded to a 4-byte
// boundary, so with a 4-aligned start every offset in it is 4-aligned (TIFF
// only requires word, i.e. 2-byte, alignment).
func (d *ifd) size() int {
	n := d.dirSize()
	for _, e := range d.entries {
		if len(e.data) > 4 {
			n += align4(len(e.data))
		}
	}
	return n
}

// encode lays the IFD out at file offset off (which must be 4-aligned) and
// returns exactly size() bytes. The next-IFD offset is always 0: this package
// links IFDs only through SubIFDs (330) and ExifIFD (34665).
func (d *ifd) encode(off int) []byte {
	sort.SliceStable(d.entries, func(i, j int) bool { return d.entries[i].tag < d.entries[j].tag })
	out := make([]byte, d.size())
	n := len(d.entries)
	le.PutUint16(out, uint16(n))
	extra := d.dirSize() // relative position of the out-of-line value area
	for i, e := range d.entries {
		p := 2 + 12*i
		le.PutUint16(out[p:], e.tag)
		le.PutUint16(out[p+2:], e.typ)
		le.PutUint32(out[p+4:], e.count)
		if len(e.data) <= 4 {
			copy(out[p+8:p+12], e.data)
			continue
		}
		le.PutUint32(out[p+8:], uint32(off+extra))
		copy(out[extra:], e.data)
		extra += align4(len(e.data))
	}
	// next IFD offset (bytes 2+12n .. 2+12n+4) stays zero.
	return out
}

// checkUnique reports duplicate tags, which would make the IFD invalid.
func (d *ifd) checkUnique() error {
	seen := map[uint16]bool{}
	for _, e := range d.entries {
		if seen[e.tag] {
			return fmt.Errorf("synthdng: internal error: duplicate tag %d", e.tag)
		}
		seen[e.tag] = true
	}
	return nil
}

// fixedSRational returns round(v·den) as a signed numerator, or an error if it
// does not fit an int32 (SRATIONAL numerator).
func fixedSRational(v float64, den int32) (int32, error) {
	n := math.Round(v * float64(den))
	if math.IsNaN(n) || n > math.MaxInt32 || n < math.MinInt32 {
		return 0, fmt.Errorf("synthdng: value %g does not fit SRATIONAL n/%d", v, den)
	}
	return int32(n), nil
}

// fixedRational returns round(v·den) as an unsigned numerator.
func fixedRational(v float64, den uint32) (uint32, error) {
	n := math.Round(v * float64(den))
	if math.IsNaN(n) || n < 0 || n > math.MaxUint32 {
		return 0, fmt.Errorf("synthdng: value %g does not fit RATIONAL n/%d", v, den)
	}
	return uint32(n), nil
}

// exposureRational encodes an exposure time in seconds the way cameras do:
// 1/N when v is (to 1e-9 relative) the reciprocal of an integer, otherwise
// n/1000000.
func exposureRational(v float64) (num, den uint32, err error) {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, 0, fmt.Errorf("synthdng: invalid ExposureTime %g", v)
	}
	if v < 1 {
		r := math.Round(1 / v)
		if r <= math.MaxUint32 && math.Abs(1/r-v) <= 1e-9*v {
			return 1, uint32(r), nil
		}
	}
	n, err := fixedRational(v, 1000000)
	return n, 1000000, err
}
