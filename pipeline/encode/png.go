package encode

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"hash/crc32"
	"image"
	"io"
	"math"
	"runtime"
)

const pngSignature = "\x89PNG\r\n\x1a\n"

// DefaultPNGLevel is the zlib level PNG16 uses. zlib.BestSpeed is chosen
// because the low bytes of 16-bit photographic samples are mostly noise:
// on the 6 MP image of BenchmarkPNG16Levels, zlib.DefaultCompression takes
// about 1.7× the CPU time for a file only ~3.5 % smaller.
const DefaultPNGLevel = zlib.BestSpeed

// iccProfileName is the iCCP profile name (PNG 1.2 §4.2.2.4: 1–79 Latin-1
// characters, no leading/trailing/double spaces).
const iccProfileName = "ICC profile"

// idatChunkSize is the size of the IDAT chunks written.
const idatChunkSize = 1 << 20

// segmentBytes is the amount of filtered image data compressed as one
// independent deflate segment (see writeIDAT).
const segmentBytes = 1 << 20

// PNG16 encodes img as a 16-bit-per-channel RGB PNG (IHDR colour type 2,
// bit depth 16, no alpha, no interlace) with zlib level DefaultPNGLevel.
// Chunk order: IHDR; iCCP (when icc is non-empty; PNG 1.2 §4.2.2.4:
// profile name "ICC profile", NUL, compression method 0, zlib stream of
// icc), right after IHDR; eXIf (Extensions to the PNG 1.2 Specification
// 1.5.0 §3.7: the TIFF block of EXIF(md), starting "MM", without the
// "Exif\0\0" prefix; placed before IDAT, as some readers look only there);
// IDAT…; IEND.
//
// img should be an opaque *image.NRGBA64 or *image.RGBA64 (fast path: the
// samples are copied as-is, big-endian, alpha dropped — for a translucent
// RGBA64 that means composited over black, for NRGBA64 the unassociated
// colour is kept). Any other image.Image is accepted through its RGBA64
// (or At().RGBA()) colour, which is premultiplied. Rows use adaptive
// filtering: each row takes the filter type with the smallest sum of
// absolute (signed-byte) filtered values, the heuristic recommended by
// PNG 1.2 §9.6 ("Filter selection"). Filtering and compression run in
// parallel on GOMAXPROCS goroutines over bands of rows; the output does not
// depend on the number of goroutines.
func PNG16(w io.Writer, img image.Image, icc []byte, md Metadata) error {
	return PNG16Level(w, img, icc, md, DefaultPNGLevel)
}

// PNG16Level is PNG16 with an explicit zlib compression level
// (zlib.NoCompression … zlib.BestCompression, or zlib.DefaultCompression).
func PNG16Level(w io.Writer, img image.Image, icc []byte, md Metadata, level int) error {
	b := img.Bounds()
	if b.Empty() {
		return errors.New("encode: empty image")
	}
	if b.Dx() > math.MaxInt32 || b.Dy() > math.MaxInt32 {
		return errors.New("encode: image too large for PNG")
	}
	if level < zlib.HuffmanOnly || level > zlib.BestCompression {
		return fmt.Errorf("encode: invalid zlib level %d", level)
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	if _, err := io.WriteString(bw, pngSignature); err != nil {
		return err
	}
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(b.Dx()))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(b.Dy()))
	ihdr[8] = 16 // bit depth
	ihdr[9] = 2  // colour type: truecolour
	// compression 0, filter method 0, no interlace
	if err := writeChunk(bw, "IHDR", ihdr[:]); err != nil {
		return err
	}
	if len(icc) > 0 {
		var z bytes.Buffer
		z.WriteString(iccProfileName)
		z.Write([]byte{0, 0}) // name terminator, compression method 0
		zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
		zw.Write(icc)
		if err := zw.Close(); err != nil {
			return err
		}
		if err := writeChunk(bw, "iCCP", z.Bytes()); err != nil {
			return err
		}
	}
	if err := writeChunk(bw, "eXIf", EXIF(md)); err != nil {
		return err
	}
	if err := writeIDAT(bw, img, level, runtime.GOMAXPROCS(0)); err != nil {
		return err
	}
	if err := writeChunk(bw, "IEND", nil); err != nil {
		return err
	}
	return bw.Flush()
}

// writeChunk writes a PNG chunk: length, type, data, CRC-32 (ISO 3309) of
// type and data (PNG 1.2 §3.2).
func writeChunk(w io.Writer, typ string, data []byte) error {
	if len(data) > math.MaxInt32 {
		return fmt.Errorf("encode: PNG chunk %s too large", typ)
	}
	var hdr [8]byte
	binary.BigEndian.PutUint32(hdr[:4], uint32(len(data)))
	copy(hdr[4:], typ)
	crc := crc32.NewIEEE()
	crc.Write(hdr[4:])
	crc.Write(data)
	var tail [4]byte
	binary.BigEndian.PutUint32(tail[:], crc.Sum32())
	for _, p := range [][]byte{hdr[:], data, tail[:]} {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// writeIDAT writes the image data as a zlib stream (RFC 1950) split into
// IDAT chunks. The filtered scanlines are cut into segments of about
// segmentBytes whole rows, each compressed independently by one of
// `workers` goroutines into raw deflate (RFC 1951) ending with a sync flush
// (an empty stored block, which byte-aligns the output), the last one with
// the final block; their concatenation is one valid deflate stream (the
// technique of pigz). The Adler-32 of the whole stream is combined from the
// segments' checksums. Each segment starts with an empty LZ77 window; at
// 1 MB segments the files are no larger than image/png's single stream at
// the same level (BenchmarkPNG16Stdlib).
func writeIDAT(w io.Writer, img image.Image, level, workers int) error {
	b := img.Bounds()
	rowBytes := 1 + 6*b.Dx()
	rowsPerSeg := max(1, segmentBytes/rowBytes)
	nSeg := (b.Dy() + rowsPerSeg - 1) / rowsPerSeg
	workers = max(1, min(workers, nSeg))
	filter := level != zlib.NoCompression

	type result struct {
		data  []byte
		adler uint32
		n     int
		err   error
	}
	results := make([]chan result, nSeg)
	for i := range results {
		results[i] = make(chan result, 1)
	}
	jobs := make(chan int)
	done := make(chan struct{})
	defer close(done)
	// At most 2·workers segments are in flight (being compressed or waiting
	// to be written), bounding memory to a few MB per worker.
	sem := make(chan struct{}, 2*workers)
	go func() {
		defer close(jobs)
		for s := 0; s < nSeg; s++ {
			select {
			case sem <- struct{}{}:
			case <-done:
				return
			}
			select {
			case jobs <- s:
			case <-done:
				return
			}
		}
	}()
	for k := 0; k < workers; k++ {
		go func() {
			var buf bytes.Buffer
			fw, err := flate.NewWriter(&buf, level)
			rows := newRowFilter(b.Dx())
			for s := range jobs {
				if err != nil {
					results[s] <- result{err: err}
					continue
				}
				buf.Reset()
				fw.Reset(&buf)
				y0 := b.Min.Y + s*rowsPerSeg
				y1 := min(b.Max.Y, y0+rowsPerSeg)
				rows.start(img, y0)
				ad := adler32.New()
				for y := y0; y < y1; y++ {
					line := rows.next(img, y, filter)
					ad.Write(line)
					fw.Write(line) // writes to a bytes.Buffer cannot fail
				}
				var ferr error
				if s == nSeg-1 {
					ferr = fw.Close()
				} else {
					ferr = fw.Flush()
				}
				results[s] <- result{data: bytes.Clone(buf.Bytes()), adler: ad.Sum32(), n: (y1 - y0) * rowBytes, err: ferr}
			}
		}()
	}

	cw := &idatWriter{w: w, buf: make([]byte, 0, idatChunkSize)}
	if _, err := cw.Write(zlibHeader(level)); err != nil {
		return err
	}
	adler := uint32(1)
	for s := 0; s < nSeg; s++ {
		r := <-results[s]
		<-sem
		if r.err != nil {
			return r.err
		}
		adler = adler32Combine(adler, r.adler, r.n)
		if _, err := cw.Write(r.data); err != nil {
			return err
		}
	}
	if _, err := cw.Write(binary.BigEndian.AppendUint32(nil, adler)); err != nil {
		return err
	}
	return cw.flush()
}

// zlibHeader returns the 2-byte zlib header (RFC 1950 §2.2): CM = 8
// (deflate), CINFO = 7 (32 KB window), FLEVEL from the level as in
// compress/zlib, FCHECK making the header a multiple of 31.
func zlibHeader(level int) []byte {
	h := []byte{0x78, 0}
	switch level {
	case -2, 0, 1:
		h[1] = 0 << 6
	case 2, 3, 4, 5:
		h[1] = 1 << 6
	case 6, -1:
		h[1] = 2 << 6
	default:
		h[1] = 3 << 6
	}
	h[1] += uint8(31 - (uint16(h[0])<<8+uint16(h[1]))%31)
	return h
}

// adler32Combine returns the Adler-32 of the concatenation A‖B from
// adler1 = Adler-32(A), adler2 = Adler-32(B) and len2 = len(B), as zlib's
// adler32_combine does (RFC 1950 §8.2 definition: s1 = 1 + Σ bytes,
// s2 = Σ s1 mod 65521).
func adler32Combine(adler1, adler2 uint32, len2 int) uint32 {
	const base = 65521
	rem := uint64(len2 % base)
	s1 := uint64(adler1 & 0xFFFF)
	s2 := rem * s1 % base
	s1 += uint64(adler2&0xFFFF) + base - 1
	s2 += uint64(adler1>>16) + uint64(adler2>>16) + base - rem
	s1 %= base
	s2 %= base
	return uint32(s2<<16 | s1)
}

// idatWriter splits the zlib stream into IDAT chunks of idatChunkSize.
type idatWriter struct {
	w   io.Writer
	buf []byte
}

func (c *idatWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), cap(c.buf)-len(c.buf))
		c.buf = append(c.buf, p[:k]...)
		p = p[k:]
		if len(c.buf) == cap(c.buf) {
			if err := c.flush(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

func (c *idatWriter) flush() error {
	if len(c.buf) == 0 {
		return nil
	}
	err := writeChunk(c.w, "IDAT", c.buf)
	c.buf = c.buf[:0]
	return err
}

// rowFilter produces filtered scanlines (filter-type byte followed by
// 6·width bytes of big-endian R, G, B) for consecutive rows.
type rowFilter struct {
	cur, prev []byte // raw samples of the current and previous row
	line      []byte // filter type + filtered bytes
}

func newRowFilter(width int) *rowFilter {
	return &rowFilter{cur: make([]byte, 6*width), prev: make([]byte, 6*width), line: make([]byte, 1+6*width)}
}

// start prepares for row y: the previous row is row y−1, or zeros for the
// first row of the image (PNG 1.2 chapter 6).
func (f *rowFilter) start(img image.Image, y int) {
	if y > img.Bounds().Min.Y {
		loadRow(f.prev, img, y-1)
	} else {
		clear(f.prev)
	}
}

// next loads row y and returns its filtered scanline, valid until the next
// call.
func (f *rowFilter) next(img image.Image, y int, filter bool) []byte {
	loadRow(f.cur, img, y)
	ft := byte(ftNone)
	if filter {
		ft = chooseFilter(f.cur, f.prev, 6)
	}
	f.line[0] = ft
	applyFilter(f.line[1:], ft, f.cur, f.prev, 6)
	f.cur, f.prev = f.prev, f.cur
	return f.line
}

// loadRow fills dst with row y of img as big-endian 16-bit R, G, B.
func loadRow(dst []byte, img image.Image, y int) {
	b := img.Bounds()
	switch m := img.(type) {
	case *image.NRGBA64:
		copyRGB16(dst, m.Pix[m.PixOffset(b.Min.X, y):])
	case *image.RGBA64:
		copyRGB16(dst, m.Pix[m.PixOffset(b.Min.X, y):])
	case image.RGBA64Image:
		for x, i := b.Min.X, 0; x < b.Max.X; x, i = x+1, i+6 {
			c := m.RGBA64At(x, y)
			put3(dst[i:i+6:i+6], uint32(c.R), uint32(c.G), uint32(c.B))
		}
	default:
		for x, i := b.Min.X, 0; x < b.Max.X; x, i = x+1, i+6 {
			r, g, bb, _ := img.At(x, y).RGBA()
			put3(dst[i:i+6:i+6], r, g, bb)
		}
	}
}

func put3(d []byte, r, g, b uint32) {
	d[0], d[1] = byte(r>>8), byte(r)
	d[2], d[3] = byte(g>>8), byte(g)
	d[4], d[5] = byte(b>>8), byte(b)
}

// copyRGB16 copies R, G, B (6 bytes) of each 8-byte RGBA64 pixel of src.
func copyRGB16(dst, src []byte) {
	w := len(dst) / 6
	src = src[:8*w]
	for x := 0; x < w; x++ {
		s := src[8*x : 8*x+6 : 8*x+6]
		d := dst[6*x : 6*x+6 : 6*x+6]
		copy(d, s)
	}
}

// PNG filter types (PNG 1.2 chapter 6, filter method 0).
const (
	ftNone = iota
	ftSub
	ftUp
	ftAverage
	ftPaeth
)

// abs8 is |int8(v)|, branch-free.
func abs8(v byte) int {
	x := int(int8(v))
	m := x >> 63
	return (x ^ m) - m
}

func absInt(x int) int {
	m := x >> 63
	return (x ^ m) - m
}

// paeth is the Paeth predictor (PNG 1.2 chapter 6, filter type 4): the one of a (left), b (up),
// c (upper left) closest to a + b − c, ties resolved in the order a, b, c.
// Written with conditional moves instead of unpredictable branches.
// It is above the inlining budget, so the hot loops below repeat its body.
func paeth(a, b, c byte) byte {
	pa, pb := int(b)-int(c), int(a)-int(c)
	pc := pa + pb
	pa = absInt(pa)
	pb = absInt(pb)
	pc = absInt(pc)
	if pc < pb {
		pb, b = pc, c
	}
	if pa > pb {
		return b
	}
	return a
}

// chooseFilter returns the filter type whose output has the smallest sum of
// absolute values taken as signed bytes (ties: lowest type), for row cur
// above row prev with bpp bytes per pixel.
func chooseFilter(cur, prev []byte, bpp int) byte {
	n := len(cur)
	prev = prev[:n]
	var sNone, sSub, sUp, sAvg, sPae int
	for i := 0; i < bpp && i < n; i++ {
		x, b := cur[i], prev[i]
		sNone += abs8(x)
		sSub += abs8(x)
		sUp += abs8(x - b)
		sAvg += abs8(x - b/2)
		sPae += abs8(x - b) // a = c = 0: Paeth predicts b
	}
	if n > bpp {
		x, a := cur[bpp:n], cur[:n-bpp]
		b, c := prev[bpp:n], prev[:n-bpp]
		a, b, c = a[:len(x)], b[:len(x)], c[:len(x)]
		for i, xi := range x {
			ai, bi, ci := a[i], b[i], c[i]
			sNone += abs8(xi)
			sSub += abs8(xi - ai)
			sUp += abs8(xi - bi)
			sAvg += abs8(xi - byte((int(ai)+int(bi))>>1))
			// paeth(ai, bi, ci), inlined by hand.
			pa, pb := int(bi)-int(ci), int(ai)-int(ci)
			pc := absInt(pa + pb)
			pa, pb = absInt(pa), absInt(pb)
			pred, tbc := ai, bi
			if pc < pb {
				pb, tbc = pc, ci
			}
			if pa > pb {
				pred = tbc
			}
			sPae += abs8(xi - pred)
		}
	}
	best, bestSum := byte(ftNone), sNone
	for i, s := range [4]int{sSub, sUp, sAvg, sPae} {
		if s < bestSum {
			best, bestSum = byte(i+1), s
		}
	}
	return best
}

// applyFilter writes row cur filtered with type ft (PNG 1.2 chapter 6) into
// dst (len(dst) ≥ len(cur)); prev is the raw row above.
func applyFilter(dst []byte, ft byte, cur, prev []byte, bpp int) {
	n := len(cur)
	dst, prev = dst[:n], prev[:n]
	head := min(bpp, n)
	switch ft {
	case ftNone:
		copy(dst, cur)
		return
	case ftSub:
		copy(dst[:head], cur[:head])
	case ftUp:
		for i := 0; i < head; i++ {
			dst[i] = cur[i] - prev[i]
		}
	case ftAverage:
		for i := 0; i < head; i++ {
			dst[i] = cur[i] - prev[i]/2
		}
	case ftPaeth:
		for i := 0; i < head; i++ {
			dst[i] = cur[i] - prev[i]
		}
	}
	if n <= bpp {
		return
	}
	x, a := cur[bpp:n], cur[:n-bpp]
	b, c := prev[bpp:n], prev[:n-bpp]
	d := dst[bpp:n]
	a, b, c, d = a[:len(x)], b[:len(x)], c[:len(x)], d[:len(x)]
	switch ft {
	case ftSub:
		for i, xi := range x {
			d[i] = xi - a[i]
		}
	case ftUp:
		for i, xi := range x {
			d[i] = xi - b[i]
		}
	case ftAverage:
		for i, xi := range x {
			d[i] = xi - byte((int(a[i])+int(b[i]))>>1)
		}
	case ftPaeth:
		for i, xi := range x {
			// paeth(a[i], b[i], c[i]), inlined by hand.
			ai, bi, ci := a[i], b[i], c[i]
			pa, pb := int(bi)-int(ci), int(ai)-int(ci)
			pc := absInt(pa + pb)
			pa, pb = absInt(pa), absInt(pb)
			pred, tbc := ai, bi
			if pc < pb {
				pb, tbc = pc, ci
			}
			if pa > pb {
				pred = tbc
			}
			d[i] = xi - pred
		}
	}
}
