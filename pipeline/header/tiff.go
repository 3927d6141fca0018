package header

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// TIFF tag numbers used here (TIFF 6.0, TIFF/EP, EXIF 2.32, DNG 1.4, and
// the vendor tags named).

// Walk limits: LibRaw's parse_tiff_ifd refuses IFDs of more than 512
// entries; we allow 1024. The other bounds stop cycles and chains.
const (
	maxEntries  = 1024
	maxIFDs     = 64 // per TIFF block, all kinds
	maxChain    = 32 // IFD0, IFD1, ... via next-IFD offsets
	maxSubDepth = 4  // SubIFDs of SubIFDs of ...
	maxSubIFDs  = 16 // SubIFD offsets taken from one tag
	maxStrips   = 8192
)

// typeSize is tifftag.TypeSize as a uint64, for products with counts.
func typeSize(t uint16) uint64 { return uint64(tifftag.TypeSize(t)) }

// tiffBlock is one TIFF structure inside the file: the whole file for
// TIFF-based RAWs, a CMT box for CR3. Offsets inside the block are relative
// to base, the file offset of its "II*\0"/"MM\0*" header.
type tiffBlock struct {
	src  *source
	base int64
	end  int64 // file offset where the block ends
	bo   binary.ByteOrder
	ifd0 int64 // relative offset of IFD0
	// cut says where the first IFD that ends past the block's end
	// starts ("": none did): a copy stopped inside the header.
	cut string
}

// newTIFFBlock checks the 8-byte header at file offset base. magic lists the
// accepted values of the 16-bit word at offset 2 (42 for TIFF; 0x4F52,
// 0x5352 for Olympus ORF; 0x55 for Panasonic RW2).
// tiffByteOrder returns the byte order named by a TIFF header's first two
// bytes, "II" (little-endian) or "MM" (big-endian) (TIFF 6.0 §2); ok is
// false for anything else.
func tiffByteOrder(h []byte) (bo binary.ByteOrder, ok bool) {
	if len(h) < 2 {
		return nil, false
	}
	switch string(h[:2]) {
	case "II":
		return binary.LittleEndian, true
	case "MM":
		return binary.BigEndian, true
	}
	return nil, false
}

func newTIFFBlock(src *source, base, end int64) (*tiffBlock, bool) {
	h, err := src.bytes(base, 8)
	if err != nil {
		return nil, false
	}
	t := &tiffBlock{src: src, base: base, end: end}
	var ok bool
	if t.bo, ok = tiffByteOrder(h); !ok {
		return nil, false
	}
	switch t.bo.Uint16(h[2:]) {
	case 42, 0x4f52, 0x5352, 0x55:
	default:
		return nil, false
	}
	t.ifd0 = int64(t.bo.Uint32(h[4:]))
	return t, true
}

// entry is one 12-byte IFD entry.
type entry struct {
	tag, typ uint16
	count    uint32
	pos      int64 // file offset of the entry
}

// valueSpan returns the file offset and byte length e's value claims,
// without checking that it lies in the block. The product count×size is
// computed in 64 bits, so a huge count is refused rather than wrapped.
func (t *tiffBlock) valueSpan(e entry) (pos, n int64, ok bool) {
	sz := typeSize(e.typ) * uint64(e.count)
	if sz == 0 || sz > math.MaxInt32 {
		return 0, 0, false
	}
	if sz <= 4 {
		return e.pos + 8, int64(sz), true
	}
	b, err := t.src.bytes(e.pos+8, 4)
	if err != nil {
		return 0, 0, false
	}
	return t.base + int64(t.bo.Uint32(b)), int64(sz), true
}

// valueAt is valueSpan restricted to values that lie inside the block.
func (t *tiffBlock) valueAt(e entry) (pos, n int64, ok bool) {
	pos, n, ok = t.valueSpan(e)
	if !ok || pos < t.base || n > t.end-pos {
		return 0, 0, false
	}
	return pos, n, true
}

// nums returns up to max numeric values of e as float64 (integers exactly;
// rationals as num/den, NaN for a zero denominator).
func (t *tiffBlock) nums(e entry, max int) []float64 {
	if int64(e.count) < int64(max) {
		max = int(e.count)
	}
	sz := typeSize(e.typ)
	if sz == 0 || max <= 0 || e.typ == tifftag.TypeASCII {
		return nil
	}
	pos, _, ok := t.valueAt(e)
	if !ok {
		return nil
	}
	b, err := t.src.bytes(pos, int64(sz)*int64(max))
	if err != nil {
		return nil
	}
	out := make([]float64, max)
	for i := range out {
		p := b[i*int(sz):]
		switch e.typ {
		case tifftag.TypeByte, tifftag.TypeUndefined:
			out[i] = float64(p[0])
		case tifftag.TypeSByte:
			out[i] = float64(int8(p[0]))
		case tifftag.TypeShort:
			out[i] = float64(t.bo.Uint16(p))
		case tifftag.TypeSShort:
			out[i] = float64(int16(t.bo.Uint16(p)))
		case tifftag.TypeLong, tifftag.TypeIFD:
			out[i] = float64(t.bo.Uint32(p))
		case tifftag.TypeSLong:
			out[i] = float64(int32(t.bo.Uint32(p)))
		case tifftag.TypeRational:
			n, d := t.bo.Uint32(p), t.bo.Uint32(p[4:])
			out[i] = ratio(float64(n), float64(d))
		case tifftag.TypeSRational:
			n, d := int32(t.bo.Uint32(p)), int32(t.bo.Uint32(p[4:]))
			out[i] = ratio(float64(n), float64(d))
		case tifftag.TypeFloat:
			out[i] = float64(math.Float32frombits(t.bo.Uint32(p)))
		case tifftag.TypeDouble:
			out[i] = math.Float64frombits(t.bo.Uint64(p))
		}
	}
	return out
}

func ratio(n, d float64) float64 {
	if d == 0 {
		return math.NaN()
	}
	return n / d
}

// num returns the first numeric value of e, or -1.
func (t *tiffBlock) num(e entry) int64 {
	v := t.nums(e, 1)
	if len(v) == 0 || math.IsNaN(v[0]) || v[0] < 0 || v[0] > math.MaxInt32 {
		return -1
	}
	return int64(v[0])
}

// str returns e's ASCII value (at most 256 bytes, cut at the first NUL,
// trimmed).
func (t *tiffBlock) str(e entry) string {
	if e.typ != tifftag.TypeASCII && e.typ != tifftag.TypeUndefined && e.typ != tifftag.TypeByte {
		return ""
	}
	c := e
	if c.count > 256 {
		c.count = 256
	}
	pos, n, ok := t.valueAt(c)
	if !ok {
		return ""
	}
	b, err := t.src.bytes(pos, n)
	if err != nil {
		return ""
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return strings.TrimSpace(string(b))
}

// ifd is one decoded IFD with the fields this package uses.
type ifd struct {
	off     int64 // relative offset inside the block
	entries []entry
	next    int64 // relative offset of the next IFD in the chain, 0 for none
	sub     bool  // reached through a SubIFDs tag
	// cut: its entries run past the block's end (the ones inside were
	// read; tiffBlock.cut says which).
	cut bool

	newSubFileType int64 // -1 when absent
	width, height  int64 // -1 when absent
	bps            int
	samples        int
	compression    int // -1 when absent
	photometric    int // -1 when absent
	orientation    int // 0 when absent
	make, model    string
	uniqueModel    string // DNG UniqueCameraModel (50708)
	dng            bool
	activeArea     []float64 // top, left, bottom, right
	cropOrigin     []float64 // x, y
	cropSize       []float64 // w, h
	sonyRawType    int       // -1 when absent
	subIFDs        []int64
	exifIFD        int64 // 0 when absent
	dataEnd        int64 // largest offset+count of strips/tiles (relative), -1 when unknown
	// blocks is the number of strips or tiles the IFD lists, wantBlocks
	// how many its size needs (RowsPerStrip, TileWidth/TileLength); -1
	// when unknown.
	blocks, wantBlocks int64
}

func (d *ifd) find(tag uint16) (entry, bool) {
	for _, e := range d.entries {
		if e.tag == tag {
			return e, true
		}
	}
	return entry{}, false
}

// readIFD reads the IFD at relative offset off. Entries that do not fit
// in the block are dropped (a truncated file keeps what it has).
func (t *tiffBlock) readIFD(off int64) (*ifd, bool) {
	pos := t.base + off
	if off < 8 {
		return nil, false
	}
	if pos+2 > t.end {
		t.cutAt(pos, "its entry count")
		return nil, false
	}
	b, err := t.src.bytes(pos, 2)
	if err != nil {
		return nil, false
	}
	n := int64(t.bo.Uint16(b))
	if n == 0 || n > maxEntries {
		return nil, false
	}
	fit := (t.end - pos - 2) / 12
	cut := fit < n
	if cut {
		t.cutAt(pos, fmt.Sprintf("%d of its %d entries", n-fit, n))
		n = fit
	}
	if n <= 0 {
		return nil, false
	}
	raw, err := t.src.bytes(pos+2, n*12)
	if err != nil {
		return nil, false
	}
	d := &ifd{off: off, cut: cut, newSubFileType: -1, width: -1, height: -1, compression: -1, photometric: -1, sonyRawType: -1, dataEnd: -1,
		blocks: -1, wantBlocks: -1}
	d.entries = make([]entry, n)
	for i := range d.entries {
		p := raw[i*12:]
		d.entries[i] = entry{tag: t.bo.Uint16(p), typ: t.bo.Uint16(p[2:]), count: t.bo.Uint32(p[4:]), pos: pos + 2 + int64(i)*12}
	}
	if nb, err := t.src.bytes(pos+2+n*12, 4); err == nil {
		d.next = int64(t.bo.Uint32(nb))
	}
	t.decode(d)
	return d, true
}

// cutAt records that the IFD at file offset pos ends past the block's
// end, missing what (tiffBlock.cut), unless an earlier one did.
func (t *tiffBlock) cutAt(pos int64, what string) {
	if t.cut == "" {
		t.cut = fmt.Sprintf("the IFD at offset %d lacks %s: the %d-byte file ends inside its header", pos, what, t.end)
	}
}

func (t *tiffBlock) decode(d *ifd) {
	for _, e := range d.entries {
		switch e.tag {
		case tifftag.NewSubFileType:
			d.newSubFileType = t.num(e)
		case tifftag.ImageWidth:
			d.width = t.num(e)
		case tifftag.ImageLength:
			d.height = t.num(e)
		case tifftag.BitsPerSample:
			d.bps = int(max(t.num(e), 0))
		case tifftag.SamplesPerPixel:
			d.samples = int(max(t.num(e), 0))
		case tifftag.Compression:
			d.compression = int(t.num(e))
		case tifftag.PhotometricInterpretation:
			d.photometric = int(t.num(e))
		case tifftag.Orientation:
			if o := t.num(e); o >= 1 && o <= 8 {
				d.orientation = int(o)
			}
		case tifftag.Make:
			d.make = t.str(e)
		case tifftag.Model:
			d.model = t.str(e)
		case tifftag.DNGVersion:
			d.dng = true
		case tifftag.UniqueCameraModel:
			d.uniqueModel = t.str(e)
		case tifftag.ActiveArea:
			d.activeArea = t.nums(e, 4)
		case tifftag.DefaultCropOrigin:
			d.cropOrigin = t.nums(e, 2)
		case tifftag.DefaultCropSize:
			d.cropSize = t.nums(e, 2)
		case tifftag.SonyRawFileType:
			d.sonyRawType = int(t.num(e))
		case tifftag.SubIFDs:
			c := min(int(e.count), maxSubIFDs)
			for _, v := range t.nums(entry{tag: e.tag, typ: e.typ, count: uint32(c), pos: e.pos}, c) {
				if v > 0 && v < math.MaxUint32 {
					d.subIFDs = append(d.subIFDs, int64(v))
				}
			}
		case tifftag.ExifIFD:
			if v := t.num(e); v > 0 {
				d.exifIFD = v
			}
		}
	}
	// Both: a Sony lossless ARW lists its tiles and, as its one strip,
	// the first tile alone.
	d.dataEnd = max(t.dataEnd(d, tifftag.StripOffsets, tifftag.StripByteCounts), t.dataEnd(d, tifftag.TileOffsets, tifftag.TileByteCounts))
	t.countBlocks(d)
}

// countBlocks fills d.blocks and d.wantBlocks (TIFF 6.0 §3 strips, §15
// tiles; one plane, PlanarConfiguration 1, as in raw IFDs).
func (t *tiffBlock) countBlocks(d *ifd) {
	if d.width <= 0 || d.height <= 0 {
		return
	}
	num := func(tag uint16) int64 {
		if e, ok := d.find(tag); ok {
			return t.num(e)
		}
		return 0
	}
	if tw, tl := num(tifftag.TileWidth), num(tifftag.TileLength); tw > 0 && tl > 0 {
		if e, ok := d.find(tifftag.TileOffsets); ok {
			d.blocks = int64(e.count)
			d.wantBlocks = ((d.width + tw - 1) / tw) * ((d.height + tl - 1) / tl)
		}
		return
	}
	if e, ok := d.find(tifftag.StripOffsets); ok {
		d.blocks = int64(e.count)
		if rps := num(tifftag.RowsPerStrip); rps > 0 {
			d.wantBlocks = (d.height + rps - 1) / rps
		}
	}
}

// dataEnd returns the largest offset+bytecount of d's strips (or tiles),
// relative to the block, or -1 when d has none. When there are more than
// maxStrips only the first and last are looked at. If the offset array
// itself lies past the end of the block, the end of that array is returned
// (the file is cut before its own directory data).
func (t *tiffBlock) dataEnd(d *ifd, offTag, cntTag uint16) int64 {
	oe, ok := d.find(offTag)
	if !ok || oe.count == 0 {
		return -1
	}
	if pos, n, ok := t.valueSpan(oe); ok && pos+n > t.end {
		return pos + n - t.base
	}
	ce, hasCnt := d.find(cntTag)
	ids := []uint32{0, oe.count - 1}
	if oe.count <= maxStrips {
		ids = make([]uint32, oe.count)
		for i := range ids {
			ids[i] = uint32(i)
		}
	}
	end := int64(-1)
	for _, i := range ids {
		o, ok := t.elem(oe, i)
		if !ok {
			return -1
		}
		c := int64(0)
		if hasCnt && i < ce.count {
			c, _ = t.elem(ce, i)
		}
		end = max(end, o+c)
	}
	return end
}

// elem returns element i of a BYTE/SHORT/LONG entry.
func (t *tiffBlock) elem(e entry, i uint32) (int64, bool) {
	sz := typeSize(e.typ)
	if i >= e.count || (e.typ != tifftag.TypeByte && e.typ != tifftag.TypeShort && e.typ != tifftag.TypeLong && e.typ != tifftag.TypeIFD) {
		return 0, false
	}
	pos, _, ok := t.valueAt(e)
	if !ok {
		return 0, false
	}
	b, err := t.src.bytes(pos+int64(i)*int64(sz), int64(sz))
	if err != nil {
		return 0, false
	}
	switch sz {
	case 1:
		return int64(b[0]), true
	case 2:
		return int64(t.bo.Uint16(b)), true
	}
	return int64(t.bo.Uint32(b)), true
}

// walk reads IFD0 and its chain, every SubIFD (recursively) and the Exif
// IFD of each, visiting no offset twice and at most maxIFDs IFDs.
func (t *tiffBlock) walk() (chain, subs []*ifd, exif *ifd) {
	seen := map[int64]bool{}
	budget := maxIFDs
	var visitSubs func(d *ifd, depth int)
	visitSubs = func(d *ifd, depth int) {
		if depth > maxSubDepth {
			return
		}
		for _, off := range d.subIFDs {
			if budget <= 0 || seen[off] {
				continue
			}
			seen[off] = true
			budget--
			s, ok := t.readIFD(off)
			if !ok {
				continue
			}
			s.sub = true
			subs = append(subs, s)
			visitSubs(s, depth+1)
		}
	}
	off := t.ifd0
	for i := 0; off != 0 && i < maxChain && budget > 0 && !seen[off]; i++ {
		seen[off] = true
		budget--
		d, ok := t.readIFD(off)
		if !ok {
			break
		}
		chain = append(chain, d)
		visitSubs(d, 1)
		off = d.next
	}
	for _, d := range append(append([]*ifd{}, chain...), subs...) {
		if d.exifIFD != 0 && exif == nil && !seen[d.exifIFD] && budget > 0 {
			seen[d.exifIFD] = true
			budget--
			if e, ok := t.readIFD(d.exifIFD); ok {
				exif = e
			}
		}
	}
	return chain, subs, exif
}

// isRawIFD reports whether d looks like raw sensor data rather than a
// preview: CFA or LinearRaw photometric (TIFF/EP, DNG), more than 8 bits per
// sample, or a vendor raw compression.
func (d *ifd) isRawIFD() bool {
	if d.width <= 0 || d.height <= 0 {
		return false
	}
	switch d.photometric {
	case 32803, 34892:
		return true
	}
	if d.bps > 8 {
		return true
	}
	switch d.compression {
	case 32767, 32769, 32770, 34713, 34316, 34826, 34828, 34830, 65000, 65535, 262, 99, 32867, 34892:
		return true
	}
	return false
}

// pickRaw chooses the full-resolution raw IFD the way LibRaw does for the
// cases it documents: in a DNG the IFD with NewSubFileType 0 (absent = 0)
// and raw photometric, largest area first; otherwise the largest IFD that
// isRawIFD.
func pickRaw(all []*ifd, dng bool) *ifd {
	var best *ifd
	area := func(d *ifd) int64 { return d.width * d.height }
	for _, d := range all {
		if !d.isRawIFD() {
			continue
		}
		if dng {
			if d.newSubFileType > 0 || (d.photometric != 32803 && d.photometric != 34892) {
				continue
			}
		}
		if best == nil || area(d) > area(best) {
			best = d
		}
	}
	return best
}
