package encode

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand"
	"testing"

	"github.com/rwcarlsen/goexif/exif"
)

type pngChunk struct {
	typ  string
	data []byte
}

// pngChunks parses a PNG file, verifying the signature and every CRC.
func pngChunks(t *testing.T, b []byte) []pngChunk {
	t.Helper()
	if !bytes.HasPrefix(b, []byte(pngSignature)) {
		t.Fatal("no PNG signature")
	}
	var cs []pngChunk
	for p := 8; p < len(b); {
		if p+12 > len(b) {
			t.Fatalf("truncated chunk at %d", p)
		}
		n := int(binary.BigEndian.Uint32(b[p:]))
		typ := string(b[p+4 : p+8])
		data := b[p+8 : p+8+n]
		crc := binary.BigEndian.Uint32(b[p+8+n:])
		if want := crc32.ChecksumIEEE(b[p+4 : p+8+n]); crc != want {
			t.Errorf("chunk %s: CRC %08x, want %08x", typ, crc, want)
		}
		cs = append(cs, pngChunk{typ, data})
		p += 12 + n
	}
	if len(cs) == 0 || cs[len(cs)-1].typ != "IEND" {
		t.Error("no final IEND")
	}
	return cs
}

// gradient64 returns an opaque NRGBA64 image whose R channel takes w
// distinct 16-bit levels (a horizontal ramp over the full range) and whose G
// and B hold pseudo-random 16-bit values.
func gradient64(w, h int) *image.NRGBA64 {
	m := image.NewNRGBA64(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewSource(5))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			m.SetNRGBA64(x, y, color.NRGBA64{
				R: uint16(x * 65535 / (w - 1)),
				G: uint16(r.Intn(65536)),
				B: uint16((x*7 + y*131) * 13),
				A: 0xFFFF,
			})
		}
	}
	return m
}

// checkPixels16 verifies that dec holds exactly the R, G, B of src.
func checkPixels16(t *testing.T, src image.Image, dec image.Image) {
	t.Helper()
	b := src.Bounds()
	if dec.Bounds().Dx() != b.Dx() || dec.Bounds().Dy() != b.Dy() {
		t.Fatalf("decoded size %v, want %v", dec.Bounds(), b)
	}
	d := dec.Bounds().Min
	bad := 0
	for y := 0; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			var want color.RGBA64
			switch m := src.(type) {
			case *image.NRGBA64: // alpha dropped, unassociated colour kept
				c := m.NRGBA64At(b.Min.X+x, b.Min.Y+y)
				want = color.RGBA64{c.R, c.G, c.B, 0xFFFF}
			default:
				r, g, bb, _ := src.At(b.Min.X+x, b.Min.Y+y).RGBA()
				want = color.RGBA64{uint16(r), uint16(g), uint16(bb), 0xFFFF}
			}
			r, g, bb, a := dec.At(d.X+x, d.Y+y).RGBA()
			if got := (color.RGBA64{uint16(r), uint16(g), uint16(bb), uint16(a)}); got != want {
				if bad++; bad < 5 {
					t.Errorf("pixel (%d,%d) = %v, want %v", x, y, got, want)
				}
			}
		}
	}
}

func TestPNG16RoundTrip(t *testing.T) {
	icc := srgbProfile(t)
	src := gradient64(1000, 37)
	var buf bytes.Buffer
	if err := PNG16(&buf, src, icc, testMeta); err != nil {
		t.Fatal(err)
	}
	out := buf.Bytes()

	dec, err := png.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	switch dec.(type) {
	case *image.RGBA64, *image.NRGBA64:
	default:
		t.Fatalf("decoded as %T, want a 16-bit RGB image", dec)
	}
	checkPixels16(t, src, dec)
	levels := map[uint32]bool{}
	for x := 0; x < 1000; x++ {
		r, _, _, _ := dec.At(x, 0).RGBA()
		levels[r] = true
	}
	if len(levels) <= 256 {
		t.Errorf("only %d distinct 16-bit levels survived", len(levels))
	}

	cs := pngChunks(t, out)
	if cs[0].typ != "IHDR" || len(cs[0].data) != 13 {
		t.Fatalf("first chunk %s", cs[0].typ)
	}
	ihdr := cs[0].data
	if w, h := binary.BigEndian.Uint32(ihdr), binary.BigEndian.Uint32(ihdr[4:]); w != 1000 || h != 37 {
		t.Errorf("IHDR size %dx%d", w, h)
	}
	if ihdr[8] != 16 || ihdr[9] != 2 || ihdr[10] != 0 || ihdr[11] != 0 || ihdr[12] != 0 {
		t.Errorf("IHDR depth %d colour type %d (want 16, 2), comp %d filter %d interlace %d", ihdr[8], ihdr[9], ihdr[10], ihdr[11], ihdr[12])
	}
	if cs[1].typ != "iCCP" {
		t.Fatalf("chunk after IHDR is %s, want iCCP", cs[1].typ)
	}
	name, rest, ok := bytes.Cut(cs[1].data, []byte{0})
	if !ok || len(name) < 1 || len(name) > 79 || rest[0] != 0 {
		t.Fatalf("iCCP header: name %q, method %v", name, rest[:1])
	}
	zr, err := zlib.NewReader(bytes.NewReader(rest[1:]))
	if err != nil {
		t.Fatal(err)
	}
	prof, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(prof, icc) {
		t.Errorf("iCCP profile: %d bytes, equal=%v, err=%v", len(prof), bytes.Equal(prof, icc), err)
	}

	seenIDAT, seenEXIf := false, false
	for _, c := range cs {
		switch c.typ {
		case "IDAT":
			seenIDAT = true
		case "eXIf":
			if seenIDAT {
				t.Error("eXIf after IDAT")
			}
			seenEXIf = true
			x, err := exif.Decode(bytes.NewReader(c.data))
			if err != nil {
				t.Fatal(err)
			}
			checkTestMeta(t, x)
		case "tRNS":
			t.Error("tRNS present: output must have no alpha")
		}
	}
	if !seenEXIf || !seenIDAT {
		t.Errorf("eXIf present %v, IDAT present %v", seenEXIf, seenIDAT)
	}

	// A corrupted iCCP CRC must be rejected by the standard decoder too.
	bad := append([]byte(nil), out...)
	iccpCRC := 8 + 25 + 8 + len(cs[1].data)
	bad[iccpCRC] ^= 1
	if _, err := png.Decode(bytes.NewReader(bad)); err == nil {
		t.Error("stdlib accepted a bad iCCP CRC")
	}
}

func TestPNG16InputTypes(t *testing.T) {
	base := gradient64(300, 20)
	b := base.Bounds()
	r64 := image.NewRGBA64(b)
	g16 := image.NewGray16(b)
	translucent := image.NewNRGBA64(b)
	for y := 0; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			c := base.NRGBA64At(x, y)
			r64.SetRGBA64(x, y, color.RGBA64{c.R, c.G, c.B, 0xFFFF})
			g16.SetGray16(x, y, color.Gray16{c.R})
			c.A = uint16(x * 200)
			translucent.SetNRGBA64(x, y, c)
		}
	}
	cases := map[string]image.Image{
		"RGBA64":      r64,
		"Gray16":      g16,
		"generic":     struct{ image.Image }{base},
		"translucent": translucent,
		"subimage":    base.SubImage(image.Rect(17, 3, 250, 19)),
		"rgba8":       smoothRGBA(50, 40),
	}
	for name, m := range cases {
		var buf bytes.Buffer
		if err := PNG16(&buf, m, nil, Metadata{}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		dec, err := png.Decode(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if cs := pngChunks(t, buf.Bytes()); cs[0].data[9] != 2 || cs[0].data[8] != 16 || cs[1].typ == "iCCP" {
			t.Errorf("%s: IHDR/iCCP wrong (no profile given)", name)
		}
		checkPixels16(t, m, dec)
	}
}

func TestPNG16Levels(t *testing.T) {
	src := gradient64(200, 30)
	for _, level := range []png.CompressionLevel{png.NoCompression, png.BestSpeed, png.DefaultCompression, png.BestCompression} {
		var buf bytes.Buffer
		if err := PNG16Level(&buf, src, nil, Metadata{}, level); err != nil {
			t.Fatal(err)
		}
		dec, err := png.Decode(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("level %d: %v", level, err)
		}
		checkPixels16(t, src, dec)
	}
	if err := PNG16Level(io.Discard, src, nil, Metadata{}, 42); err == nil {
		t.Error("invalid level accepted")
	}
	if err := PNG16(io.Discard, image.NewNRGBA64(image.Rectangle{}), nil, Metadata{}); err == nil {
		t.Error("empty image accepted")
	}
	if err := PNG16(&failWriter{n: 1000}, gradient64(500, 500), srgbProfile(t), testMeta); !errors.Is(err, errFail) {
		t.Errorf("write error not reported: %v", err)
	}
}

func benchImage64(w, h int) *image.NRGBA64 {
	m := image.NewNRGBA64(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewSource(6))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			v := uint16(x*40000/w + y*20000/h)
			m.SetNRGBA64(x, y, color.NRGBA64{v + uint16(r.Intn(64)), v/2 + uint16(r.Intn(64)), 65535 - v + uint16(r.Intn(64)), 0xFFFF})
		}
	}
	return m
}

// BenchmarkPNG16Levels encodes a 3000×2000 (6 MP) smooth-plus-noise
// 16-bit image at several zlib levels, reporting the output size.
func BenchmarkPNG16Levels(b *testing.B) {
	src := benchImage64(3000, 2000)
	for _, lv := range []struct {
		name  string
		level png.CompressionLevel
	}{{"BestSpeed", png.BestSpeed}, {"Default", png.DefaultCompression}} {
		b.Run(lv.name, func(b *testing.B) {
			var buf bytes.Buffer
			b.SetBytes(int64(3000 * 2000 * 6))
			for b.Loop() {
				buf.Reset()
				if err := PNG16Level(&buf, src, nil, Metadata{}, lv.level); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(buf.Len())/1e6, "MB/file")
		})
	}
}
