package encode

import (
	"bytes"
	"image"
	"image/color"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	xtiff "golang.org/x/image/tiff"

	"github.com/rawbatch/rawbatch/internal/testtool"
	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// onlyWriter hides a bytes.Buffer's other methods (no Seek): the path
// that holds compressed strips until the IFD is written.
type onlyWriter struct{ w io.Writer }

func (o onlyWriter) Write(p []byte) (int, error) { return o.w.Write(p) }

// seekBuffer is an in-memory io.WriteSeeker: the strips-first path.
type seekBuffer struct {
	b   []byte
	pos int
}

func (s *seekBuffer) Write(p []byte) (int, error) {
	if need := s.pos + len(p); need > len(s.b) {
		s.b = append(s.b, make([]byte, need-len(s.b))...)
	}
	copy(s.b[s.pos:], p)
	s.pos += len(p)
	return len(p), nil
}

func (s *seekBuffer) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		s.pos = int(off)
	case io.SeekCurrent:
		s.pos += int(off)
	case io.SeekEnd:
		s.pos = len(s.b) + int(off)
	}
	return int64(s.pos), nil
}

func noise8(w, h int) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewSource(9))
	for y := range h {
		for x := range w {
			m.SetRGBA(x, y, color.RGBA{uint8(x * 255 / (w - 1)), uint8(r.Intn(256)), uint8(x + 3*y), 255})
		}
	}
	return m
}

// checkPixels8 requires dec to hold src's R, G, B (max difference 0 on
// 8-bit levels: the formats are lossless).
func checkPixels8(t *testing.T, what string, src *image.RGBA, dec image.Image) {
	t.Helper()
	if dec.Bounds().Size() != src.Bounds().Size() {
		t.Fatalf("%s: decoded %v, want %v", what, dec.Bounds(), src.Bounds())
	}
	maxDiff := 0
	for y := range src.Bounds().Dy() {
		for x := range src.Bounds().Dx() {
			r, g, b, _ := dec.At(x, y).RGBA()
			c := src.RGBAAt(x, y)
			for i, v := range []uint32{r >> 8, g >> 8, b >> 8} {
				d := int(v) - int([]uint8{c.R, c.G, c.B}[i])
				maxDiff = max(maxDiff, d, -d)
			}
		}
	}
	if maxDiff > 0 {
		t.Errorf("%s: max difference %d levels, want 0", what, maxDiff)
	}
}

var tiffOptionCases = []TIFFOptions{
	{}, {Compression: TIFFNone}, {Compression: TIFFDeflate}, {Compression: TIFFDeflate, Predictor: true},
	{Compression: TIFFLZW}, {Compression: TIFFLZW, Predictor: true},
}

// 8- and 16-bit TIFFs with each compression and predictor decode, through
// x/image/tiff, to the pixels written, on seekable and non-seekable
// writers; the Compression, Predictor and BitsPerSample tags say what was
// done.
func TestTIFFOptionsRoundTrip(t *testing.T) {
	icc := srgbProfile(t)
	src16 := gradient64(301, 400) // 3 strips, the last short
	src8 := noise8(301, 1000)     // 2 strips of 8-bit rows
	for _, opt := range tiffOptionCases {
		for _, seek := range []bool{false, true} {
			for _, bits := range []int{8, 16} {
				what := opt.Compression + map[bool]string{true: "+predictor"}[opt.Predictor] + map[bool]string{true: " seekable"}[seek] + map[int]string{8: " 8-bit", 16: " 16-bit"}[bits]
				var out []byte
				var w io.Writer
				var buf bytes.Buffer
				sb := &seekBuffer{}
				if seek {
					w = sb
				} else {
					w = onlyWriter{&buf}
				}
				var err error
				if bits == 8 {
					err = TIFF8(w, src8, icc, testMeta, opt)
				} else {
					b := src16.Bounds()
					err = TIFF16RowsOptions(w, RowsRGB16{W: b.Dx(), H: b.Dy(), Row: func(y int, dst []byte) { rgb16Row(dst, src16, y) }}, icc, testMeta, opt)
				}
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if seek {
					out = sb.b
				} else {
					out = buf.Bytes()
				}
				dec, err := xtiff.Decode(bytes.NewReader(out))
				if err != nil {
					t.Fatalf("%s: x/image/tiff: %v", what, err)
				}
				if bits == 8 {
					checkPixels8(t, what, src8, dec)
				} else {
					checkPixels16(t, src16, dec)
				}
				ifd0, _ := parseTIFF(t, out)
				comp, pred := uint32(1), uint32(0)
				switch opt.Compression {
				case TIFFDeflate:
					comp, pred = 8, 1
				case TIFFLZW:
					comp, pred = 5, 1
				}
				if opt.Predictor && comp != 1 {
					pred = 2
				}
				if v := tiffValue(t, ifd0, tifftag.Compression); v != comp {
					t.Errorf("%s: Compression %d, want %d", what, v, comp)
				}
				if _, ok := ifd0[tifftag.Predictor]; ok != (pred != 0) {
					t.Errorf("%s: Predictor present %v, want %v", what, ok, pred != 0)
				} else if ok && tiffValue(t, ifd0, tifftag.Predictor) != pred {
					t.Errorf("%s: Predictor %d, want %d", what, tiffValue(t, ifd0, tifftag.Predictor), pred)
				}
				if bps := tiffValues(t, ifd0[tifftag.BitsPerSample]); len(bps) != 3 || bps[0] != uint32(bits) {
					t.Errorf("%s: BitsPerSample %v, want %d×3", what, bps, bits)
				}
			}
		}
	}
}

// LZW with the predictor makes a smooth 16-bit image much smaller than
// uncompressed (measured, not a guarantee of the format: the bound is
// loose).
func TestTIFFLZWCompresses(t *testing.T) {
	m := image.NewNRGBA64(image.Rect(0, 0, 512, 256))
	for y := range 256 {
		for x := range 512 {
			m.SetNRGBA64(x, y, color.NRGBA64{uint16(x * 128), uint16(y * 256), 30000, 0xffff})
		}
	}
	size := func(opt TIFFOptions) int {
		var buf bytes.Buffer
		b := m.Bounds()
		if err := TIFF16RowsOptions(onlyWriter{&buf}, RowsRGB16{W: b.Dx(), H: b.Dy(), Row: func(y int, dst []byte) { rgb16Row(dst, m, y) }}, nil, Metadata{}, opt); err != nil {
			t.Fatal(err)
		}
		return buf.Len()
	}
	raw, lzw := size(TIFFOptions{}), size(TIFFOptions{Compression: TIFFLZW, Predictor: true})
	if lzw*4 > raw {
		t.Errorf("LZW+predictor %d bytes, uncompressed %d", lzw, raw)
	}
	t.Logf("512×256 16-bit gradient: uncompressed %d bytes, LZW+predictor %d", raw, lzw)
}

// exiftool reads the compression of each file as written (a missing
// exiftool fails under CI=true).
func TestTIFFOptionsExiftool(t *testing.T) {
	bin := testtool.Need(t, "exiftool")
	dir := t.TempDir()
	// Compression, Predictor ("-": absent) and Warning ("-": none).
	want := map[string]string{"": "Uncompressed|-|-", TIFFDeflate: "Adobe Deflate|Horizontal differencing|-", TIFFLZW: "LZW|Horizontal differencing|-"}
	for comp, w := range want {
		var buf bytes.Buffer
		if err := TIFF8(&buf, noise8(64, 64), nil, testMeta, TIFFOptions{Compression: comp, Predictor: true}); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "t"+comp+".tif")
		if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "-s3", "-f", "-Compression", "-Predictor", "-Warning", p).CombinedOutput()
		if err != nil {
			t.Fatalf("exiftool: %v\n%s", err, out)
		}
		got := strings.ReplaceAll(strings.TrimSpace(string(out)), "\n", "|")
		if got != w {
			t.Errorf("compression %q: exiftool reads %q, want %q", comp, got, w)
		}
	}
}
