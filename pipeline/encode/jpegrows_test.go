package encode

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rawbatch/rawbatch/internal/testtool"
)

// chromaDetail is an opaque image with colour detail at every scale:
// smooth ramps plus one-pixel red/cyan stripes in a band and a colour
// checkerboard, where chroma subsampling shows.
func chromaDetail(w, h int) *image.RGBA {
	m := smoothRGBA(w, h)
	for y := range h {
		for x := range w {
			switch {
			case y > h/3 && y < h/2:
				if x%2 == 0 {
					m.SetRGBA(x, y, color.RGBA{220, 40, 40, 255})
				} else {
					m.SetRGBA(x, y, color.RGBA{40, 200, 220, 255})
				}
			case y > 2*h/3 && (x/3+y/3)%2 == 0:
				m.SetRGBA(x, y, color.RGBA{30, 60, 230, 255})
			}
		}
	}
	return m
}

// sofSampling returns the SOF marker found (0xC0 baseline, 0xC2
// progressive, ...) and the sampling factors (H<<4|V) of its components.
func sofSampling(t *testing.T, b []byte) (marker byte, hv []byte) {
	t.Helper()
	for _, s := range jpegSegments(t, b) {
		if s.marker >= 0xC0 && s.marker <= 0xCF && s.marker != 0xC4 && s.marker != 0xC8 && s.marker != 0xCC {
			n := int(s.payload[5])
			for i := range n {
				hv = append(hv, s.payload[6+3*i+1])
			}
			return s.marker, hv
		}
	}
	t.Fatal("no SOF marker")
	return 0, nil
}

// TestJPEGRowsSubsampling: each subsampling is written as asked (the SOF
// sampling factors), baseline sequential, and decodes (image/jpeg) within
// a PSNR floor of its own on smooth content; on colour detail full chroma
// resolution beats half, which beats a quarter.
func TestJPEGRowsSubsampling(t *testing.T) {
	src := smoothRGBA(240, 160)
	cases := []struct {
		sub      string
		quality  int
		luma     byte // H<<4|V of the luma component
		minPSNR  float64
		wantName string
	}{
		{"444", 90, 0x11, 47, "444"},
		{"422", 90, 0x21, 46, "422"},
		{"420", 90, 0x22, 43, "420"},
		{"", 90, 0x11, 47, "default at 90"},
		{"", 89, 0x22, 43, "default at 89"},
	}
	psnrs := map[string]float64{}
	for _, c := range cases {
		var buf bytes.Buffer
		if err := JPEGRows(&buf, ImageRows8(src), JPEGOptions{Quality: c.quality, Subsampling: c.sub}, nil, Metadata{}); err != nil {
			t.Fatal(err)
		}
		marker, hv := sofSampling(t, buf.Bytes())
		if marker != 0xC0 {
			t.Errorf("%s: SOF %#x, want baseline SOF0 (not progressive)", c.wantName, marker)
		}
		if len(hv) != 3 || hv[0] != c.luma || hv[1] != 0x11 || hv[2] != 0x11 {
			t.Errorf("%s: sampling factors % x, want %x 11 11", c.wantName, hv, c.luma)
		}
		dec, err := jpeg.Decode(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		p := psnr(t, src, dec)
		if p < c.minPSNR {
			t.Errorf("%s: PSNR %.2f dB < %.0f", c.wantName, p, c.minPSNR)
		}
		t.Logf("%s q%d: %d bytes, PSNR %.2f dB", c.wantName, c.quality, buf.Len(), p)
	}
	detail := chromaDetail(240, 160)
	for _, sub := range []string{"444", "422", "420"} {
		var buf bytes.Buffer
		if err := JPEGRows(&buf, ImageRows8(detail), JPEGOptions{Quality: 90, Subsampling: sub}, nil, Metadata{}); err != nil {
			t.Fatal(err)
		}
		dec, err := jpeg.Decode(&buf)
		if err != nil {
			t.Fatal(err)
		}
		psnrs[sub] = psnr(t, detail, dec)
	}
	if !(psnrs["444"] > psnrs["422"] && psnrs["422"] > psnrs["420"]) {
		t.Errorf("PSNR 444 %.2f, 422 %.2f, 420 %.2f: want decreasing", psnrs["444"], psnrs["422"], psnrs["420"])
	}
	for _, bad := range []string{"411", "4:2:0", "auto"} {
		if err := JPEGRows(&bytes.Buffer{}, ImageRows8(src), JPEGOptions{Quality: 90, Subsampling: bad}, nil, Metadata{}); err == nil {
			t.Errorf("subsampling %q accepted", bad)
		}
	}
}

// The standard luminance DC table of ITU-T T.81 Annex K.3 (code counts
// by length 1..16), which image/jpeg and libjpeg without optimize_coding
// write.
var stdDCLumaCounts = []byte{0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0}

// TestJPEGRowsOptimisedHuffman: the Huffman tables are the image's own
// (optimize_coding), not the standard ones, and no JFIF APP0 is written.
func TestJPEGRowsOptimisedHuffman(t *testing.T) {
	var buf bytes.Buffer
	if err := JPEGRows(&buf, ImageRows8(chromaDetail(200, 120)), JPEGOptions{Quality: 90}, nil, Metadata{}); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range jpegSegments(t, buf.Bytes()) {
		if s.marker == 0xE0 {
			t.Error("JFIF APP0 written")
		}
		// A DHT segment holds one or more tables: class/id, 16 counts, values.
		for p := s.payload; s.marker == 0xC4 && len(p) >= 17; {
			n := 0
			for _, c := range p[1:17] {
				n += int(c)
			}
			if p[0] == 0x00 { // DC class, table 0: luma
				found = true
				if bytes.Equal(p[1:17], stdDCLumaCounts) {
					t.Error("the luma DC table is the standard one: Huffman tables not optimised")
				}
			}
			p = p[17+n:]
		}
	}
	if !found {
		t.Error("no luma DC Huffman table")
	}
}

// TestJPEGRowsAsksInOrder: rows are asked for in order, each once.
func TestJPEGRowsAsksInOrder(t *testing.T) {
	const w, h = 33, 41
	next := 0
	src := RowsRGB8{W: w, H: h, Row: func(y int, dst []byte) {
		if y != next || len(dst) != 3*w {
			t.Fatalf("row %d asked (%d bytes), want row %d of %d bytes", y, len(dst), next, 3*w)
		}
		next++
		for i := range dst {
			dst[i] = byte(y * 5)
		}
	}}
	if err := JPEGRows(&bytes.Buffer{}, src, JPEGOptions{Quality: 80}, nil, Metadata{}); err != nil {
		t.Fatal(err)
	}
	if next != h {
		t.Errorf("%d rows asked, want %d", next, h)
	}
}

// TestJPEGRowsErrors: quality out of range, an empty source and a writer
// failing at the end give errors.
func TestJPEGRowsErrors(t *testing.T) {
	src := ImageRows8(smoothRGBA(64, 64))
	for _, q := range []int{0, -1, 101} {
		if err := JPEGRows(&bytes.Buffer{}, src, JPEGOptions{Quality: q}, nil, Metadata{}); err == nil || !strings.Contains(err.Error(), "outside 1..100") {
			t.Errorf("quality %d: %v", q, err)
		}
	}
	if err := JPEGRows(&bytes.Buffer{}, RowsRGB8{W: 4, H: 4}, JPEGOptions{Quality: 90}, nil, Metadata{}); err == nil {
		t.Error("source without rows accepted")
	}
	var full bytes.Buffer
	if err := JPEGRows(&full, src, JPEGOptions{Quality: 90}, srgbProfile(t), testMeta); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 3, full.Len() / 2, full.Len() - 1} {
		if err := JPEGRows(&failWriter{n: n}, src, JPEGOptions{Quality: 90}, srgbProfile(t), testMeta); !errors.Is(err, errFail) {
			t.Errorf("writer failing after %d of %d bytes: %v", n, full.Len(), err)
		}
	}
}

// TestJPEGMetadataExiftool: exiftool (an independent reader) finds the
// EXIF tags and the ICC profile intact in a libjpeg-turbo file, and no
// warning.
func TestJPEGMetadataExiftool(t *testing.T) {
	bin := testtool.Need(t, "exiftool")
	icc := srgbProfile(t)
	var buf bytes.Buffer
	if err := JPEGRows(&buf, ImageRows8(smoothRGBA(96, 64)), JPEGOptions{Quality: 90}, icc, testMeta); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "t.jpg")
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-s3", "-f", "-Make", "-Model", "-LensModel", "-ISO", "-FNumber", "-ProfileDescription", "-YCbCrSubSampling", "-Warning", p).CombinedOutput()
	if err != nil {
		t.Fatalf("exiftool: %v\n%s", err, out)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := []string{"FUJIFILM", "X-T4", "XF35mmF1.4 R", "400", "5.6", "", "YCbCr4:4:4 (1 1)", "-"}
	if len(got) != len(want) {
		t.Fatalf("exiftool: %q", got)
	}
	for i, w := range want {
		if w != "" && got[i] != w {
			t.Errorf("exiftool field %d: %q, want %q", i, got[i], w)
		}
	}
	if got[5] == "-" || got[5] == "" {
		t.Error("exiftool finds no ICC profile description")
	}
	// The profile exiftool extracts is the one given, byte for byte.
	prof, err := exec.Command(bin, "-b", "-ICC_Profile", p).Output()
	if err != nil || !bytes.Equal(prof, icc) {
		t.Errorf("extracted ICC profile: %d bytes (%v), want the %d given", len(prof), err, len(icc))
	}
}

// TestJPEGRowsParallel: encoders in parallel goroutines (each on its own
// locked thread) keep their images apart.
func TestJPEGRowsParallel(t *testing.T) {
	const n = 6
	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, n)
	errs := make([]error, n)
	srcs := make([]*image.RGBA, n)
	for i := range n {
		srcs[i] = chromaDetail(80+16*i, 48+8*i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = JPEGRows(&outs[i], ImageRows8(srcs[i]), JPEGOptions{Quality: 92}, srgbProfile(t), testMeta)
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("encoder %d: %v", i, errs[i])
		}
		dec, err := jpeg.Decode(&outs[i])
		if err != nil {
			t.Fatal(err)
		}
		if dec.Bounds() != srcs[i].Bounds() {
			t.Fatalf("encoder %d: %v, want %v", i, dec.Bounds(), srcs[i].Bounds())
		}
		if p := psnr(t, srcs[i], dec); p < 33 { // 444 at q92: 34.6..36.1 dB on this content
			t.Errorf("encoder %d: PSNR %.2f dB", i, p)
		}
	}
}

// TestNoStdlibJPEGEncoder: the encode package does not link image/jpeg
// (its encoder was replaced by libjpeg-turbo; only tests decode with it)
// and does link the binding.
func TestNoStdlibJPEGEncoder(t *testing.T) {
	gobin := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		gobin = "go"
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	has := func(p string) bool {
		for _, d := range deps {
			if d == p {
				return true
			}
		}
		return false
	}
	if has("image/jpeg") {
		t.Error("pipeline/encode depends on image/jpeg")
	}
	if !has("github.com/rawbatch/rawbatch/pipeline/internal/jpegturbo") {
		t.Error("pipeline/encode does not use pipeline/internal/jpegturbo")
	}
}

// TestJPEGWorkingBytes: the estimate is 6, 4 and 3 bytes per pixel at
// 444, 422 and 420, plus a little, for an image with optimised tables
// (2048×2048), and under 1 MiB for a 24 MP one (standard tables).
func TestJPEGWorkingBytes(t *testing.T) {
	for s, per := range map[string]float64{"444": 6, "422": 4, "420": 3} {
		got := float64(JPEGWorkingBytes(2048, 2048, s, 90)) / (2048 * 2048)
		if math.Abs(got-per) > 0.15 {
			t.Errorf("%s: %.3f bytes per pixel, want about %g", s, got, per)
		}
		if got := JPEGWorkingBytes(6000, 4000, s, 90); got > 1<<20 {
			t.Errorf("%s at 24 MP: %d bytes, want no coefficient buffer", s, got)
		}
	}
	if JPEGWorkingBytes(2048, 2048, "", 90) != JPEGWorkingBytes(2048, 2048, "444", 90) {
		t.Error("default at quality 90 is not 444's")
	}
}

func TestJPEGCoefficientBytes(t *testing.T) {
	for s, want := range map[string]float64{"444": 6, "422": 4, "420": 3, "": 6, "bad": 6} {
		if got := JPEGCoefficientBytes(2048, 2048, s, 90); got != want {
			t.Errorf("%q: %g bytes per pixel, want %g", s, got, want)
		}
		if got := JPEGCoefficientBytes(6000, 4000, s, 90); got != 0 {
			t.Errorf("%q at 24 MP: %g bytes per pixel, want 0 (standard tables)", s, got)
		}
	}
	if got := JPEGCoefficientBytes(2048, 2048, "", 80); got != 3 {
		t.Errorf("default at 80: %g, want 3 (420)", got)
	}
}
