package encode

import (
	"errors"
	"fmt"
	"image"
	"io"
)

// tiffCompressionLZW is TIFF Compression 5, LZW (TIFF 6.0 §13).
const tiffCompressionLZW = 5

// TIFF compression names, the values of TIFFOptions.Compression.
const (
	TIFFNone    = "none"
	TIFFDeflate = "deflate"
	TIFFLZW     = "lzw"
)

// TIFFOptions choose how TIFF8 and TIFF16RowsOptions store the pixels.
type TIFFOptions struct {
	// Compression is TIFFNone (or "": Compression 1), TIFFDeflate
	// (Compression 8, Adobe Deflate: each strip one zlib stream, level
	// DefaultTIFFDeflateLevel) or TIFFLZW (Compression 5, TIFF 6.0 §13:
	// each strip one LZW stream, MSB-first codes of 9 to 12 bits with the
	// early code-width change, starting with ClearCode and ending with
	// EndOfInformation).
	Compression string
	// Predictor applies horizontal differencing (Predictor 2, TIFF 6.0
	// §14) before compression: each sample (8- or 16-bit) is stored as its
	// difference, modulo 2^bits, from the same channel of the pixel to its
	// left. Without compression it is ignored (Predictor is not written).
	Predictor bool
}

func (o TIFFOptions) params(bytesPerSample int) (tiffParams, error) {
	p := tiffParams{bytesPerSample: bytesPerSample, predictor: o.Predictor}
	switch o.Compression {
	case "", TIFFNone:
		p.compression = tiffCompressionNone
	case TIFFDeflate:
		p.compression = tiffCompressionDeflate
	case TIFFLZW:
		p.compression = tiffCompressionLZW
	default:
		return p, fmt.Errorf("encode: unknown TIFF compression %q (none, deflate, lzw)", o.Compression)
	}
	return p, nil
}

// TIFF16RowsOptions is TIFF16Rows with the compression and predictor of
// opt (TIFF16Rows's deflate is TIFFOptions{TIFFDeflate, true}). The layout
// (IFDs first, or strips first on a seekable writer when compressed) is
// TIFF16's. Errors: an unknown compression, an empty image, a file of
// 4 GiB or more, and w's write errors.
func TIFF16RowsOptions(w io.Writer, src RowsRGB16, icc []byte, md Metadata, opt TIFFOptions) error {
	p, err := opt.params(2)
	if err != nil {
		return err
	}
	return writeTIFF(w, src, icc, md, p)
}

// TIFF8 writes img as an 8-bit-per-sample RGB TIFF (BitsPerSample
// 8,8,8), with the tags, ICC profile, EXIF and layout of TIFF16 and the
// compression of opt. Pixels are those the 8-bit encoders take (opaque
// RGB; 16-bit images rounded with round(v·255/65535), translucent pixels
// composited over black). Errors are TIFF16RowsOptions's.
func TIFF8(w io.Writer, img image.Image, icc []byte, md Metadata, opt TIFFOptions) error {
	p, err := opt.params(1)
	if err != nil {
		return err
	}
	m := rgb8Source(img)
	b := m.Bounds()
	var pix []byte
	var stride int
	switch s := m.(type) {
	case *image.RGBA:
		pix, stride = s.Pix, s.Stride
	case *image.NRGBA:
		pix, stride = s.Pix, s.Stride
	default:
		return errors.New("encode: internal error: rgb8Source type")
	}
	return writeTIFF(w, RowsRGB16{W: b.Dx(), H: b.Dy(), Row: func(y int, dst []byte) {
		src := pix[y*stride:]
		for x := range b.Dx() {
			dst[3*x], dst[3*x+1], dst[3*x+2] = src[4*x], src[4*x+1], src[4*x+2]
		}
	}}, icc, md, p)
}

// predictRow8 applies horizontal differencing (Predictor 2) to one row of
// 8-bit RGB samples, in place (right to left).
func predictRow8(row []byte) {
	for i := len(row) - 1; i >= 3; i-- {
		row[i] -= row[i-3]
	}
}

// LZW code values and limits of TIFF 6.0 §13.
const (
	lzwClear    = 256
	lzwEOI      = 257
	lzwFirst    = 258 // first code of a string-table entry
	lzwMinWidth = 9
	lzwMaxWidth = 12
	// lzwLastCode is the last entry added before a ClearCode: with the
	// early change a decoder would need 13 bits once code 4095 is added.
	lzwLastCode = 4094
	lzwSlots    = 1 << 13 // hash slots, twice the table size
)

// lzwEncoder compresses one strip at a time into out. The string table
// maps (prefix code, next byte) to a code through an open-addressing hash
// table; gen tags the slots of the current table so that a ClearCode
// empties it without clearing memory.
type lzwEncoder struct {
	keys  [lzwSlots]uint32 // prefix<<8 | byte
	codes [lzwSlots]uint16
	gens  [lzwSlots]uint32
	gen   uint32

	out   []byte
	acc   uint32 // pending bits, the oldest at the top
	nBits uint
	width uint
	next  int // code of the next entry
}

// encode returns the LZW stream of data (valid until the next call).
func (e *lzwEncoder) encode(data []byte) []byte {
	e.out, e.acc, e.nBits = e.out[:0], 0, 0
	e.reset()
	e.put(lzwClear)
	if len(data) == 0 {
		e.put(lzwEOI)
		return e.flush()
	}
	omega := uint32(data[0])
	for _, k := range data[1:] {
		key := omega<<8 | uint32(k)
		slot := e.find(key)
		if e.gens[slot] == e.gen {
			omega = uint32(e.codes[slot])
			continue
		}
		e.put(omega)
		e.gens[slot], e.keys[slot], e.codes[slot] = e.gen, key, uint16(e.next)
		e.added()
		omega = uint32(k)
	}
	e.put(omega)
	// The decoder adds an entry after this code too, and may widen its
	// codes before it reads EndOfInformation.
	if e.next < lzwLastCode {
		e.next++
		e.widen()
	}
	e.put(lzwEOI)
	return e.flush()
}

// added accounts for the entry just given code e.next: the code width
// grows one code early (when the next entry would need the wider code,
// TIFF 6.0 §13 "LZW Compression"), and after entry lzwLastCode a ClearCode
// starts a new table.
func (e *lzwEncoder) added() {
	if e.next == lzwLastCode {
		e.put(lzwClear)
		e.reset()
		return
	}
	e.next++
	e.widen()
}

// widen grows the code width when e.next, the code of the next entry (or
// the decoder's count after the last code), reaches 2^width: a decoder
// that has read the code just written widens at that point (x/image's
// tiff/lzw reader: hi+1 >= overflow).
func (e *lzwEncoder) widen() {
	if e.next >= 1<<e.width && e.width < lzwMaxWidth {
		e.width++
	}
}

func (e *lzwEncoder) reset() {
	e.gen++
	e.width = lzwMinWidth
	e.next = lzwFirst
}

// find returns the slot holding key in the current table, or the empty
// slot where it goes.
func (e *lzwEncoder) find(key uint32) int {
	h := int((key * 0x9E3779B1) >> (32 - 13))
	for e.gens[h] == e.gen && e.keys[h] != key {
		h = (h + 1) & (lzwSlots - 1)
	}
	return h
}

// put appends code in the current width, most significant bit first.
func (e *lzwEncoder) put(code uint32) {
	e.acc |= code << (32 - e.width - e.nBits)
	e.nBits += e.width
	for e.nBits >= 8 {
		e.out = append(e.out, byte(e.acc>>24))
		e.acc <<= 8
		e.nBits -= 8
	}
}

// flush writes the last partial byte, zero-padded.
func (e *lzwEncoder) flush() []byte {
	if e.nBits > 0 {
		e.out = append(e.out, byte(e.acc>>24))
		e.acc, e.nBits = 0, 0
	}
	return e.out
}
