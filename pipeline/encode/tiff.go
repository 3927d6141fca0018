package encode

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"image"
	"io"
	"math"
	"sort"

	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// TIFF Compression values (TIFF 6.0 §3; Adobe Deflate per the Adobe
// "TIFF Technical Note #2"/Supplement 2: one zlib stream, RFC 1950, per
// strip).
const (
	tiffCompressionNone    = 1
	tiffCompressionDeflate = 8
	tiffPredictorNone      = 1
	tiffPredictorHoriz     = 2
)

// TIFFStripBytes is the target size of one uncompressed TIFF16 strip:
// RowsPerStrip = max(1, TIFFStripBytes / (6·width)).
const TIFFStripBytes = 256 << 10

// DefaultTIFFDeflateLevel is the zlib level of TIFF16 with deflate. As for
// PNG16, zlib.BestSpeed: the low bytes of 16-bit photographic samples are
// mostly noise, and higher levels cost much more CPU for little gain.
const DefaultTIFFDeflateLevel = zlib.BestSpeed

// TIFF16 writes img as a baseline big-endian ("MM") TIFF 6.0 file: one IFD,
// PhotometricInterpretation 2 (RGB), SamplesPerPixel 3, BitsPerSample
// 16,16,16, PlanarConfiguration 1 (chunky), no alpha, in strips of about
// TIFFStripBytes uncompressed (RowsPerStrip = max(1, 262144 / (6·width))).
//
// With deflate false, Compression is 1 (none). With deflate true,
// Compression is 8 (Adobe Deflate: each strip one zlib stream, level
// DefaultTIFFDeflateLevel) and Predictor is 2 (TIFF 6.0 §14 horizontal
// differencing, applied per 16-bit sample: each sample is stored as its
// difference, modulo 2^16, from the same channel of the pixel to its left;
// the first pixel of each row is stored as is).
//
// Tags (sorted ascending, TIFF 6.0 §2): ImageWidth, ImageLength (LONG),
// BitsPerSample, Compression, PhotometricInterpretation, Make, Model,
// StripOffsets, Orientation = 1, SamplesPerPixel, RowsPerStrip,
// StripByteCounts, XResolution = YResolution = 72/1, PlanarConfiguration,
// ResolutionUnit = 2 (inch), Software, DateTime, Predictor (deflate only),
// XMLPacket (700, BYTE: the XMP packet, unless md.Strip), ExifIFD (34665,
// absent with md.Strip), GPSIFD (34853, when the raw has GPS tags) and,
// when icc is non-empty, InterColorProfile (34675, UNDEFINED, the profile
// bytes). The IFD0 attributes (Make, Model, Orientation, Software,
// DateTime, Artist, Copyright, ...) and the Exif and GPS sub-IFDs are
// exactly the entries of EXIF(md).
//
// Pixels: *image.NRGBA64 and *image.RGBA64 have their R, G, B samples copied
// as they are (for a translucent NRGBA64 that keeps the unassociated colour,
// for an RGBA64 it is the premultiplied colour, i.e. composited over black;
// this matches PNG16); any other image gives the RGB of its premultiplied
// RGBA64 colour. Conversion is done one strip at a time: no second copy of
// the image is made.
//
// Layout: without deflate, or when w is an io.Seeker whose Seek works, the
// file is streamed strip by strip with at most one strip buffered. Without
// deflate the IFD comes first (header, IFD0, Exif IFD, strips); with
// deflate and a seekable w, the strips come first and the IFDs follow,
// the header's IFD offset being patched by seeking back (w is left
// positioned at the end of the file). With deflate and a non-seekable w
// the compressed strips are held in memory until the IFD can be written
// first. Offsets are 32-bit: files of 4 GiB or more are refused.
func TIFF16(w io.Writer, img image.Image, icc []byte, md Metadata, deflate bool) error {
	b := img.Bounds()
	return TIFF16Rows(w, RowsRGB16{W: b.Dx(), H: b.Dy(), Row: func(y int, dst []byte) {
		rgb16Row(dst, img, b.Min.Y+y)
	}}, icc, md, deflate)
}

// RowsRGB16 is an opaque 16-bit RGB image of W×H pixels delivered one row at
// a time, for encoders that stream: Row(y, dst) fills dst (6·W bytes) with
// row y as big-endian R, G, B samples, the byte order TIFF16 stores.
type RowsRGB16 struct {
	W, H int
	Row  func(y int, dst []byte)
	// Bands, when its Fill is set, makes the same rows a band at a time:
	// the TIFF encoder then runs on its own goroutine beside the
	// caller's, which fills the bands (overlap.go), and Row is not called.
	Bands Bands
}

// TIFF16Rows is TIFF16 for an image produced row by row: src.Row is called
// once for each row, top to bottom, as the strips are written, so the whole
// 16-bit image is never held in memory (at most one strip, about
// TIFFStripBytes). With deflate and a writer that cannot seek, the
// compressed strips are held until the IFD is written, as for TIFF16.
func TIFF16Rows(w io.Writer, src RowsRGB16, icc []byte, md Metadata, deflate bool) error {
	p := tiffParams{bytesPerSample: 2, compression: tiffCompressionNone}
	if deflate {
		p.compression, p.predictor = tiffCompressionDeflate, true
	}
	return writeTIFF(w, src, icc, md, p)
}

// tiffParams are the layout choices of one TIFF file: 1 or 2 bytes per
// sample (BitsPerSample 8 or 16), the Compression value, and whether
// horizontal differencing (Predictor 2) precedes the compression.
type tiffParams struct {
	bytesPerSample int
	compression    uint16
	predictor      bool
}

func (p tiffParams) compressed() bool { return p.compression != tiffCompressionNone }

// writeTIFF writes the TIFF of src (rows of 3·bytesPerSample·W bytes) as
// TIFF16Rows describes, with p's sample size and compression.
func writeTIFF(w io.Writer, src RowsRGB16, icc []byte, md Metadata, p tiffParams) error {
	if src.Bands.Fill != nil && src.W > 0 && src.H > 0 {
		b := src.Bands
		src.Bands = Bands{}
		return overlapped(src.H, 3*p.bytesPerSample*src.W, b, func(row func(y int, dst []byte)) error {
			src.Row = row
			return writeTIFF(w, src, icc, md, p)
		})
	}
	if src.W <= 0 || src.H <= 0 {
		return errors.New("encode: empty image")
	}
	width, height := src.W, src.H
	rowBytes := 3 * p.bytesPerSample * width
	if width > math.MaxUint32/6 || height > math.MaxUint32 {
		return errors.New("encode: image too large for TIFF")
	}
	if !p.compressed() && uint64(rowBytes)*uint64(height)+uint64(len(icc))+(1<<16) > math.MaxUint32 {
		return errors.New("encode: uncompressed TIFF would exceed 4 GiB")
	}
	rps := max(1, TIFFStripBytes/rowBytes)
	nStrips := (height + rps - 1) / rps

	st := &tiffStrips{src: src, rowBytes: rowBytes, rps: rps, p: p}
	counts := make([]uint32, nStrips)

	if !p.compressed() {
		for i := range counts {
			counts[i] = uint32(st.rows(i) * rowBytes)
		}
		head, err := tiffIFDs(0, width, height, rps, counts, 0, icc, md, p)
		if err != nil {
			return err
		}
		return writeHeadFirst(w, head, nStrips, st.strip)
	}

	if ws, ok := w.(io.WriteSeeker); ok {
		if start, err := ws.Seek(0, io.SeekCurrent); err == nil {
			return tiffSeekable(ws, start, st, nStrips, width, height, icc, md, p)
		}
	}

	// Non-seekable writer with compression: compress every strip first.
	strips := make([][]byte, nStrips)
	var total uint64
	for i := range strips {
		s := st.strip(i)
		strips[i] = bytes.Clone(s)
		counts[i] = uint32(len(s))
		total += uint64(len(s))
	}
	if total+uint64(len(icc))+(1<<16) > math.MaxUint32 {
		return errors.New("encode: TIFF would exceed 4 GiB")
	}
	head, err := tiffIFDs(0, width, height, rps, counts, 0, icc, md, p)
	if err != nil {
		return err
	}
	return writeHeadFirst(w, head, nStrips, func(i int) []byte { return strips[i] })
}

// writeHeadFirst writes head (TIFF header and IFDs) and then strip(0) …
// strip(n−1), through one buffer.
func writeHeadFirst(w io.Writer, head []byte, n int, strip func(int) []byte) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	if _, err := bw.Write(head); err != nil {
		return err
	}
	for i := range n {
		if _, err := bw.Write(strip(i)); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// tiffSeekable writes header, compressed strips, then the IFDs, and patches
// the header's IFD0 offset.
func tiffSeekable(ws io.WriteSeeker, start int64, st *tiffStrips, nStrips, width, height int, icc []byte, md Metadata, p tiffParams) error {
	bw := bufio.NewWriterSize(ws, 1<<16)
	if _, err := bw.Write([]byte{'M', 'M', 0, 42, 0, 0, 0, 0}); err != nil {
		return err
	}
	counts := make([]uint32, nStrips)
	pos := uint64(8)
	for i := 0; i < nStrips; i++ {
		s := st.strip(i)
		counts[i] = uint32(len(s))
		pos += uint64(len(s))
		if pos+uint64(len(icc))+(1<<16) > math.MaxUint32 {
			return errors.New("encode: TIFF would exceed 4 GiB")
		}
		if _, err := bw.Write(s); err != nil {
			return err
		}
	}
	if pos%2 == 1 { // IFDs begin on a word boundary (TIFF 6.0 §2)
		if err := bw.WriteByte(0); err != nil {
			return err
		}
		pos++
	}
	ifds, err := tiffIFDs(int(pos), width, height, st.rps, counts, 8, icc, md, p)
	if err != nil {
		return err
	}
	if _, err := bw.Write(ifds); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	end, err := ws.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	if _, err := ws.Seek(start+4, io.SeekStart); err != nil {
		return err
	}
	if _, err := ws.Write(be.AppendUint32(nil, uint32(pos))); err != nil {
		return err
	}
	_, err = ws.Seek(end, io.SeekStart)
	return err
}

// tiffIFDs returns IFD0 and the Exif IFD with their out-of-line values,
// placed at file offset base. With base 0 the result starts with the 8-byte
// TIFF header and the strips are taken to follow it directly; otherwise the
// strips start at stripBase and the result is the IFDs alone.
func tiffIFDs(base, width, height, rps int, counts []uint32, stripBase int, icc []byte, md Metadata, p tiffParams) ([]byte, error) {
	// The same entries as EXIF(md) writes for JPEG, PNG and WebP.
	meta := mergedEntries(md)
	md0, exif, gps := meta.ifd0, meta.exif, meta.gps
	xmp := xmpOf(md)
	compression, predictor := p.compression, uint16(tiffPredictorNone)
	if p.predictor && p.compressed() {
		predictor = tiffPredictorHoriz
	}
	bps := byte(8 * p.bytesPerSample)
	longs := func(tag uint16, v []uint32) ifdEntry {
		d := make([]byte, 0, 4*len(v))
		for _, x := range v {
			d = be.AppendUint32(d, x)
		}
		return ifdEntry{tag, tifftag.TypeLong, uint32(len(v)), d}
	}
	build := func(offsets []uint32, exifOff, gpsOff uint32) ([]byte, int, int) {
		ifd0 := append([]ifdEntry(nil), md0...)
		ifd0 = append(ifd0,
			longEntry(tifftag.ImageWidth, uint32(width)),
			longEntry(tifftag.ImageLength, uint32(height)),
			ifdEntry{tifftag.BitsPerSample, tifftag.TypeShort, 3, []byte{0, bps, 0, bps, 0, bps}},
			shortEntry(tifftag.Compression, compression),
			shortEntry(tifftag.PhotometricInterpretation, 2),
			longs(tifftag.StripOffsets, offsets),
			shortEntry(tifftag.SamplesPerPixel, 3),
			longEntry(tifftag.RowsPerStrip, uint32(rps)),
			longs(tifftag.StripByteCounts, counts),
			rationalEntry(tifftag.XResolution, 72, 1),
			rationalEntry(tifftag.YResolution, 72, 1),
			shortEntry(tifftag.PlanarConfiguration, 1),
			shortEntry(tifftag.ResolutionUnit, 2),
		)
		if len(exif) > 0 {
			ifd0 = append(ifd0, longEntry(tifftag.ExifIFD, exifOff))
		}
		if len(gps) > 0 {
			ifd0 = append(ifd0, longEntry(tifftag.GPSIFD, gpsOff))
		}
		if len(xmp) > 0 {
			ifd0 = append(ifd0, ifdEntry{tifftag.XMLPacket, tifftag.TypeByte, uint32(len(xmp)), xmp})
		}
		if p.compressed() {
			ifd0 = append(ifd0, shortEntry(tifftag.Predictor, predictor))
		}
		if len(icc) > 0 {
			ifd0 = append(ifd0, ifdEntry{tifftag.InterColorProfile, tifftag.TypeUndefined, uint32(len(icc)), icc})
		}
		sort.Slice(ifd0, func(i, j int) bool { return ifd0[i].tag < ifd0[j].tag })
		var out []byte
		if base == 0 {
			out = []byte{'M', 'M', 0, 42, 0, 0, 0, 8}
		}
		out, _ = appendIFDAt(out, base, ifd0, 0)
		exifAt, gpsAt := 0, 0
		if len(exif) > 0 {
			exifAt = base + len(out)
			out, _ = appendIFDAt(out, base, exif, 0)
		}
		if len(gps) > 0 {
			gpsAt = base + len(out)
			out, _ = appendIFDAt(out, base, gps, 0)
		}
		return out, exifAt, gpsAt
	}
	// First pass with placeholder offsets to learn the layout (sizes do not
	// depend on the values), then the real thing.
	offsets := make([]uint32, len(counts))
	trial, exifAt, gpsAt := build(offsets, 0, 0)
	if base == 0 {
		stripBase = len(trial)
	}
	end := uint64(stripBase) + sum32(counts) // file size, IFDs first
	if base != 0 {
		end = uint64(base) + uint64(len(trial)) // strips first
	}
	if end > math.MaxUint32 {
		return nil, errors.New("encode: TIFF would exceed 4 GiB")
	}
	off := uint32(stripBase)
	for i, c := range counts {
		offsets[i] = off
		off += c
	}
	out, _, _ := build(offsets, uint32(exifAt), uint32(gpsAt))
	if len(out) != len(trial) {
		return nil, fmt.Errorf("encode: internal error: TIFF IFD size changed (%d, %d)", len(trial), len(out))
	}
	return out, nil
}

func sum32(v []uint32) uint64 {
	var s uint64
	for _, x := range v {
		s += uint64(x)
	}
	return s
}

// tiffStrips produces the bytes of one strip at a time into a reused
// buffer: raw big-endian RGB rows, or, compressed, the rows (predicted
// when p.predictor) as one zlib stream or one LZW stream.
type tiffStrips struct {
	src      RowsRGB16
	rowBytes int
	rps      int
	p        tiffParams

	raw []byte
	z   bytes.Buffer
	zw  *zlib.Writer
	lzw *lzwEncoder
}

// rows returns the number of rows in strip i.
func (s *tiffStrips) rows(i int) int {
	return min(s.rps, s.src.H-i*s.rps)
}

// strip returns strip i; the slice is valid until the next call.
func (s *tiffStrips) strip(i int) []byte {
	n := s.rows(i)
	if cap(s.raw) < s.rps*s.rowBytes {
		s.raw = make([]byte, s.rps*s.rowBytes)
	}
	raw := s.raw[:n*s.rowBytes]
	for r := 0; r < n; r++ {
		row := raw[r*s.rowBytes : (r+1)*s.rowBytes]
		s.src.Row(i*s.rps+r, row)
		switch {
		case !s.p.predictor || !s.p.compressed():
		case s.p.bytesPerSample == 2:
			predictRow16(row)
		default:
			predictRow8(row)
		}
	}
	switch s.p.compression {
	case tiffCompressionNone:
		return raw
	case tiffCompressionLZW:
		if s.lzw == nil {
			s.lzw = &lzwEncoder{}
		}
		return s.lzw.encode(raw)
	}
	s.z.Reset()
	if s.zw == nil {
		s.zw, _ = zlib.NewWriterLevel(&s.z, DefaultTIFFDeflateLevel)
	} else {
		s.zw.Reset(&s.z)
	}
	s.zw.Write(raw) // writes to a bytes.Buffer do not fail
	s.zw.Close()
	return s.z.Bytes()
}

// predictRow16 applies TIFF horizontal differencing (Predictor 2) to one
// row of big-endian 16-bit RGB samples, in place (right to left).
func predictRow16(row []byte) {
	for i := len(row) - 2; i >= 6; i -= 2 {
		v := uint16(row[i])<<8 | uint16(row[i+1])
		l := uint16(row[i-6])<<8 | uint16(row[i-5])
		d := v - l
		row[i], row[i+1] = byte(d>>8), byte(d)
	}
}

// rgb16Row fills dst (6 bytes per pixel) with the big-endian R, G, B of
// row y of img.
func rgb16Row(dst []byte, img image.Image, y int) {
	b := img.Bounds()
	w := b.Dx()
	switch m := img.(type) {
	case *image.NRGBA64:
		copyRGB16(dst, m.Pix[m.PixOffset(b.Min.X, y):], w)
		return
	case *image.RGBA64:
		copyRGB16(dst, m.Pix[m.PixOffset(b.Min.X, y):], w)
		return
	case *image.RGBA:
		src := m.Pix[m.PixOffset(b.Min.X, y):]
		for x := 0; x < w; x++ {
			for c := 0; c < 3; c++ {
				v := src[4*x+c]
				dst[6*x+2*c], dst[6*x+2*c+1] = v, v // v·257
			}
		}
		return
	}
	for x := 0; x < w; x++ {
		r, g, bb, _ := img.At(b.Min.X+x, y).RGBA()
		d := dst[6*x : 6*x+6 : 6*x+6]
		d[0], d[1] = byte(r>>8), byte(r)
		d[2], d[3] = byte(g>>8), byte(g)
		d[4], d[5] = byte(bb>>8), byte(bb)
	}
}

// copyRGB16 copies w pixels of big-endian RGBA64 data (8 bytes per pixel)
// to RGB (6 bytes per pixel).
func copyRGB16(dst, src []byte, w int) {
	for x := 0; x < w; x++ {
		copy(dst[6*x:6*x+6], src[8*x:8*x+6])
	}
}
