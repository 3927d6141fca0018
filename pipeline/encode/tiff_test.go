package encode

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"image"
	"image/color"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/rwcarlsen/goexif/exif"
	xtiff "golang.org/x/image/tiff"

	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// tiffEntry is one IFD entry of a parsed TIFF file, with its value bytes.
type tiffEntry struct {
	typ   uint16
	count uint32
	data  []byte
}

// parseTIFF parses a big-endian TIFF: IFD0 and, through tag 34665, the Exif
// IFD, checking ascending tags, word-aligned offsets and in-range values.
func parseTIFF(t *testing.T, b []byte) (ifd0, exifIFD map[uint16]tiffEntry) {
	t.Helper()
	if len(b) < 8 || string(b[:4]) != "MM\x00*" {
		t.Fatalf("bad TIFF header % x", b[:min(8, len(b))])
	}
	read := func(off uint32) map[uint16]tiffEntry {
		if off%2 != 0 || int(off)+2 > len(b) {
			t.Fatalf("IFD offset %d (file %d bytes)", off, len(b))
		}
		n := int(binary.BigEndian.Uint16(b[off:]))
		m := map[uint16]tiffEntry{}
		prev := -1
		for i := 0; i < n; i++ {
			e := b[int(off)+2+12*i:]
			tag, typ, count := binary.BigEndian.Uint16(e), binary.BigEndian.Uint16(e[2:]), binary.BigEndian.Uint32(e[4:])
			if int(tag) <= prev {
				t.Errorf("tags not ascending: %d after %d", tag, prev)
			}
			prev = int(tag)
			size := map[uint16]uint32{tifftag.TypeASCII: 1, tifftag.TypeShort: 2, tifftag.TypeLong: 4, tifftag.TypeRational: 8, tifftag.TypeUndefined: 1}[typ] * count
			if size == 0 {
				t.Fatalf("tag %d: type %d count %d", tag, typ, count)
			}
			data := e[8 : 8+min(size, 4)]
			if size > 4 {
				v := binary.BigEndian.Uint32(e[8:])
				if v%2 != 0 || uint64(v)+uint64(size) > uint64(len(b)) {
					t.Fatalf("tag %d: value at %d size %d (file %d)", tag, v, size, len(b))
				}
				data = b[v : v+size]
			}
			m[tag] = tiffEntry{typ, count, data}
		}
		if next := binary.BigEndian.Uint32(b[int(off)+2+12*n:]); next != 0 {
			t.Errorf("next IFD %d, want 0", next)
		}
		return m
	}
	ifd0 = read(binary.BigEndian.Uint32(b[4:]))
	e, ok := ifd0[tifftag.ExifIFD]
	if !ok || e.typ != tifftag.TypeLong {
		t.Fatalf("no ExifIFD pointer: %+v", e)
	}
	return ifd0, read(binary.BigEndian.Uint32(e.data))
}

// tiffValues returns the SHORT or LONG values of an entry.
func tiffValues(t *testing.T, e tiffEntry) []uint32 {
	t.Helper()
	var v []uint32
	for i := uint32(0); i < e.count; i++ {
		switch e.typ {
		case tifftag.TypeShort:
			v = append(v, uint32(binary.BigEndian.Uint16(e.data[2*i:])))
		case tifftag.TypeLong:
			v = append(v, binary.BigEndian.Uint32(e.data[4*i:]))
		default:
			t.Fatalf("type %d is not SHORT or LONG", e.typ)
		}
	}
	return v
}

func tiffValue(t *testing.T, ifd map[uint16]tiffEntry, tag uint16) uint32 {
	t.Helper()
	e, ok := ifd[tag]
	if !ok {
		t.Fatalf("tag %d missing", tag)
	}
	v := tiffValues(t, e)
	if len(v) != 1 {
		t.Fatalf("tag %d has %d values", tag, len(v))
	}
	return v[0]
}

func TestTIFF16RoundTrip(t *testing.T) {
	icc := srgbProfile(t)
	// 301 px wide: 1806-byte rows, 145 rows per strip, 3 strips (last short).
	src := gradient64(301, 400)
	for _, deflate := range []bool{false, true} {
		var buf bytes.Buffer
		if err := TIFF16(&buf, src, icc, testMeta, deflate); err != nil {
			t.Fatal(err)
		}
		out := buf.Bytes()
		dec, err := xtiff.Decode(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("deflate=%v: x/image/tiff: %v", deflate, err)
		}
		if _, ok := dec.(*image.RGBA64); !ok {
			t.Errorf("deflate=%v: decoded as %T, want *image.RGBA64", deflate, dec)
		}
		checkPixels16(t, src, dec)

		ifd0, exifIFD := parseTIFF(t, out)
		wantComp, wantPred := uint32(1), uint32(0)
		if deflate {
			wantComp, wantPred = 8, 2
		}
		for tag, want := range map[uint16]uint32{
			tifftag.ImageWidth: 301, tifftag.ImageLength: 400, tifftag.Compression: wantComp,
			tifftag.PhotometricInterpretation: 2, tifftag.SamplesPerPixel: 3,
			tifftag.PlanarConfiguration: 1, tifftag.Orientation: 1, tifftag.RowsPerStrip: 145,
			tifftag.ResolutionUnit: 2,
		} {
			if v := tiffValue(t, ifd0, tag); v != want {
				t.Errorf("deflate=%v: tag %d = %d, want %d", deflate, tag, v, want)
			}
		}
		if wantPred != 0 {
			if v := tiffValue(t, ifd0, tifftag.Predictor); v != wantPred {
				t.Errorf("Predictor = %d", v)
			}
		} else if _, ok := ifd0[tifftag.Predictor]; ok {
			t.Error("Predictor written without compression")
		}
		if bps := tiffValues(t, ifd0[tifftag.BitsPerSample]); len(bps) != 3 || bps[0] != 16 || bps[1] != 16 || bps[2] != 16 {
			t.Errorf("BitsPerSample %v", bps)
		}
		offs, counts := tiffValues(t, ifd0[tifftag.StripOffsets]), tiffValues(t, ifd0[tifftag.StripByteCounts])
		if len(offs) != 3 || len(counts) != 3 {
			t.Fatalf("%d strip offsets, %d counts, want 3", len(offs), len(counts))
		}
		for i := range offs {
			if uint64(offs[i])+uint64(counts[i]) > uint64(len(out)) {
				t.Fatalf("strip %d out of range", i)
			}
			rows := []int{145, 145, 110}[i]
			strip := out[offs[i] : offs[i]+counts[i]]
			if deflate {
				zr, err := zlib.NewReader(bytes.NewReader(strip))
				if err != nil {
					t.Fatal(err)
				}
				if strip, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			if len(strip) != rows*301*6 {
				t.Errorf("strip %d: %d bytes, want %d", i, len(strip), rows*301*6)
			}
		}
		e, ok := ifd0[tifftag.InterColorProfile]
		if !ok || e.typ != tifftag.TypeUndefined || !bytes.Equal(e.data, icc) {
			t.Errorf("InterColorProfile: present %v type %d, equal %v", ok, e.typ, bytes.Equal(e.data, icc))
		}
		if string(ifd0[tifftag.Make].data) != "FUJIFILM\x00" || string(exifIFD[tifftag.ExifVersion].data) != "0232" {
			t.Errorf("Make %q, ExifVersion %q", ifd0[tifftag.Make].data, exifIFD[tifftag.ExifVersion].data)
		}

		x, err := exif.Decode(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("goexif: %v", err)
		}
		checkTestMeta(t, x)
	}
}

// TestTIFF16Predictor checks the stored bytes of a deflated strip against
// a hand-computed horizontal difference (mod 2^16).
func TestTIFF16Predictor(t *testing.T) {
	src := image.NewNRGBA64(image.Rect(0, 0, 3, 1))
	src.SetNRGBA64(0, 0, color.NRGBA64{100, 65535, 7, 0xFFFF})
	src.SetNRGBA64(1, 0, color.NRGBA64{90, 0, 7, 0xFFFF})
	src.SetNRGBA64(2, 0, color.NRGBA64{300, 1, 65535, 0xFFFF})
	var buf bytes.Buffer
	if err := TIFF16(&buf, src, nil, Metadata{}, true); err != nil {
		t.Fatal(err)
	}
	ifd0, _ := parseTIFF(t, buf.Bytes())
	if _, ok := ifd0[tifftag.InterColorProfile]; ok {
		t.Error("InterColorProfile written without a profile")
	}
	off, n := tiffValue(t, ifd0, tifftag.StripOffsets), tiffValue(t, ifd0, tifftag.StripByteCounts)
	zr, err := zlib.NewReader(bytes.NewReader(buf.Bytes()[off : off+n]))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(zr)
	want := []uint16{100, 65535, 7, 65526, 1, 0, 210, 1, 65528}
	for i, w := range want {
		if v := binary.BigEndian.Uint16(raw[2*i:]); v != w {
			t.Errorf("sample %d = %d, want %d", i, v, w)
		}
	}
}

// TestTIFF16Gradient checks that a smooth 16-bit gradient keeps more than
// 256 distinct levels through both encodings.
func TestTIFF16Gradient(t *testing.T) {
	const w = 4096
	src := image.NewRGBA64(image.Rect(0, 0, w, 2))
	for x := 0; x < w; x++ {
		v := uint16(x * 16)
		src.SetRGBA64(x, 0, color.RGBA64{v, v / 2, 65535 - v, 0xFFFF})
		src.SetRGBA64(x, 1, color.RGBA64{v, v, v, 0xFFFF})
	}
	for _, deflate := range []bool{false, true} {
		var buf bytes.Buffer
		if err := TIFF16(&buf, src, nil, testMeta, deflate); err != nil {
			t.Fatal(err)
		}
		dec, err := xtiff.Decode(&buf)
		if err != nil {
			t.Fatal(err)
		}
		checkPixels16(t, src, dec)
		levels := map[uint32]bool{}
		for x := 0; x < w; x++ {
			r, _, _, _ := dec.At(x, 0).RGBA()
			levels[r] = true
		}
		if len(levels) <= 256 {
			t.Errorf("deflate=%v: only %d levels", deflate, len(levels))
		}
	}
}

func TestTIFF16InputTypes(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	rgba64 := image.NewRGBA64(image.Rect(0, 0, 40, 30))
	for i := range rgba64.Pix {
		rgba64.Pix[i] = byte(r.Intn(256))
	}
	for y := 0; y < 30; y++ { // keep it a valid premultiplied image
		for x := 0; x < 40; x++ {
			c := rgba64.RGBA64At(x, y)
			c.R, c.G, c.B = min(c.R, c.A), min(c.G, c.A), min(c.B, c.A)
			rgba64.SetRGBA64(x, y, c)
		}
	}
	translucent := gradient64(40, 30)
	translucent.Pix[7] = 0x10 // alpha of pixel 0 no longer 0xFFFF
	rgba8 := smoothRGBA(40, 30)
	gray16 := image.NewGray16(image.Rect(0, 0, 40, 30))
	for i := range gray16.Pix {
		gray16.Pix[i] = byte(r.Intn(256))
	}
	big := gradient64(100, 80)
	sub := big.SubImage(image.Rect(13, 7, 77, 61))
	for name, img := range map[string]image.Image{
		"RGBA64": rgba64, "NRGBA64 translucent": translucent, "RGBA": rgba8,
		"Gray16": gray16, "NRGBA64 sub-image": sub,
	} {
		for _, deflate := range []bool{false, true} {
			var buf bytes.Buffer
			if err := TIFF16(&buf, img, nil, Metadata{}, deflate); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			dec, err := xtiff.Decode(&buf)
			if err != nil {
				t.Fatalf("%s deflate=%v: %v", name, deflate, err)
			}
			t.Run(name, func(t *testing.T) { checkPixels16(t, img, dec) })
		}
	}
}

// TestTIFF16Seekable writes a deflated TIFF into a file after a prefix:
// the IFDs follow the strips and the header offset is patched in place.
func TestTIFF16Seekable(t *testing.T) {
	icc := srgbProfile(t)
	src := gradient64(301, 400)
	f, err := os.Create(filepath.Join(t.TempDir(), "x.tif"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("PREFIX")
	if err := TIFF16(f, src, icc, testMeta, true); err != nil {
		t.Fatal(err)
	}
	f.WriteString("END")
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if string(b[:6]) != "PREFIX" || string(b[len(b)-3:]) != "END" {
		t.Fatal("writer not left at the end of the TIFF")
	}
	out := b[6 : len(b)-3]
	if off := binary.BigEndian.Uint32(out[4:]); off <= 8 || int(off) > len(out)-100 {
		t.Errorf("IFD0 at %d of %d: want after the strips", off, len(out))
	}
	dec, err := xtiff.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	checkPixels16(t, src, dec)
	ifd0, _ := parseTIFF(t, out)
	if !bytes.Equal(ifd0[tifftag.InterColorProfile].data, icc) {
		t.Error("ICC profile differs")
	}
	x, err := exif.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	checkTestMeta(t, x)

	// Same content as the buffered layout, up to a word-alignment byte.
	var buf bytes.Buffer
	if err := TIFF16(&buf, src, icc, testMeta, true); err != nil {
		t.Fatal(err)
	}
	if d := len(out) - buf.Len(); d != 0 && d != 1 { // 1: pad byte before the IFDs
		t.Errorf("seekable file %d bytes, buffered %d", len(out), buf.Len())
	}
}

func TestTIFF16Errors(t *testing.T) {
	if err := TIFF16(io.Discard, image.NewNRGBA64(image.Rect(0, 0, 0, 5)), nil, Metadata{}, false); err == nil {
		t.Error("empty image accepted")
	}
	src := gradient64(300, 200)
	for _, deflate := range []bool{false, true} {
		for _, n := range []int{0, 100, 50000} {
			if err := TIFF16(&failWriter{n: n}, src, nil, testMeta, deflate); err == nil {
				t.Errorf("deflate=%v: write error after %d bytes not reported", deflate, n)
			}
		}
	}
}

// BenchmarkTIFF16 encodes a 6000×4000 (24 MP) 16-bit image; MB/s counts
// the 144 MB of RGB16 samples.
func BenchmarkTIFF16_24MP(b *testing.B) {
	src := benchImage64(6000, 4000)
	for _, deflate := range []bool{false, true} {
		name := "none"
		if deflate {
			name = "deflate"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(6000 * 4000 * 6)
			var n countWriter
			for b.Loop() {
				n = 0
				if err := TIFF16(&n, src, nil, testMeta, deflate); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)/1e6, "MB/file")
		})
	}
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

// TestTIFF16Rows: a file streamed from a row function decodes to the same
// pixels as the image it describes, with and without deflate, seekable or
// not, and the row function is called exactly once per row, top to bottom.
func TestTIFF16Rows(t *testing.T) {
	src := gradient64(301, 400) // 3 strips, the last short
	b := src.Bounds()
	for _, deflate := range []bool{false, true} {
		for _, seekable := range []bool{false, true} {
			next := 0
			rows := RowsRGB16{W: b.Dx(), H: b.Dy(), Row: func(y int, dst []byte) {
				if y != next {
					t.Fatalf("row %d asked for, want %d", y, next)
				}
				next++
				for x := range b.Dx() {
					c := src.NRGBA64At(x, y)
					for i, v := range []uint16{c.R, c.G, c.B} {
						dst[6*x+2*i], dst[6*x+2*i+1] = byte(v>>8), byte(v)
					}
				}
			}}
			var data []byte
			if seekable {
				f, err := os.CreateTemp(t.TempDir(), "rows")
				if err != nil {
					t.Fatal(err)
				}
				if err := TIFF16Rows(f, rows, nil, testMeta, deflate); err != nil {
					t.Fatal(err)
				}
				f.Close()
				if data, err = os.ReadFile(f.Name()); err != nil {
					t.Fatal(err)
				}
			} else {
				var buf bytes.Buffer
				if err := TIFF16Rows(&buf, rows, nil, testMeta, deflate); err != nil {
					t.Fatal(err)
				}
				data = buf.Bytes()
			}
			if next != b.Dy() {
				t.Fatalf("deflate=%v seekable=%v: %d rows asked for, want %d", deflate, seekable, next, b.Dy())
			}
			dec, err := xtiff.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("deflate=%v seekable=%v: %v", deflate, seekable, err)
			}
			checkPixels16(t, src, dec)
		}
	}
	if err := TIFF16Rows(io.Discard, RowsRGB16{W: 0, H: 3, Row: func(int, []byte) {}}, nil, Metadata{}, false); err == nil {
		t.Error("empty image accepted")
	}
}
