package look

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"math/rand"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/colour"
)

// gradientJPEG encodes a w×h horizontal grey ramp (8-bit code x·255/(w−1))
// at quality 100.
func gradientJPEG(t *testing.T, w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			v := uint8(x * 255 / (w - 1))
			img.Set(x, y, color.RGBA{v, v, v, 255})
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 100}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// withExif inserts an APP1 Exif segment after SOI: IFD0 → ExifIFD with
// ColorSpace cs (0 = none) → Interop IFD with index idx ("" = none).
func withExif(j []byte, bo binary.ByteOrder, cs uint16, idx string) []byte {
	var t bytes.Buffer
	if bo == binary.LittleEndian {
		t.WriteString("II")
	} else {
		t.WriteString("MM")
	}
	w16 := func(v uint16) { binary.Write(&t, bo, v) }
	w32 := func(v uint32) { binary.Write(&t, bo, v) }
	w16(42)
	w32(8)
	// IFD0 at 8: one entry (ExifIFD → 26), next 0.
	w16(1)
	w16(tagExifIFD)
	w16(4)
	w32(1)
	w32(26)
	w32(0)
	// Exif IFD at 26: ColorSpace, InteropIFD → 56.
	w16(2)
	w16(tagColorSpace)
	w16(3)
	w32(1)
	w16(cs)
	w16(0)
	w16(tagInteropIFD)
	w16(4)
	w32(1)
	w32(56)
	w32(0)
	// Interop IFD at 56.
	if idx == "" {
		w16(0)
	} else {
		w16(1)
		w16(tagInteropIdx)
		w16(2)
		w32(4)
		t.WriteString(idx + "\x00")
	}
	w32(0)
	seg := append([]byte("Exif\x00\x00"), t.Bytes()...)
	out := []byte{0xFF, 0xD8, 0xFF, 0xE1, byte((len(seg) + 2) >> 8), byte(len(seg) + 2)}
	out = append(out, seg...)
	return append(out, j[2:]...)
}

func TestReadPreviewSpace(t *testing.T) {
	j := gradientJPEG(t, 32, 24)
	for _, tc := range []struct {
		bo   binary.ByteOrder
		cs   uint16
		idx  string
		want *colour.Space
		src  string
	}{
		{binary.LittleEndian, 0xFFFF, "R03", colour.AdobeRGB, "EXIF InteroperabilityIndex R03"},
		{binary.BigEndian, 0xFFFF, "R03", colour.AdobeRGB, "EXIF InteroperabilityIndex R03"},
		{binary.BigEndian, 1, "R98", colour.SRGB, "EXIF InteroperabilityIndex R98"},
		{binary.LittleEndian, 1, "", colour.SRGB, "EXIF ColorSpace sRGB"},
		{binary.LittleEndian, 0xFFFF, "", colour.SRGB, "assumed sRGB"},
	} {
		sp, src := ReadPreviewSpace(withExif(j, tc.bo, tc.cs, tc.idx))
		if sp != tc.want || src != tc.src {
			t.Errorf("%v cs %#x idx %q: %s (%s), want %s (%s)", tc.bo, tc.cs, tc.idx, sp.Name, src, tc.want.Name, tc.src)
		}
	}
	if sp, src := ReadPreviewSpace(j); sp != colour.SRGB || src != "assumed sRGB" {
		t.Errorf("no EXIF: %s (%s)", sp.Name, src)
	}
	if sp, _ := ReadPreviewSpace(withExif(j, binary.LittleEndian, 1, "R03")[:40]); sp != colour.SRGB {
		t.Errorf("truncated EXIF: %s", sp.Name)
	}
}

func TestDecodePreviewLinearAndSpace(t *testing.T) {
	j := gradientJPEG(t, 256, 170)
	for _, sp := range []*colour.Space{colour.SRGB, colour.AdobeRGB} {
		data := j
		if sp == colour.AdobeRGB {
			data = withExif(j, binary.LittleEndian, 0xFFFF, "R03")
		}
		p, err := DecodePreview(data, 0, 0, 0, 3072, 2040)
		if err != nil {
			t.Fatal(err)
		}
		if p.Space != sp {
			t.Fatalf("space %s, want %s", p.Space.Name, sp.Name)
		}
		// Column x holds code x·255/255 = x: linear = Decode(x/255).
		for _, x := range []int{10, 64, 128, 200, 250} {
			got := float64(p.Image.Pix[3*(85*p.Image.W+x)+1])
			want := sp.Decode(float64(x) / 255)
			if math.Abs(got-want) > 0.01 {
				t.Errorf("%s column %d: %.4f, want %.4f", sp.Name, x, got, want)
			}
		}
	}
}

func TestDecodePreviewUsability(t *testing.T) {
	for _, tc := range []struct {
		w, h, rawW, rawH int
		ok               bool
		cropW, cropH     int
	}{
		{160, 120, 4000, 3000, true, 160, 120},
		{150, 120, 300, 240, false, 0, 0},   // too small
		{200, 150, 8000, 6000, false, 0, 0}, // under 1/33 of the raw's width
		{300, 200, 3000, 2000, true, 300, 200},
		{300, 204, 3000, 2000, true, 300, 200}, // 2 % taller: centre crop
		{300, 225, 3000, 2000, false, 0, 0},    // 4:3 preview of a 3:2 raw
		{200, 300, 3000, 2000, false, 0, 0},    // transposed
	} {
		p, err := DecodePreview(gradientJPEG(t, tc.w, tc.h), 0, 0, 0, tc.rawW, tc.rawH)
		if tc.ok != (err == nil) {
			t.Errorf("%d×%d for a %d×%d raw: err %v, want ok %v", tc.w, tc.h, tc.rawW, tc.rawH, err, tc.ok)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrPreviewUnusable) {
				t.Errorf("error %v does not wrap ErrPreviewUnusable", err)
			}
			continue
		}
		if p.Image.W != tc.cropW || p.Image.H != tc.cropH {
			t.Errorf("%d×%d: cropped to %d×%d, want %d×%d", tc.w, tc.h, p.Image.W, p.Image.H, tc.cropW, tc.cropH)
		}
	}
}

func TestDecodePreviewBitmap(t *testing.T) {
	w, h := 200, 150
	data := make([]byte, 3*w*h)
	for i := range w * h {
		data[3*i], data[3*i+1], data[3*i+2] = 255, 128, 0
	}
	p, err := DecodePreview(data, w, h, 3, 2000, 1500)
	if err != nil {
		t.Fatal(err)
	}
	got := p.Image.cell(0)
	want := [3]float64{1, colour.SRGBDecode(128.0 / 255), 0}
	for c := range 3 {
		if math.Abs(got[c]-want[c]) > 1e-6 {
			t.Fatalf("bitmap pixel %v, want %v", got, want)
		}
	}
	if _, err := DecodePreview(data[:100], w, h, 3, 2000, 1500); !errors.Is(err, ErrPreviewUnusable) {
		t.Fatalf("short bitmap: %v", err)
	}
}

func TestReduceAndClippedFraction(t *testing.T) {
	m := Image{W: 8, H: 4, Pix: make([]float32, 3*32)}
	for y := range 4 {
		for x := range 8 {
			for c := range 3 {
				m.Pix[3*(y*8+x)+c] = float32(x) / 8
			}
			if x == 7 && y < 2 {
				m.Pix[3*(y*8+x)] = 1
			}
		}
	}
	g, frac, err := Reduce(m, 4, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Cell (0,0): x 0,1 → mean 1/16; cell (3,0): x 6,7 with one R = 1 per row.
	if v := g.Pix[1]; math.Abs(float64(v)-1.0/16) > 1e-7 {
		t.Errorf("cell 0 G %g, want 1/16", v)
	}
	if frac[3] != 0.5 || frac[7] != 0 || frac[0] != 0 {
		t.Errorf("clipped fractions %v, want 0.5 in cell 3 only", frac)
	}
	if gw, gh := GridSize(6000, 4000, GridWidth); gw != 256 || gh != 171 {
		t.Errorf("GridSize(6000, 4000) = %d×%d", gw, gh)
	}
}

func TestScorePreview(t *testing.T) {
	scene := synthScene(512, 340, 11)
	out := renderGrid(scene, 0, 1, DefaultCurve)
	// The same picture with a 10 px border cropped away and a different
	// size: the score of the identical rendering is near 0 and grows with
	// an exposure error.
	if d, err := ScorePreview(out, colour.SRGB, out, colour.SRGB); err != nil || d > 1e-9 {
		t.Fatalf("identical: %g, %v", d, err)
	}
	dark := renderGrid(scene, -1, 1, DefaultCurve)
	d1, _ := ScorePreview(dark, colour.SRGB, out, colour.SRGB)
	darker := renderGrid(scene, -2, 1, DefaultCurve)
	d2, _ := ScorePreview(darker, colour.SRGB, out, colour.SRGB)
	if !(d1 > 3 && d2 > d1) {
		t.Fatalf("−1 EV scores %.2f, −2 EV %.2f: want > 3 and growing", d1, d2)
	}
	// A preview in Adobe RGB of the same colours scores as the sRGB one.
	m := colour.ConvertMatrix(colour.SRGB, colour.AdobeRGB)
	ad := Image{W: out.W, H: out.H, Pix: make([]float32, len(out.Pix))}
	for k := range out.W * out.H {
		v := m.Apply(out.cell(k))
		ad.Pix[3*k], ad.Pix[3*k+1], ad.Pix[3*k+2] = float32(v[0]), float32(v[1]), float32(v[2])
	}
	if d, _ := ScorePreview(out, colour.SRGB, ad, colour.AdobeRGB); d > 0.05 {
		t.Fatalf("same colours in Adobe RGB score %.3f", d)
	}
}

// TestDecodePreviewReduced: the reduced decode is the full decode
// box-filtered to at most maxLong (within float rounding), with the same
// crop; maxLong 0 or larger than the preview keeps the full size.
func TestDecodePreviewReduced(t *testing.T) {
	j := gradientJPEG(t, 1200, 800)
	full, err := DecodePreview(j, 0, 0, 0, 3000, 2000)
	if err != nil {
		t.Fatal(err)
	}
	red, err := DecodePreviewReduced(j, 0, 0, 0, 3000, 2000, 300)
	if err != nil {
		t.Fatal(err)
	}
	if red.Image.W != 300 || red.Image.H != 200 || red.SourceW != 1200 {
		t.Fatalf("reduced %d×%d from %d×%d", red.Image.W, red.Image.H, red.SourceW, red.SourceH)
	}
	want, _, err := Reduce(full.Image, 300, 200, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range red.Image.Pix {
		if math.Abs(float64(v-want.Pix[i])) > 1e-5 {
			t.Fatalf("value %d: %g, want %g", i, v, want.Pix[i])
		}
	}
	same, err := DecodePreviewReduced(j, 0, 0, 0, 3000, 2000, 2000)
	if err != nil || same.Image.W != 1200 || same.Image.H != 800 {
		t.Fatalf("maxLong above the size: %v %+v", err, same)
	}
	// A preview 2 % taller than the 3:2 raw is cropped first (1200×800), then reduced.
	crop, err := DecodePreviewReduced(gradientJPEG(t, 1200, 816), 0, 0, 0, 1500, 1000, 600)
	if err != nil || crop.Image.W != 600 || crop.Image.H != 400 {
		t.Fatalf("cropped: %v %+v", err, crop)
	}
}

// TestDecodePreviewGrid: Preview.Cells is the cropped full decode reduced
// to the grid asked (the score's grid), not a grid of the reduced copy,
// which weighs the reduced pixels equally: on a noisy 1440×960 bitmap (the
// D30's preview size) with a 512-pixel copy they differ, and Cells equals
// the full decode's reduction. ScoreGridSize is GridWidth cells along the
// long side, in sensor orientation, whatever the picture's orientation.
func TestDecodePreviewGrid(t *testing.T) {
	if w, h := ScoreGridSize(2176, 1448); w != 256 || h != 170 {
		t.Errorf("ScoreGridSize(2176, 1448) = %d×%d, want 256×170", w, h)
	}
	if w, h := ScoreGridSize(1448, 2176); w != 170 || h != 256 {
		t.Errorf("ScoreGridSize(1448, 2176) = %d×%d, want 170×256", w, h)
	}
	const w, h = 1440, 960
	rng := rand.New(rand.NewSource(3))
	data := make([]byte, 3*w*h)
	for i := range data {
		data[i] = byte(rng.Intn(256))
	}
	gw, gh := ScoreGridSize(2176, 1448)
	p, err := DecodePreviewGrid(data, w, h, 3, 2176, 1448, 512, gw, gh)
	if err != nil {
		t.Fatal(err)
	}
	full, err := DecodePreview(data, w, h, 3, 2176, 1448)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := Reduce(full.Image, gw, gh, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.Cells.W != gw || p.Cells.H != gh {
		t.Fatalf("Cells %d×%d, want %d×%d", p.Cells.W, p.Cells.H, gw, gh)
	}
	for i, v := range p.Cells.Pix {
		if math.Abs(float64(v-want.Pix[i])) > 1e-5 {
			t.Fatalf("cell value %d: %g, want %g", i, v, want.Pix[i])
		}
	}
	copyGrid, err := p.Grid(gw, gh)
	if err != nil {
		t.Fatal(err)
	}
	var d float64
	for i, v := range copyGrid.Pix {
		d = max(d, math.Abs(float64(v-want.Pix[i])))
	}
	if d < 1e-3 {
		t.Errorf("the reduced copy's grid matches the full decode's within %g: the test does not show the difference", d)
	}
	if q, err := DecodePreviewReduced(data, w, h, 3, 2176, 1448, 512); err != nil || q.Cells.W != 0 {
		t.Errorf("DecodePreviewReduced: %v, Cells %d wide, want none", err, q.Cells.W)
	}
}
