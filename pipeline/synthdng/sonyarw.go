package synthdng

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"

	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// ARWSpec describes a synthetic Sony lossless-compressed ARW (the
// "Lossless Compressed RAW" of recent Sony bodies) as LibRaw 0.21 reads it
// (sony_ljpeg_load_raw): one TIFF IFD with Make "SONY", Compression 7,
// PhotometricInterpretation 32803 (CFA, RGGB), and the Bayer mosaic cut into
// tiles, each a lossless JPEG (ITU T.81 process 14, SOF3, predictor 1) of
// TileWidth/2 × TileLength/2 samples with four components, one per site of
// a 2×2 Bayer block (top left, top right, bottom left, bottom right).
type ARWSpec struct {
	// Width and Height are the mosaic size in pixels; TileWidth and
	// TileLength the tile size (all even; tiles may overhang the right and
	// bottom edges).
	Width, Height, TileWidth, TileLength int
	// Bits is the sample precision, 12..16; BlackLevel and WhiteLevel
	// are in raw units (the levels LibRaw applies for the Model, which
	// the caller reads back with LibRaw).
	Bits                   int
	BlackLevel, WhiteLevel int
	// Model goes to IFD0 Model (272); Make is always "SONY".
	Model string
	// Scene gives the linear camera-RGB value (0..1 of WhiteLevel−BlackLevel)
	// of channel ch (0 R, 1 G, 2 B) at stored pixel (x, y); each site
	// takes the channel of its CFA colour (CFAColor).
	Scene func(x, y, ch int) float64
}

// WriteSonyLosslessARW writes spec to path. Errors: invalid sizes or
// precision, and those of writing the file.
func WriteSonyLosslessARW(path string, s ARWSpec) error {
	if err := s.check(); err != nil {
		return err
	}
	if err := os.WriteFile(path, arwFile(s, s.tiles()), 0o644); err != nil {
		return fmt.Errorf("synthdng: %w", err)
	}
	return nil
}

// check refuses sizes that are not positive and even, and a precision or
// levels LibRaw's decoder does not take.
func (s ARWSpec) check() error {
	if s.Width <= 0 || s.Height <= 0 || s.TileWidth <= 0 || s.TileLength <= 0 ||
		s.Width%2 != 0 || s.Height%2 != 0 || s.TileWidth%2 != 0 || s.TileLength%2 != 0 {
		return fmt.Errorf("synthdng: ARW sizes must be positive and even: %d×%d, tiles %d×%d", s.Width, s.Height, s.TileWidth, s.TileLength)
	}
	if s.Bits < 12 || s.Bits > 16 || s.WhiteLevel <= s.BlackLevel || s.WhiteLevel >= 1<<s.Bits {
		return fmt.Errorf("synthdng: ARW precision %d bits with levels %d..%d", s.Bits, s.BlackLevel, s.WhiteLevel)
	}
	return nil
}

// tiles encodes the mosaic's tiles in row-major tile order, each a lossless
// JPEG (ljpegTile); sites past the mosaic's edge hold the black level.
func (s ARWSpec) tiles() [][]byte {
	raw := func(x, y int) int {
		if x >= s.Width || y >= s.Height {
			return s.BlackLevel
		}
		v := s.Scene(x, y, CFAColor(x, y))
		r := float64(s.BlackLevel) + math.Max(0, math.Min(1, v))*float64(s.WhiteLevel-s.BlackLevel)
		return int(math.Round(r))
	}
	var tiles [][]byte
	for ty := 0; ty < s.Height; ty += s.TileLength {
		for tx := 0; tx < s.Width; tx += s.TileWidth {
			tiles = append(tiles, ljpegTile(s, tx, ty, raw))
		}
	}
	return tiles
}

// arwEntry is one entry of the ARW's IFD: numeric values written as SHORT
// or LONG by typ (vals), or bytes as they are (data, for ASCII and BYTE).
type arwEntry struct {
	tag, typ uint16
	vals     []uint32
	data     []byte
}

// value is the entry's value as it is stored, little-endian.
func (e arwEntry) value() []byte {
	if e.data != nil {
		return e.data
	}
	var v []byte
	for _, x := range e.vals {
		if e.typ == tifftag.TypeShort {
			v = binary.LittleEndian.AppendUint16(v, uint16(x))
		} else {
			v = binary.LittleEndian.AppendUint32(v, x)
		}
	}
	return v
}

// count is the entry's TIFF count: bytes of data, or values.
func (e arwEntry) count() int {
	if e.data != nil {
		return len(e.data)
	}
	return len(e.vals)
}

// arwEntries are the IFD of s with tiles (tag order). StripOffsets and
// TileOffsets are left zero for arwFile to fill in.
func arwEntries(s ARWSpec, tiles [][]byte) []arwEntry {
	counts := make([]uint32, len(tiles))
	for i, t := range tiles {
		counts[i] = uint32(len(t))
	}
	return []arwEntry{
		{tag: tifftag.NewSubFileType, typ: tifftag.TypeLong, vals: []uint32{0}},
		{tag: tifftag.ImageWidth, typ: tifftag.TypeLong, vals: []uint32{uint32(s.Width)}},
		{tag: tifftag.ImageLength, typ: tifftag.TypeLong, vals: []uint32{uint32(s.Height)}},
		{tag: tifftag.Compression, typ: tifftag.TypeShort, vals: []uint32{7}},
		{tag: tifftag.PhotometricInterpretation, typ: tifftag.TypeShort, vals: []uint32{32803}},
		{tag: tifftag.Make, typ: tifftag.TypeASCII, data: []byte("SONY\x00")},
		{tag: tifftag.Model, typ: tifftag.TypeASCII, data: []byte(s.Model + "\x00")},
		{tag: tifftag.StripOffsets, typ: tifftag.TypeLong, vals: []uint32{0}}, // tile 0
		{tag: tifftag.SamplesPerPixel, typ: tifftag.TypeShort, vals: []uint32{1}},
		{tag: tifftag.StripByteCounts, typ: tifftag.TypeLong, vals: []uint32{counts[0]}},
		{tag: tifftag.TileWidth, typ: tifftag.TypeShort, vals: []uint32{uint32(s.TileWidth)}},
		{tag: tifftag.TileLength, typ: tifftag.TypeShort, vals: []uint32{uint32(s.TileLength)}},
		{tag: tifftag.TileOffsets, typ: tifftag.TypeLong, vals: make([]uint32, len(tiles))},
		{tag: tifftag.TileByteCounts, typ: tifftag.TypeLong, vals: counts},
		{tag: tifftag.CFARepeatPatternDim, typ: tifftag.TypeShort, vals: []uint32{2, 2}},
		{tag: tifftag.CFAPattern, typ: tifftag.TypeByte, data: []byte{0, 1, 1, 2}},
	}
}

// arwFile lays out the little-endian TIFF of s: the header, the one IFD,
// the values that do not fit in an entry (each padded to an even length),
// then the tiles, whose offsets it fills in.
func arwFile(s ARWSpec, tiles [][]byte) []byte {
	entries := arwEntries(s, tiles)
	le := binary.LittleEndian
	ifdSize := 2 + 12*len(entries) + 4
	next := 8 + ifdSize // where the out-of-line values start
	extra := next
	for _, e := range entries {
		if n := len(e.value()); n > 4 {
			extra += (n + 1) &^ 1
		}
	}
	off := uint32(extra)
	for i, t := range tiles {
		arwEntryOf(entries, tifftag.TileOffsets).vals[i] = off
		if i == 0 {
			arwEntryOf(entries, tifftag.StripOffsets).vals[0] = off
		}
		off += uint32(len(t))
	}
	ifd := make([]byte, ifdSize)
	le.PutUint16(ifd, uint16(len(entries)))
	var out []byte
	for i, e := range entries {
		p := ifd[2+12*i:]
		le.PutUint16(p, e.tag)
		le.PutUint16(p[2:], e.typ)
		le.PutUint32(p[4:], uint32(e.count()))
		v := e.value()
		if len(v) <= 4 {
			copy(p[8:12], v)
			continue
		}
		le.PutUint32(p[8:], uint32(next+len(out)))
		out = append(out, v...)
		if len(v)%2 == 1 {
			out = append(out, 0)
		}
	}
	buf := make([]byte, 0, off)
	buf = append(buf, 'I', 'I', 42, 0, 8, 0, 0, 0)
	buf = append(buf, ifd...)
	buf = append(buf, out...)
	for _, t := range tiles {
		buf = append(buf, t...)
	}
	return buf
}

// arwEntryOf is the entry of tag in entries.
func arwEntryOf(entries []arwEntry, tag uint16) *arwEntry {
	for i := range entries {
		if entries[i].tag == tag {
			return &entries[i]
		}
	}
	panic(fmt.Sprintf("synthdng: no ARW entry %d", tag))
}

// ljpegTile encodes the tile at (tx, ty) as a lossless JPEG (ljpegEncode)
// of four components: sample (jx, jy) of component c is raw site
// (tx+2jx+c&1, ty+2jy+c>>1).
func ljpegTile(s ARWSpec, tx, ty int, raw func(x, y int) int) []byte {
	return ljpegEncode(s.Bits, s.TileWidth/2, s.TileLength/2, 4, func(jx, jy, c int) int {
		return raw(tx+2*jx+c&1, ty+2*jy+c>>1)
	})
}
