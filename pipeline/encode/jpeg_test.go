package encode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"math/rand"
	"os"
	"testing"

	"github.com/rwcarlsen/goexif/exif"
)

// srgbProfile is a real ICC profile from the colour package's data (read
// from disk so that this package keeps no dependency on colour).
func srgbProfile(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("../colour/icc/sRGB-v2-magic.icc")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// smoothRGBA returns an opaque image of low-frequency gradients.
func smoothRGBA(w, h int) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			fx, fy := float64(x)/float64(w), float64(y)/float64(h)
			m.SetRGBA(x, y, color.RGBA{
				R: uint8(40 + 180*fx),
				G: uint8(128 + 100*math.Sin(2*math.Pi*fy)),
				B: uint8(128 + 90*math.Cos(math.Pi*(fx+fy))),
				A: 255,
			})
		}
	}
	return m
}

func psnr(t *testing.T, a *image.RGBA, b image.Image) float64 {
	t.Helper()
	var se float64
	n := 0
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := a.RGBAAt(x, y)
			r2, g2, b2, _ := b.At(x, y).RGBA()
			for _, d := range []float64{float64(c.R) - float64(r2>>8), float64(c.G) - float64(g2>>8), float64(c.B) - float64(b2>>8)} {
				se += d * d
				n++
			}
		}
	}
	if se == 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(255*255/(se/float64(n)))
}

type segment struct {
	marker  byte
	payload []byte
}

// jpegSegments parses the marker segments from SOI up to and including SOS.
func jpegSegments(t *testing.T, b []byte) []segment {
	t.Helper()
	if len(b) < 4 || b[0] != 0xFF || b[1] != 0xD8 {
		t.Fatalf("no SOI: % x", b[:min(4, len(b))])
	}
	var segs []segment
	for p := 2; ; {
		if p+4 > len(b) || b[p] != 0xFF {
			t.Fatalf("bad marker at %d", p)
		}
		m := b[p+1]
		n := int(binary.BigEndian.Uint16(b[p+2:]))
		if n < 2 || p+2+n > len(b) {
			t.Fatalf("bad segment length %d at %d", n, p)
		}
		segs = append(segs, segment{m, b[p+4 : p+2+n]})
		if m == 0xDA { // SOS: entropy-coded data follows
			return segs
		}
		p += 2 + n
	}
}

// iccFromJPEG reassembles the APP2 ICC_PROFILE chunks per ICC.1 Annex B.4,
// checking sequence numbers and counts; it returns the profile and the
// chunk count.
func iccFromJPEG(t *testing.T, segs []segment) ([]byte, int) {
	t.Helper()
	var chunks [][]byte
	count := -1
	for _, s := range segs {
		if s.marker != 0xE2 || !bytes.HasPrefix(s.payload, []byte("ICC_PROFILE\x00")) {
			continue
		}
		seq, n := int(s.payload[12]), int(s.payload[13])
		if count >= 0 && n != count {
			t.Errorf("chunk count changes %d → %d", count, n)
		}
		count = n
		if seq != len(chunks)+1 {
			t.Errorf("chunk sequence %d, want %d", seq, len(chunks)+1)
		}
		if len(s.payload)-14 > 65519 {
			t.Errorf("chunk of %d bytes > 65519", len(s.payload)-14)
		}
		chunks = append(chunks, s.payload[14:])
	}
	if count >= 0 && len(chunks) != count {
		t.Errorf("%d chunks, count field %d", len(chunks), count)
	}
	return bytes.Join(chunks, nil), len(chunks)
}

func TestJPEGRoundTrip(t *testing.T) {
	icc := srgbProfile(t)
	src := smoothRGBA(320, 200)
	var buf bytes.Buffer
	if err := JPEG(&buf, src, 90, icc, testMeta); err != nil {
		t.Fatal(err)
	}
	out := buf.Bytes()

	dec, err := jpeg.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if dec.Bounds() != src.Bounds() {
		t.Fatalf("decoded bounds %v, want %v", dec.Bounds(), src.Bounds())
	}
	if p := psnr(t, src, dec); p < 35 {
		t.Errorf("PSNR %.2f dB < 35", p)
	}

	segs := jpegSegments(t, out)
	if len(segs) < 3 {
		t.Fatalf("segments: %d", len(segs))
	}
	if segs[0].marker != 0xE1 || !bytes.HasPrefix(segs[0].payload, []byte("Exif\x00\x00")) {
		t.Errorf("first segment after SOI is %#x %q, want APP1 Exif", segs[0].marker, segs[0].payload[:min(6, len(segs[0].payload))])
	}
	if segs[1].marker != 0xE2 || !bytes.HasPrefix(segs[1].payload, []byte("ICC_PROFILE\x00")) {
		t.Errorf("second segment is %#x, want APP2 ICC_PROFILE", segs[1].marker)
	}
	got, n := iccFromJPEG(t, segs)
	if n != 1 || !bytes.Equal(got, icc) {
		t.Errorf("ICC: %d chunks, %d bytes, equal=%v", n, len(got), bytes.Equal(got, icc))
	}
	if !bytes.Equal(segs[0].payload[6:], EXIF(testMeta)) {
		t.Error("APP1 payload is not EXIF(md)")
	}

	x, err := exif.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	checkTestMeta(t, x)
}

func TestJPEGLargeICC(t *testing.T) {
	fake := make([]byte, 200*1024)
	rand.New(rand.NewSource(3)).Read(fake)
	var buf bytes.Buffer
	if err := JPEG(&buf, smoothRGBA(64, 48), 80, fake, Metadata{}); err != nil {
		t.Fatal(err)
	}
	got, n := iccFromJPEG(t, jpegSegments(t, buf.Bytes()))
	if n != 4 {
		t.Errorf("200 KB profile in %d chunks, want 4", n)
	}
	if !bytes.Equal(got, fake) {
		t.Error("reassembled profile differs")
	}
	if _, err := jpeg.Decode(bytes.NewReader(buf.Bytes())); err != nil {
		t.Errorf("decode with big APP2: %v", err)
	}

	// Exactly one full chunk, then one byte more.
	for _, c := range []struct{ size, chunks int }{{65519, 1}, {65520, 2}, {0, 0}} {
		buf.Reset()
		p := fake[:c.size]
		if err := JPEG(&buf, smoothRGBA(16, 16), 80, p, Metadata{}); err != nil {
			t.Fatal(err)
		}
		got, n := iccFromJPEG(t, jpegSegments(t, buf.Bytes()))
		if n != c.chunks || !bytes.Equal(got, p) {
			t.Errorf("profile of %d bytes: %d chunks (want %d), equal=%v", c.size, n, c.chunks, bytes.Equal(got, p))
		}
	}
	if err := JPEG(&buf, smoothRGBA(16, 16), 80, make([]byte, 255*65519+1), Metadata{}); err == nil {
		t.Error("oversized profile accepted")
	}
}

// All fast paths must produce the same file as the *image.RGBA path.
func TestJPEGInputTypes(t *testing.T) {
	src := smoothRGBA(40, 30)
	b := src.Bounds()
	nrgba := image.NewNRGBA(b)
	n64 := image.NewNRGBA64(b)
	r64 := image.NewRGBA64(b)
	for y := 0; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			c := src.RGBAAt(x, y)
			nrgba.SetNRGBA(x, y, color.NRGBA{c.R, c.G, c.B, 255})
			n64.SetNRGBA64(x, y, color.NRGBA64{uint16(c.R) * 257, uint16(c.G) * 257, uint16(c.B) * 257, 0xFFFF})
			r64.SetRGBA64(x, y, color.RGBA64{uint16(c.R) * 257, uint16(c.G) * 257, uint16(c.B) * 257, 0xFFFF})
		}
	}
	encode := func(m image.Image) []byte {
		var buf bytes.Buffer
		if err := JPEG(&buf, m, 85, nil, Metadata{}); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	want := encode(src)
	for name, m := range map[string]image.Image{
		"NRGBA": nrgba, "NRGBA64": n64, "RGBA64": r64,
		"generic": struct{ image.Image }{src}, // hides the concrete type
	} {
		if !bytes.Equal(encode(m), want) {
			t.Errorf("%s input encodes differently from RGBA", name)
		}
	}
	// Sub-images keep their offset bounds.
	sub := src.SubImage(image.Rect(5, 7, 29, 23))
	dec, err := jpeg.Decode(bytes.NewReader(encode(sub)))
	if err != nil || dec.Bounds().Dx() != 24 || dec.Bounds().Dy() != 16 {
		t.Errorf("sub-image: %v %v", dec.Bounds(), err)
	}
	// Translucent NRGBA64 is composited over black.
	n64.SetNRGBA64(0, 0, color.NRGBA64{0xFFFF, 0xFFFF, 0xFFFF, 0x8000})
	row := make([]byte, 3*b.Dx())
	if ImageRows8(n64).Row(0, row); row[0] != 128 {
		t.Errorf("half-transparent white → R=%d, want 128", row[0])
	}
}

type failWriter struct{ n int }

var errFail = errors.New("write failed")

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n -= len(p); f.n < 0 {
		return 0, errFail
	}
	return len(p), nil
}

func TestJPEGErrors(t *testing.T) {
	m := smoothRGBA(8, 8)
	for _, q := range []int{0, 101, -5} {
		if err := JPEG(&bytes.Buffer{}, m, q, nil, Metadata{}); err == nil {
			t.Errorf("quality %d accepted", q)
		}
	}
	if err := JPEG(&bytes.Buffer{}, image.NewRGBA(image.Rect(0, 0, 0, 5)), 90, nil, Metadata{}); err == nil {
		t.Error("empty image accepted")
	}
	if err := JPEG(&failWriter{n: 100}, smoothRGBA(256, 256), 90, srgbProfile(t), testMeta); !errors.Is(err, errFail) {
		t.Errorf("write error not reported: %v", err)
	}
	long := Metadata{Make: string(bytes.Repeat([]byte{'x'}, 70000))}
	if err := JPEG(&bytes.Buffer{}, m, 90, nil, long); err == nil {
		t.Error("EXIF larger than an APP1 segment accepted")
	}
}

var benchImage *image.RGBA

// BenchmarkJPEG24MP encodes a 6000×4000 (24 MP) opaque image with sensor-like
// noise at quality 90 with an ICC profile and EXIF through JPEGRows
// (libjpeg-turbo) at each subsampling, and, for comparison, through the
// standard library's image/jpeg encoder that it replaced (4:2:0 only;
// test code, not linked into the encode path). It reports the file size
// and libjpeg's working memory (JPEGWorkingBytes).
func BenchmarkJPEG24MP(b *testing.B) {
	if benchImage == nil {
		benchImage = smoothRGBA(6000, 4000)
		r := rand.New(rand.NewSource(4))
		for i := range benchImage.Pix { // add sensor-like noise
			if i%4 != 3 {
				benchImage.Pix[i] = uint8(min(255, max(0, int(benchImage.Pix[i])+r.Intn(9)-4)))
			}
		}
	}
	icc := srgbProfile(b)
	for _, sub := range []string{"444", "422", "420"} {
		b.Run("turbo-q90-"+sub, func(b *testing.B) {
			var buf bytes.Buffer
			b.SetBytes(int64(len(benchImage.Pix)))
			for b.Loop() {
				buf.Reset()
				if err := JPEGRows(&buf, ImageRows8(benchImage), JPEGOptions{Quality: 90, Subsampling: sub}, icc, testMeta); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(buf.Len())/1e6, "MB/file")
			b.ReportMetric(float64(JPEGWorkingBytes(6000, 4000, sub, 90))/24e6, "workB/px")
		})
	}
	b.Run("stdlib-q90-420", func(b *testing.B) {
		var buf bytes.Buffer
		b.SetBytes(int64(len(benchImage.Pix)))
		for b.Loop() {
			buf.Reset()
			if err := jpeg.Encode(&buf, benchImage, &jpeg.Options{Quality: 90}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(buf.Len())/1e6, "MB/file")
	})
}
