package encode

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"hash/adler32"
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
	for _, level := range []int{zlib.NoCompression, zlib.BestSpeed, zlib.DefaultCompression, zlib.BestCompression, zlib.HuffmanOnly} {
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

// Multiple IDAT chunks (image larger than idatChunkSize compressed).
func TestPNG16ManyIDAT(t *testing.T) {
	src := gradient64(1200, 400) // ~2.9 MB of noisy samples
	var buf bytes.Buffer
	if err := PNG16(&buf, src, nil, Metadata{}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range pngChunks(t, buf.Bytes()) {
		if c.typ == "IDAT" {
			n++
		}
	}
	if n < 2 {
		t.Errorf("%d IDAT chunks, want several", n)
	}
	dec, err := png.Decode(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	checkPixels16(t, src, dec)
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
		level int
	}{{"BestSpeed", zlib.BestSpeed}, {"Default", zlib.DefaultCompression}} {
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

// BenchmarkPNG16Stdlib is the image/png baseline on the same image.
func BenchmarkPNG16Stdlib(b *testing.B) {
	src := benchImage64(3000, 2000)
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	b.SetBytes(int64(3000 * 2000 * 6))
	for b.Loop() {
		buf.Reset()
		if err := enc.Encode(&buf, src); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len())/1e6, "MB/file")
}

func refPaeth(a, b, c byte) byte {
	p := int(a) + int(b) - int(c)
	pa, pb, pc := absInt(p-int(a)), absInt(p-int(b)), absInt(p-int(c))
	if pa <= pb && pa <= pc {
		return a
	} else if pb <= pc {
		return b
	}
	return c
}

// The branch-free Paeth predictor must agree with the textbook one
// (PNG 1.2 chapter 6) for every input.
func TestPaethExhaustive(t *testing.T) {
	for a := 0; a < 256; a++ {
		for b := 0; b < 256; b++ {
			for c := 0; c < 256; c++ {
				if got, want := paeth(byte(a), byte(b), byte(c)), refPaeth(byte(a), byte(b), byte(c)); got != want {
					t.Fatalf("paeth(%d,%d,%d) = %d, want %d", a, b, c, got, want)
				}
			}
		}
	}
}

// applyFilter and chooseFilter against straightforward reference code.
func TestFilters(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for _, n := range []int{3, 6, 7, 6 * 500} {
		cur, prev, dst := make([]byte, n), make([]byte, n), make([]byte, n)
		for trial := 0; trial < 20; trial++ {
			r.Read(cur)
			r.Read(prev)
			if trial%2 == 1 { // smooth rows favour other filters than noise
				for i := range cur {
					cur[i], prev[i] = byte(i/6), byte(i/6+trial)
				}
			}
			bestSum, best := -1, -1
			for ft := 0; ft < 5; ft++ {
				applyFilter(dst, byte(ft), cur, prev, 6)
				sum := 0
				for i := 0; i < n; i++ {
					var a, c byte
					if i >= 6 {
						a, c = cur[i-6], prev[i-6]
					}
					b := prev[i]
					want := [5]byte{cur[i], cur[i] - a, cur[i] - b, cur[i] - byte((int(a)+int(b))/2), cur[i] - refPaeth(a, b, c)}[ft]
					if dst[i] != want {
						t.Fatalf("n=%d filter %d differs at %d: %d vs %d", n, ft, i, dst[i], want)
					}
					sum += absInt(int(int8(want)))
				}
				if bestSum < 0 || sum < bestSum {
					bestSum, best = sum, ft
				}
			}
			if got := chooseFilter(cur, prev, 6); int(got) != best {
				t.Fatalf("n=%d: chooseFilter = %d, want %d", n, got, best)
			}
		}
	}
}

func TestAdler32Combine(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	data := make([]byte, 300000)
	r.Read(data)
	for _, cut := range []int{0, 1, 65521, 100000, 299999, 300000} {
		a, b := data[:cut], data[cut:]
		if got, want := adler32Combine(adler32.Checksum(a), adler32.Checksum(b), len(b)), adler32.Checksum(data); got != want {
			t.Errorf("cut %d: combined %08x, want %08x", cut, got, want)
		}
	}
	for _, level := range []int{-2, -1, 0, 1, 5, 6, 9} {
		h := zlibHeader(level)
		if h[0] != 0x78 || (uint16(h[0])<<8|uint16(h[1]))%31 != 0 {
			t.Errorf("level %d: bad zlib header % x", level, h)
		}
	}
}

// The segmented parallel compression must not depend on the worker count
// and must produce one valid zlib stream (checked by decompressing it).
func TestWriteIDATDeterministic(t *testing.T) {
	src := gradient64(700, 900) // 3.8 MB of samples: 4 segments
	var outs [][]byte
	for _, workers := range []int{1, 3, 8} {
		var buf bytes.Buffer
		if err := writeIDAT(&buf, src, zlib.BestSpeed, workers); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, buf.Bytes())
	}
	for i := 1; i < len(outs); i++ {
		if !bytes.Equal(outs[0], outs[i]) {
			t.Errorf("output with worker set %d differs", i)
		}
	}
	var z []byte
	b := outs[0]
	for p := 0; p < len(b); {
		n := int(binary.BigEndian.Uint32(b[p:]))
		z = append(z, b[p+8:p+8+n]...)
		p += 12 + n
	}
	zr, err := zlib.NewReader(bytes.NewReader(z))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr) // verifies the Adler-32 trailer
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 900*(1+6*700) {
		t.Errorf("inflated %d bytes, want %d", len(raw), 900*(1+6*700))
	}
}
