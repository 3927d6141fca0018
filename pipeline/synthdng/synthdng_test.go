package synthdng

import (
	"bytes"
	"fmt"
	"image"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/image/tiff"

	"github.com/rawbatch/rawbatch/internal/testtool"
	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// ---------------------------------------------------------------------------
// Minimal TIFF reader used to check the written structure independently of
// the writer's own code.

type tagVal struct {
	typ, count uint32
	valOff     uint32 // file offset of the value bytes
	raw        []byte
}

type parsedIFD struct {
	off     uint32
	order   []uint16
	tags    map[uint16]tagVal
	nextIFD uint32
}

var typeSize = map[uint32]int{1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 7: 1, 9: 4, 10: 8}

func parseIFD(t *testing.T, data []byte, off uint32) *parsedIFD {
	t.Helper()
	if off%4 != 0 {
		t.Errorf("IFD at %d is not 4-byte aligned", off)
	}
	if int(off)+2 > len(data) {
		t.Fatalf("IFD offset %d beyond file (%d bytes)", off, len(data))
	}
	n := int(le.Uint16(data[off:]))
	d := &parsedIFD{off: off, tags: map[uint16]tagVal{}}
	for i := range n {
		p := int(off) + 2 + 12*i
		tag := le.Uint16(data[p:])
		typ := uint32(le.Uint16(data[p+2:]))
		count := le.Uint32(data[p+4:])
		sz, ok := typeSize[typ]
		if !ok {
			t.Fatalf("tag %d: unknown type %d", tag, typ)
		}
		nb := sz * int(count)
		vo := uint32(p + 8)
		if nb > 4 {
			vo = le.Uint32(data[p+8:])
			if vo%4 != 0 { // TIFF needs word alignment; we promise 4
				t.Errorf("tag %d: value offset %d not 4-byte aligned", tag, vo)
			}
		}
		if int(vo)+nb > len(data) {
			t.Fatalf("tag %d: value [%d,+%d) beyond file", tag, vo, nb)
		}
		d.order = append(d.order, tag)
		d.tags[tag] = tagVal{typ: typ, count: count, valOff: vo, raw: data[vo : int(vo)+nb]}
	}
	for i := 1; i < len(d.order); i++ {
		if d.order[i] <= d.order[i-1] {
			t.Errorf("IFD@%d: tags not strictly ascending: %d after %d", off, d.order[i], d.order[i-1])
		}
	}
	d.nextIFD = le.Uint32(data[int(off)+2+12*n:])
	return d
}

func (d *parsedIFD) get(t *testing.T, tag uint16) tagVal {
	t.Helper()
	v, ok := d.tags[tag]
	if !ok {
		t.Fatalf("IFD@%d: missing tag %d", d.off, tag)
	}
	return v
}

// ints decodes BYTE/SHORT/LONG values.
func (d *parsedIFD) ints(t *testing.T, tag uint16) []uint32 {
	t.Helper()
	v := d.get(t, tag)
	out := make([]uint32, v.count)
	for i := range out {
		switch v.typ {
		case tifftag.TypeByte, tifftag.TypeUndefined:
			out[i] = uint32(v.raw[i])
		case tifftag.TypeShort:
			out[i] = uint32(le.Uint16(v.raw[2*i:]))
		case tifftag.TypeLong:
			out[i] = le.Uint32(v.raw[4*i:])
		default:
			t.Fatalf("tag %d: type %d is not integer", tag, v.typ)
		}
	}
	return out
}

// rats decodes RATIONAL/SRATIONAL values as num, den pairs.
func (d *parsedIFD) rats(t *testing.T, tag uint16) [][2]int64 {
	t.Helper()
	v := d.get(t, tag)
	out := make([][2]int64, v.count)
	for i := range out {
		n, m := le.Uint32(v.raw[8*i:]), le.Uint32(v.raw[8*i+4:])
		switch v.typ {
		case tifftag.TypeRational:
			out[i] = [2]int64{int64(n), int64(m)}
		case tifftag.TypeSRational:
			out[i] = [2]int64{int64(int32(n)), int64(int32(m))}
		default:
			t.Fatalf("tag %d: type %d is not rational", tag, v.typ)
		}
	}
	return out
}

func (d *parsedIFD) str(t *testing.T, tag uint16) string {
	t.Helper()
	v := d.get(t, tag)
	if v.typ != tifftag.TypeASCII || len(v.raw) == 0 || v.raw[len(v.raw)-1] != 0 {
		t.Fatalf("tag %d: not a NUL-terminated ASCII value", tag)
	}
	return string(v.raw[:len(v.raw)-1])
}

func eqInts(a []uint32, b ...uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------------------
// Shared fixtures.

// testChart is an asymmetric landscape chart: every patch sits in a
// different place, so a wrong orientation moves colours to the wrong spot.
func testChart() Chart {
	return Chart{
		W: 240, H: 160,
		Background: [3]float64{0.18, 0.18, 0.18},
		Patches: []Patch{
			{X0: 8, Y0: 8, X1: 88, Y1: 72, SRGBLinear: [3]float64{0.60, 0.08, 0.06}},      // red, top-left
			{X0: 136, Y0: 8, X1: 232, Y1: 56, SRGBLinear: [3]float64{0.07, 0.45, 0.10}},   // green, top-right
			{X0: 152, Y0: 96, X1: 232, Y1: 152, SRGBLinear: [3]float64{0.05, 0.10, 0.70}}, // blue, bottom-right
			{X0: 8, Y0: 104, X1: 72, Y1: 152, SRGBLinear: [3]float64{0.9, 0.9, 0.9}},      // white, bottom-left
		},
	}
}

// testMatrix is deliberately not on the 1/10000 grid so the tests exercise
// the quantisation that ground truth must follow.
var testMatrix = [3][3]float64{
	{0.67342, -0.14261, -0.05719},
	{-0.48447, 1.25638, 0.25271},
	{-0.07073, 0.13325, 0.58611},
}

const testGain = 0.6 // keeps every CFA value below LibRaw's 0.75 adjust_maximum threshold

// scaleChart enlarges a chart and its patches by an integer factor k.
func scaleChart(c Chart, k int) Chart {
	c.W, c.H = c.W*k, c.H*k
	c.Patches = append([]Patch(nil), c.Patches...)
	for i := range c.Patches {
		p := &c.Patches[i]
		p.X0, p.Y0, p.X1, p.Y1 = p.X0*k, p.Y0*k, p.X1*k, p.Y1*k
	}
	return c
}

// chartColour returns the colour of chart c at displayed pixel (dx, dy) by
// a straightforward scan (last patch wins), independent of ChartScene.
func chartColour(c Chart, dx, dy int) [3]float64 {
	col := c.Background
	for _, p := range c.Patches {
		if dx >= p.X0 && dx < p.X1 && dy >= p.Y0 && dy < p.Y1 {
			col = p.SRGBLinear
		}
	}
	return col
}

func chartSpec(t *testing.T, o int, thumb bool) Spec {
	t.Helper()
	w, h, scene := ChartScene(testChart(), o, testMatrix, testGain)
	return Spec{
		Width: w, Height: h,
		BlackLevel: 512, WhiteLevel: 16383,
		ColorMatrix1:     testMatrix,
		AsShotNeutral:    NeutralFor(testMatrix),
		BaselineExposure: 1.0,
		Orientation:      o,
		Scene:            scene,
		ThumbnailIFD0:    thumb,
		Timestamp:        time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC),
		ISO:              400, ExposureTime: 1.0 / 250, FNumber: 5.6, FocalLength: 50,
	}
}

// ---------------------------------------------------------------------------
// Pure-Go tests.

// TestOrientationSemantics encodes the EXIF 2.32 Orientation table directly
// from the spec's wording ("the 0th row is at the visual X, the 0th column is
// at the visual Y") and checks DisplayToStored/StoredToDisplay against it:
// stored pixel (0,0) must land in the named corner and stored (1,0), the next
// pixel along the 0th row, must run along the named side.
func TestOrientationSemantics(t *testing.T) {
	const w, h = 6, 4 // stored size
	for _, tc := range []struct {
		o            int
		s00, s10     [2]int // displayed position of stored (0,0) and (1,0)
		dispW, dispH int
	}{
		{1, [2]int{0, 0}, [2]int{1, 0}, 6, 4}, // row0 top, col0 left
		{2, [2]int{5, 0}, [2]int{4, 0}, 6, 4}, // row0 top, col0 right
		{3, [2]int{5, 3}, [2]int{4, 3}, 6, 4}, // row0 bottom, col0 right
		{4, [2]int{0, 3}, [2]int{1, 3}, 6, 4}, // row0 bottom, col0 left
		{5, [2]int{0, 0}, [2]int{0, 1}, 4, 6}, // row0 left, col0 top
		{6, [2]int{3, 0}, [2]int{3, 1}, 4, 6}, // row0 right, col0 top
		{7, [2]int{3, 5}, [2]int{3, 4}, 4, 6}, // row0 right, col0 bottom
		{8, [2]int{0, 5}, [2]int{0, 4}, 4, 6}, // row0 left, col0 bottom
		{0, [2]int{0, 0}, [2]int{1, 0}, 6, 4}, // 0 means 1
	} {
		dw, dh := w, h
		if Transposed(tc.o) {
			dw, dh = h, w
		}
		if dw != tc.dispW || dh != tc.dispH {
			t.Errorf("o=%d: display size %dx%d, want %dx%d", tc.o, dw, dh, tc.dispW, tc.dispH)
		}
		if sw, sh := StoredSize(tc.o, dw, dh); sw != w || sh != h {
			t.Errorf("o=%d: StoredSize(%d,%d) = %d,%d want %d,%d", tc.o, dw, dh, sw, sh, w, h)
		}
		for _, c := range []struct{ s, d [2]int }{{[2]int{0, 0}, tc.s00}, {[2]int{1, 0}, tc.s10}} {
			dx, dy := StoredToDisplay(tc.o, w, h, c.s[0], c.s[1])
			if dx != c.d[0] || dy != c.d[1] {
				t.Errorf("o=%d: stored %v displays at (%d,%d), want %v", tc.o, c.s, dx, dy, c.d)
			}
		}
		// Round trip over every pixel, and the mapping must be a bijection.
		seen := map[[2]int]bool{}
		for y := range h {
			for x := range w {
				dx, dy := StoredToDisplay(tc.o, w, h, x, y)
				if dx < 0 || dy < 0 || dx >= dw || dy >= dh {
					t.Fatalf("o=%d: (%d,%d) → (%d,%d) outside %dx%d", tc.o, x, y, dx, dy, dw, dh)
				}
				seen[[2]int{dx, dy}] = true
				if sx, sy := DisplayToStored(tc.o, w, h, dx, dy); sx != x || sy != y {
					t.Errorf("o=%d: round trip (%d,%d) → (%d,%d) → (%d,%d)", tc.o, x, y, dx, dy, sx, sy)
				}
			}
		}
		if len(seen) != w*h {
			t.Errorf("o=%d: mapping not a bijection (%d distinct of %d)", tc.o, len(seen), w*h)
		}
	}
}

func TestNeutralAndCameraRGB(t *testing.T) {
	q := QuantizeColorMatrix(testMatrix)
	if q[0][0] != 0.6734 || q[1][2] != 0.2527 || q[2][0] != -0.0707 {
		t.Fatalf("QuantizeColorMatrix = %v", q)
	}
	n := NeutralFor(testMatrix)
	if math.Max(n[0], math.Max(n[1], n[2])) != 1 {
		t.Errorf("NeutralFor max component = %v, want exactly 1", n)
	}
	if n != QuantizeNeutral(n) {
		t.Errorf("NeutralFor not on the 1/%d grid: %v", NeutralDenominator, n)
	}
	// Independent computation with the rounded matrix and IEC white.
	white := [3]float64{0.4124 + 0.3576 + 0.1805, 0.2126 + 0.7152 + 0.0722, 0.0193 + 0.1192 + 0.9505}
	var cw [3]float64
	for i := range 3 {
		for j := range 3 {
			cw[i] += q[i][j] * white[j]
		}
	}
	k := math.Max(cw[0], math.Max(cw[1], cw[2]))
	for i := range 3 {
		if math.Abs(n[i]-cw[i]/k) > 0.5/NeutralDenominator+1e-12 {
			t.Errorf("neutral[%d] = %v, want %v", i, n[i], cw[i]/k)
		}
	}
	// sRGB white reproduces the neutral; a colour goes through M then CM.
	cam := CameraRGB(testMatrix, [3]float64{1, 1, 1})
	for i := range 3 {
		if math.Abs(cam[i]-n[i]) > 1e-6 {
			t.Errorf("CameraRGB(white)[%d] = %v, neutral %v", i, cam[i], n[i])
		}
	}
	rgb := [3]float64{0.2, 0.5, 0.1}
	var xyz, want [3]float64
	for i := range 3 {
		for j := range 3 {
			xyz[i] += SRGBToXYZ[i][j] * rgb[j]
		}
	}
	for i := range 3 {
		for j := range 3 {
			want[i] += q[i][j] * xyz[j]
		}
		want[i] /= k
	}
	got := CameraRGB(testMatrix, rgb)
	for i := range 3 {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Errorf("CameraRGB[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	if d := D65WhiteXYZ; d[1] != 1 || math.Abs(d[0]-0.9505) > 1e-12 || math.Abs(d[2]-1.0890) > 1e-12 {
		t.Errorf("D65WhiteXYZ = %v", d)
	}
}

func TestChartScene(t *testing.T) {
	c := testChart()
	for o := 0; o <= 8; o++ {
		w, h, scene := ChartScene(c, o, testMatrix, testGain)
		ww, wh := c.W, c.H
		if Transposed(o) {
			ww, wh = c.H, c.W
		}
		if w != ww || h != wh {
			t.Fatalf("o=%d: stored size %dx%d, want %dx%d", o, w, h, ww, wh)
		}
		for dy := range c.H {
			for dx := range c.W {
				x, y := DisplayToStored(o, w, h, dx, dy)
				cam := CameraRGB(testMatrix, chartColour(c, dx, dy))
				for ch := range 3 {
					if got, want := scene(x, y, ch), cam[ch]*testGain; got != want {
						t.Fatalf("o=%d display (%d,%d) stored (%d,%d) ch %d: %v want %v", o, dx, dy, x, y, ch, got, want)
					}
				}
			}
		}
	}
}

// TestFileStructure parses the written bytes with the reader above and checks
// every tag the brief requires, alignment, strip layout and each raw sample.
func TestFileStructure(t *testing.T) {
	const W, H = 64, 42
	black, white := uint16(100), uint16(4095)
	span := float64(white - black)
	// Scene exercises rounding, clamping both ways and NaN.
	scene := func(x, y, c int) float64 {
		switch {
		case x == 0 && y == 0:
			return math.NaN()
		case x == 1 && y == 0:
			return 1.5
		case x == 2 && y == 0:
			return -0.25
		}
		return float64((x*37+y*101+c*523)%4000) / 4000
	}
	wantDN := func(x, y int) uint16 {
		v := scene(x, y, CFAColor(x, y))
		switch {
		case math.IsNaN(v) || v < 0:
			return black
		case v > 1:
			return white
		}
		return black + uint16(math.Round(v*span))
	}
	for _, thumb := range []bool{false, true} {
		t.Run(fmt.Sprintf("thumb=%v", thumb), func(t *testing.T) {
			s := Spec{
				Width: W, Height: H, BlackLevel: black, WhiteLevel: white,
				ColorMatrix1: testMatrix, BaselineExposure: -0.75, Orientation: 7,
				Make: "Acme", Model: "Synth 1", Scene: scene, ThumbnailIFD0: thumb,
				DefaultCropOrigin: [2]int{2, 4}, DefaultCropSize: [2]int{60, 36},
				Timestamp: time.Date(2023, 12, 31, 23, 59, 58, 0, time.UTC),
				ISO:       12800, ExposureTime: 1.0 / 8000, FNumber: 2.8, FocalLength: 35.5,
				RowsPerStrip: 5, // 42 rows → 9 strips, the last one short
			}
			var buf bytes.Buffer
			if err := Write(&buf, s); err != nil {
				t.Fatal(err)
			}
			data := buf.Bytes()
			if string(data[:4]) != "II*\x00" || le.Uint32(data[4:]) != 8 {
				t.Fatalf("bad TIFF header % x", data[:8])
			}
			ifd0 := parseIFD(t, data, 8)
			if ifd0.nextIFD != 0 {
				t.Errorf("IFD0 next offset %d, want 0", ifd0.nextIFD)
			}
			raw := ifd0
			if thumb {
				if !eqInts(ifd0.ints(t, tifftag.NewSubFileType), 1) {
					t.Errorf("IFD0 NewSubFileType %v, want 1", ifd0.ints(t, tifftag.NewSubFileType))
				}
				subs := ifd0.ints(t, tifftag.SubIFDs)
				if len(subs) != 1 {
					t.Fatalf("SubIFDs %v", subs)
				}
				raw = parseIFD(t, data, subs[0])
				// The preview is an ordinary RGB TIFF image.
				img, err := tiff.Decode(bytes.NewReader(data))
				if err != nil {
					t.Fatalf("decode IFD0 preview: %v", err)
				}
				if b := img.Bounds(); b.Dx() != min(PreviewLongEdge, W) || b.Dy() != int(math.Round(float64(min(PreviewLongEdge, W))*H/W)) {
					t.Errorf("preview size %v", b)
				}
				if !eqInts(ifd0.ints(t, tifftag.BitsPerSample), 8, 8, 8) || !eqInts(ifd0.ints(t, tifftag.PhotometricInterpretation), 2) {
					t.Errorf("preview BitsPerSample/Photometric wrong")
				}
				if _, ok := raw.tags[tifftag.Orientation]; ok {
					t.Errorf("Orientation written in raw SubIFD; DNG puts it in IFD0 only")
				}
			} else if _, ok := ifd0.tags[tifftag.SubIFDs]; ok {
				t.Errorf("SubIFDs present without ThumbnailIFD0")
			}

			// Raw IFD.
			checks := []struct {
				tag  uint16
				want []uint32
			}{
				{tifftag.NewSubFileType, []uint32{0}},
				{tifftag.ImageWidth, []uint32{W}},
				{tifftag.ImageLength, []uint32{H}},
				{tifftag.BitsPerSample, []uint32{16}},
				{tifftag.Compression, []uint32{1}},
				{tifftag.PhotometricInterpretation, []uint32{32803}},
				{tifftag.SamplesPerPixel, []uint32{1}},
				{tifftag.PlanarConfiguration, []uint32{1}},
				{tifftag.RowsPerStrip, []uint32{5}},
				{tifftag.CFARepeatPatternDim, []uint32{2, 2}},
				{tifftag.CFAPattern, []uint32{0, 1, 1, 2}},
				{tifftag.BlackLevel, []uint32{uint32(black)}},
				{tifftag.WhiteLevel, []uint32{uint32(white)}},
				{tifftag.DefaultCropOrigin, []uint32{2, 4}},
				{tifftag.DefaultCropSize, []uint32{60, 36}},
			}
			for _, c := range checks {
				if got := raw.ints(t, c.tag); !eqInts(got, c.want...) {
					t.Errorf("raw tag %d = %v, want %v", c.tag, got, c.want)
				}
			}
			offs, counts := raw.ints(t, tifftag.StripOffsets), raw.ints(t, tifftag.StripByteCounts)
			if len(offs) != 9 || len(counts) != 9 {
				t.Fatalf("%d strips / %d counts, want 9", len(offs), len(counts))
			}
			next := offs[0]
			if next%2 != 0 {
				t.Errorf("raw data at odd offset %d", next)
			}
			for i := range offs {
				rows := min(5, H-5*i)
				if offs[i] != next || counts[i] != uint32(rows*W*2) {
					t.Errorf("strip %d: offset %d count %d, want %d %d", i, offs[i], counts[i], next, rows*W*2)
				}
				next += counts[i]
			}
			if int(next) != len(data) {
				t.Errorf("strips end at %d, file is %d bytes", next, len(data))
			}
			for y := range H {
				for x := range W {
					got := le.Uint16(data[int(offs[0])+2*(y*W+x):])
					if want := wantDN(x, y); got != want {
						t.Fatalf("sample (%d,%d) = %d, want %d", x, y, got, want)
					}
				}
			}

			// IFD0 colour / identity tags.
			if !eqInts(ifd0.ints(t, tifftag.DNGVersion), 1, 4, 0, 0) || !eqInts(ifd0.ints(t, tifftag.DNGBackwardVersion), 1, 1, 0, 0) {
				t.Errorf("DNG versions wrong")
			}
			if !eqInts(ifd0.ints(t, tifftag.Orientation), 7) || ifd0.get(t, tifftag.Orientation).typ != tifftag.TypeShort {
				t.Errorf("Orientation = %v", ifd0.ints(t, tifftag.Orientation))
			}
			if !eqInts(ifd0.ints(t, tifftag.CalibrationIlluminant1), 21) {
				t.Errorf("CalibrationIlluminant1 = %v", ifd0.ints(t, tifftag.CalibrationIlluminant1))
			}
			for tag, want := range map[uint16]string{tifftag.Make: "Acme", tifftag.Model: "Synth 1", tifftag.UniqueCameraModel: "Synth 1",
				tifftag.DateTime: "2023:12:31 23:59:58", tifftag.Software: Software} {
				if got := ifd0.str(t, tag); got != want {
					t.Errorf("tag %d = %q, want %q", tag, got, want)
				}
			}
			cm := ifd0.rats(t, tifftag.ColorMatrix1)
			q := QuantizeColorMatrix(testMatrix)
			if ifd0.get(t, tifftag.ColorMatrix1).typ != tifftag.TypeSRational || len(cm) != 9 {
				t.Fatalf("ColorMatrix1 type/count wrong")
			}
			for i, r := range cm {
				if r[1] != ColorMatrixDenominator || float64(r[0])/float64(r[1]) != q[i/3][i%3] {
					t.Errorf("ColorMatrix1[%d] = %d/%d, want %v", i, r[0], r[1], q[i/3][i%3])
				}
			}
			asn := ifd0.rats(t, tifftag.AsShotNeutral)
			n := NeutralFor(testMatrix)
			if ifd0.get(t, tifftag.AsShotNeutral).typ != tifftag.TypeRational {
				t.Errorf("AsShotNeutral not RATIONAL")
			}
			for i, r := range asn {
				if float64(r[0])/float64(r[1]) != n[i] {
					t.Errorf("AsShotNeutral[%d] = %d/%d, want %v", i, r[0], r[1], n[i])
				}
			}
			if be := ifd0.rats(t, tifftag.BaselineExposure); ifd0.get(t, tifftag.BaselineExposure).typ != tifftag.TypeSRational ||
				float64(be[0][0])/float64(be[0][1]) != -0.75 {
				t.Errorf("BaselineExposure = %v", be)
			}

			// EXIF.
			exif := parseIFD(t, data, ifd0.ints(t, tifftag.ExifIFD)[0])
			if got := exif.str(t, tifftag.DateTimeOriginal); got != "2023:12:31 23:59:58" {
				t.Errorf("DateTimeOriginal %q", got)
			}
			if !eqInts(exif.ints(t, tifftag.PhotographicSensitivity), 12800) {
				t.Errorf("ISO %v", exif.ints(t, tifftag.PhotographicSensitivity))
			}
			for tag, want := range map[uint16][2]int64{tifftag.ExposureTime: {1, 8000}, tifftag.FNumber: {2800, 1000}, tifftag.FocalLength: {35500, 1000}} {
				if got := exif.rats(t, tag); got[0] != want {
					t.Errorf("EXIF tag %d = %v, want %v", tag, got[0], want)
				}
			}
		})
	}
}

func TestDefaultsAndOrientationZero(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, Spec{Width: 4, Height: 2, Scene: func(x, y, c int) float64 { return 1 }}); err != nil {
		t.Fatal(err)
	}
	ifd0 := parseIFD(t, buf.Bytes(), 8)
	if !eqInts(ifd0.ints(t, tifftag.Orientation), 1) || !eqInts(ifd0.ints(t, tifftag.WhiteLevel), DefaultWhiteLevel) {
		t.Errorf("defaults: orientation %v white %v", ifd0.ints(t, tifftag.Orientation), ifd0.ints(t, tifftag.WhiteLevel))
	}
	if ifd0.str(t, tifftag.Make) != DefaultMake || ifd0.str(t, tifftag.Model) != DefaultModel || ifd0.str(t, tifftag.UniqueCameraModel) != DefaultModel {
		t.Errorf("default make/model wrong")
	}
	for _, tag := range []uint16{tifftag.ExifIFD, tifftag.DateTime, tifftag.DefaultCropSize, tifftag.SubIFDs} {
		if _, ok := ifd0.tags[tag]; ok {
			t.Errorf("tag %d written although its field is zero", tag)
		}
	}
	asn := ifd0.rats(t, tifftag.AsShotNeutral)
	n := NeutralFor(DefaultColorMatrix)
	for i := range 3 {
		if float64(asn[i][0])/float64(asn[i][1]) != n[i] {
			t.Errorf("default AsShotNeutral %v, want %v", asn, n)
		}
	}
}

func TestValidation(t *testing.T) {
	ok := func(x, y, c int) float64 { return 0 }
	for name, s := range map[string]Spec{
		"odd width":    {Width: 3, Height: 2, Scene: ok},
		"zero height":  {Width: 2, Height: 0, Scene: ok},
		"nil scene":    {Width: 2, Height: 2},
		"orientation":  {Width: 2, Height: 2, Scene: ok, Orientation: 9},
		"white<=black": {Width: 2, Height: 2, Scene: ok, BlackLevel: 100, WhiteLevel: 100},
		"crop outside": {Width: 4, Height: 4, Scene: ok, DefaultCropOrigin: [2]int{2, 0}, DefaultCropSize: [2]int{4, 4}},
		"bad neutral":  {Width: 2, Height: 2, Scene: ok, AsShotNeutral: [3]float64{1, 0, 1}},
		"bad exposure": {Width: 2, Height: 2, Scene: ok, ExposureTime: -1},
	} {
		if err := Write(&bytes.Buffer{}, s); err == nil {
			t.Errorf("%s: Write succeeded, want error", name)
		}
	}
	path := filepath.Join(t.TempDir(), "bad.dng")
	if err := WriteFile(path, Spec{Width: 3, Height: 2, Scene: ok}); err == nil {
		t.Errorf("WriteFile succeeded on invalid spec")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("WriteFile left %s behind after an error", path)
	}
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// TestWriteStreamsLargeFile writes a 6000×4000 (24 MP, 48 MB) file into a
// counting writer and checks that Write allocates far less than the file
// size, i.e. that it streams rows instead of assembling the file.
func TestWriteStreamsLargeFile(t *testing.T) {
	const W, H = 6000, 4000
	scene := func(x, y, c int) float64 { return float64((x+y)&1023) / 1023 }
	cw := &countingWriter{}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	if err := Write(cw, Spec{Width: W, Height: H, Scene: scene, ThumbnailIFD0: true}); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("wrote %d bytes in %v, allocated %d bytes in total", cw.n, elapsed, alloc)
	if cw.n < W*H*2 || cw.n > W*H*2+1<<20 {
		t.Errorf("wrote %d bytes, want ~%d", cw.n, W*H*2)
	}
	if alloc > 16<<20 {
		t.Errorf("Write allocated %d bytes for a %d-byte file; it must stream", alloc, cw.n)
	}
}

func BenchmarkWrite61MP(b *testing.B) {
	c := scaleChart(testChart(), 39) // 9360×6240 ≈ 58 MP
	c.W, c.H = 9504, 6336            // 60.2 MP, Sony A7R IV-class sensor
	w, h, scene := ChartScene(c, 6, DefaultColorMatrix, 0.5)
	s := Spec{Width: w, Height: h, WhiteLevel: 16383, BlackLevel: 512, Orientation: 6, Scene: scene}
	b.SetBytes(int64(w * h * 2))
	for b.Loop() {
		if err := Write(&countingWriter{}, s); err != nil {
			b.Fatal(err)
		}
	}
}

// ---------------------------------------------------------------------------
// LibRaw 0.20.2 (Debian libraw-bin) as the oracle.

func runTool(t *testing.T, tool string, args ...string) string {
	t.Helper()
	out, err := exec.Command(tool, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func writeTemp(t *testing.T, s Spec) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "synth.dng")
	if err := WriteFile(path, s); err != nil {
		t.Fatal(err)
	}
	return path
}

func decodeTIFF(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := tiff.Decode(f)
	if err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	return img
}

// identifyField returns the text after "name:" on raw-identify's output line.
func identifyField(t *testing.T, out, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(name) + `:\s*(.*?)\s*$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("raw-identify output has no %q line:\n%s", name, out)
	}
	return m[1]
}

func identifySize(t *testing.T, out, name string) (int, int) {
	t.Helper()
	var w, h int
	f := identifyField(t, out, name)
	if _, err := fmt.Sscanf(f, "%d x %d", &w, &h); err != nil {
		t.Fatalf("%s: cannot parse %q", name, f)
	}
	return w, h
}

// libRawFlip is LibRaw's mapping of TIFF Orientation to its flip code
// (parse_tiff_ifd: flip = "50132467"[orientation & 7] - '0').
func libRawFlip(o int) int { return int("50132467"[o&7] - '0') }

// TestLibRawIdentify checks raw-identify's view of a chart DNG for every
// orientation, with and without the IFD0 preview.
func TestLibRawIdentify(t *testing.T) {
	tool := testtool.Need(t, "raw-identify")
	c := testChart()
	for _, thumb := range []bool{false, true} {
		for o := 1; o <= 8; o++ {
			t.Run(fmt.Sprintf("thumb=%v/o=%d", thumb, o), func(t *testing.T) {
				s := chartSpec(t, o, thumb)
				out := runTool(t, tool, "-v", writeTemp(t, s))
				if fw, fh := identifySize(t, out, "Full size"); fw != s.Width || fh != s.Height {
					t.Errorf("Full size %dx%d, want stored %dx%d", fw, fh, s.Width, s.Height)
				}
				if iw, ih := identifySize(t, out, "Image size"); iw != s.Width || ih != s.Height {
					t.Errorf("Image size %dx%d, want %dx%d", iw, ih, s.Width, s.Height)
				}
				// Output size is after rotation: the upright chart size, which
				// for 5–8 is the transpose of the stored size.
				ow, oh := identifySize(t, out, "Output size")
				if ow != c.W || oh != c.H {
					t.Errorf("Output size %dx%d, want upright chart %dx%d", ow, oh, c.W, c.H)
				}
				if Transposed(o) != (ow == s.Height && oh == s.Width && s.Width != s.Height) {
					t.Errorf("o=%d: Output %dx%d vs stored %dx%d: transposition wrong", o, ow, oh, s.Width, s.Height)
				}
				if got := identifyField(t, out, "Image flip"); got != strconv.Itoa(libRawFlip(o)) {
					t.Errorf("Image flip %s, want %d", got, libRawFlip(o))
				}
				if got := identifyField(t, out, "Filter pattern"); !strings.HasPrefix(got, "RGGBRGGB") {
					t.Errorf("Filter pattern %q, want RGGB", got)
				}
				for name, want := range map[string]string{
					"Raw colors":        "3",
					"black":             "512",
					"DNG Version":       "1.4.0.0",
					"UniqueCameraModel": "=Synthetic=",
					"ISO speed":         "400",
					"Shutter":           "1/250.0",
					"Aperture":          "f/5.6",
					"Focal length":      "50.0 mm",
					"Baseline exposure": "1.000",
					"DNG Illuminant 1":  "D65",
					"Timestamp":         "Mon May  6 07:08:09 2024",
				} {
					// Timestamp: LibRaw mktime()s the EXIF string and prints
					// it with ctime(), both in local time, so it round-trips.
					if got := identifyField(t, out, name); got != want {
						t.Errorf("%s: %q, want %q", name, got, want)
					}
				}
				if !strings.Contains(out, "Camera: rawbatch Synthetic") {
					t.Errorf("Make/Model not reported")
				}
				// The matrix LibRaw read is the rounded one we wrote.
				q := QuantizeColorMatrix(testMatrix)
				var rows []string
				for i := range 3 {
					rows = append(rows, fmt.Sprintf("%.4f\t%.4f\t%.4f", q[i][0], q[i][1], q[i][2]))
				}
				if want := "DNG color matrix 1:\n" + strings.Join(rows, "\n"); !strings.Contains(out, want) {
					t.Errorf("ColorMatrix1 not read back as\n%s\n%s", want, out)
				}
				if thumb {
					tw, th := identifySize(t, out, "Thumb size")
					pw := min(PreviewLongEdge, c.W)
					ph := int(math.Round(float64(pw) * float64(c.H) / float64(c.W)))
					if Transposed(o) {
						pw, ph = ph, pw // preview is stored like the raw data
					}
					if tw != pw || th != ph {
						t.Errorf("Thumb size %dx%d, want %dx%d", tw, th, pw, ph)
					}
				} else if strings.Contains(out, "Thumb size") {
					t.Errorf("thumbnail reported for a file without one")
				}
			})
		}
	}
}

// TestLibRawRawSamples decodes the raw CFA data with LibRaw's unprocessed_raw
// (raw DN including black, no processing) and compares every site, with a
// multi-strip layout whose last strip is short, with and without SubIFD,
// and as lossless JPEG tiles that overhang both edges (with and without a
// JPEG preview SubIFD).
func TestLibRawRawSamples(t *testing.T) {
	tool := testtool.Need(t, "unprocessed_raw")
	const W, H = 62, 46
	const black, white = 256, 16000
	span := float64(white - black)
	dn := func(x, y, c int) int { return (x*131 + y*71 + c*4099) % (white - black + 1) }
	for _, tc := range []struct {
		thumb       bool
		compression int
		preview     image.Image
	}{{false, 1, nil}, {true, 1, nil}, {false, 7, nil}, {true, 7, image.NewRGBA(image.Rect(0, 0, 31, 23))}} {
		t.Run(fmt.Sprintf("thumb=%v/compression=%d/preview=%v", tc.thumb, tc.compression, tc.preview != nil), func(t *testing.T) {
			path := writeTemp(t, Spec{
				Width: W, Height: H, BlackLevel: black, WhiteLevel: white, RowsPerStrip: 5, ThumbnailIFD0: tc.thumb,
				Compression: tc.compression, TileSize: 16, Preview: tc.preview,
				Orientation: 3, // raw data is reported unrotated
				Scene:       func(x, y, c int) float64 { return float64(dn(x, y, c)) / span },
			})
			runTool(t, tool, "-q", "-T", path)
			img, ok := decodeTIFF(t, path+".tiff").(*image.Gray16)
			if !ok {
				t.Fatalf("unprocessed_raw output is not 16-bit grey")
			}
			if b := img.Bounds(); b.Dx() != W || b.Dy() != H {
				t.Fatalf("raw size %v, want %dx%d", b, W, H)
			}
			for y := range H {
				for x := range W {
					want := black + dn(x, y, CFAColor(x, y))
					if got := int(img.Gray16At(x, y).Y); got != want {
						t.Fatalf("raw (%d,%d) = %d, want %d", x, y, got, want)
					}
				}
			}
		})
	}
}

// wbExpected is what `dcraw_emu -4 -o 0 -W -w` outputs for a flat area whose
// camera value (relative to white−black, before rounding) is v: dcraw's
// scale_colors with cam_mul = 1/AsShotNeutral, multipliers divided by the
// smallest one, times 65535/(WhiteLevel−BlackLevel), applied to the stored
// (rounded) DN minus black. Valid while no sample exceeds 0.75 of
// white−black (see TestLibRawAdjustMaximumCaveat).
func wbExpected(v, neutral [3]float64, black, white uint16) [3]float64 {
	span := float64(white - black)
	minMul := math.Inf(1)
	for _, n := range neutral {
		minMul = math.Min(minMul, 1/n)
	}
	var out [3]float64
	for c := range 3 {
		dn := math.Round(v[c] * span)
		out[c] = math.Min(65535, dn*(1/neutral[c]/minMul)*65535/span)
	}
	return out
}

func meanRect(img image.Image, r image.Rectangle) [3]float64 {
	var s [3]float64
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			R, G, B, _ := img.At(x, y).RGBA()
			s[0] += float64(R)
			s[1] += float64(G)
			s[2] += float64(B)
		}
	}
	n := float64(r.Dx() * r.Dy())
	return [3]float64{s[0] / n, s[1] / n, s[2] / n}
}

// TestLibRawColour renders the chart through dcraw_emu (AHD demosaic, 16-bit
// linear, camera white balance) for every orientation, with and without the
// IFD0 preview, and checks that the output is upright and every flat area's
// interior mean matches analytic ground truth to 0.5%:
//
//   - -o 0 (camera RGB): the white-balanced camera value, see wbExpected;
//   - -o 1 (linear sRGB): the chart colour itself, rgb·gain·65535. This
//     closes the loop through LibRaw's own DNG colour pipeline (ColorMatrix1,
//     AsShotNeutral) and so checks ChartScene/NeutralFor end to end.
//
// The files carry BaselineExposure = +1 EV, which LibRaw does not apply.
func TestLibRawColour(t *testing.T) {
	tool := testtool.Need(t, "dcraw_emu")
	c := testChart()
	n := NeutralFor(testMatrix)
	type area struct {
		name string
		r    image.Rectangle
		rgb  [3]float64
	}
	const margin = 6 // keep clear of demosaic interpolation across edges
	areas := []area{{"background", image.Rect(96, 76, 136, 92), c.Background}}
	for i, p := range c.Patches {
		areas = append(areas, area{fmt.Sprintf("patch%d", i),
			image.Rect(p.X0+margin, p.Y0+margin, p.X1-margin, p.Y1-margin), p.SRGBLinear})
	}
	for _, a := range areas { // fixture sanity: flat, and below adjust_maximum
		for y := a.r.Min.Y - margin; y < a.r.Max.Y+margin; y++ {
			for x := a.r.Min.X - margin; x < a.r.Max.X+margin; x++ {
				if chartColour(c, x, y) != a.rgb {
					t.Fatalf("fixture: %s not flat at (%d,%d)", a.name, x, y)
				}
			}
		}
		for _, v := range CameraRGB(testMatrix, a.rgb) {
			if v*testGain > 0.7 || v < 0 {
				t.Fatalf("fixture: %s camera value %v outside [0,0.7]", a.name, v*testGain)
			}
		}
	}
	for _, thumb := range []bool{false, true} {
		for o := 1; o <= 8; o++ {
			t.Run(fmt.Sprintf("thumb=%v/o=%d", thumb, o), func(t *testing.T) {
				s := chartSpec(t, o, thumb)
				path := writeTemp(t, s)
				for _, space := range []string{"0", "1"} {
					runTool(t, tool, "-T", "-4", "-o", space, "-W", "-w", path)
					img := decodeTIFF(t, path+".tiff")
					if b := img.Bounds(); b.Dx() != c.W || b.Dy() != c.H {
						t.Fatalf("-o %s: output %v, want upright %dx%d", space, b, c.W, c.H)
					}
					for _, a := range areas {
						var want [3]float64
						if space == "0" {
							cam := CameraRGB(testMatrix, a.rgb)
							want = wbExpected([3]float64{cam[0] * testGain, cam[1] * testGain, cam[2] * testGain},
								n, s.BlackLevel, s.WhiteLevel)
						} else {
							for ch := range 3 {
								want[ch] = a.rgb[ch] * testGain * 65535
							}
						}
						got := meanRect(img, a.r)
						for ch := range 3 {
							if math.Abs(got[ch]-want[ch]) > 0.005*want[ch]+2 {
								t.Errorf("-o %s %s ch%d: got %.1f, want %.1f (%+.3f%%)", space, a.name, ch,
									got[ch], want[ch], 100*(got[ch]/want[ch]-1))
							}
						}
					}
				}
			})
		}
	}
}

// TestLibRawAdjustMaximumCaveat pins a LibRaw behaviour that the expected
// values above depend on: with the default adjust_maximum_thr (0.75) LibRaw
// replaces WhiteLevel by the largest raw sample when that sample lies between
// 75% and 100% of the range, stretching the output; `-c 0` disables it.
func TestLibRawAdjustMaximumCaveat(t *testing.T) {
	tool := testtool.Need(t, "dcraw_emu")
	n := NeutralFor(DefaultColorMatrix)
	const level = 0.9
	path := writeTemp(t, Spec{Width: 64, Height: 64, BlackLevel: 512, WhiteLevel: 16383,
		Scene: func(x, y, c int) float64 { return level * n[c] }})
	for _, tc := range []struct {
		args []string
		want float64
	}{
		{nil, 65535},                 // maximum := 0.9·range, so 0.9 → full scale
		{[]string{"-c", "0"}, 58981}, // 0.9·65535 (DN-rounded)
	} {
		args := append(append([]string{"-T", "-4", "-o", "0", "-W", "-w"}, tc.args...), path)
		runTool(t, tool, args...)
		got := meanRect(decodeTIFF(t, path+".tiff"), image.Rect(16, 16, 48, 48))
		for ch := range 3 {
			if math.Abs(got[ch]-tc.want) > 0.002*tc.want {
				t.Errorf("dcraw_emu %v: ch%d = %.1f, want %.0f", tc.args, ch, got[ch], tc.want)
			}
		}
	}
}

// TestLibRawThumbnail extracts the IFD0 preview with simple_dcraw -e and
// checks its size and the sRGB-encoded, white-balanced background value.
func TestLibRawThumbnail(t *testing.T) {
	tool := testtool.Need(t, "simple_dcraw")
	c := scaleChart(testChart(), 2) // 480×320, so the preview is downscaled to 256×171
	s := chartSpec(t, 1, true)
	s.Width, s.Height, s.Scene = ChartScene(c, 1, testMatrix, testGain)
	path := writeTemp(t, s)
	runTool(t, tool, "-e", path)
	ppm, err := os.ReadFile(path + ".thumb.ppm")
	if err != nil {
		t.Fatal(err)
	}
	var w, h, maxv, hdrLen int
	if n, err := fmt.Sscan(string(ppm[:min(len(ppm), 64)]), new(string), &w, &h, &maxv); n != 4 || !bytes.HasPrefix(ppm, []byte("P6")) {
		t.Fatalf("thumbnail is not a binary PPM: %v", err)
	}
	for i, nl := 0, 0; i < len(ppm); i++ { // the header is 3 lines
		if ppm[i] == '\n' {
			if nl++; nl == 3 {
				hdrLen = i + 1
				break
			}
		}
	}
	pw := min(PreviewLongEdge, c.W)
	ph := int(math.Round(float64(pw) * float64(c.H) / float64(c.W)))
	if pw != 256 || ph != 171 {
		t.Fatalf("fixture: preview %dx%d", pw, ph)
	}
	if w != pw || h != ph || maxv != 255 || len(ppm)-hdrLen != 3*w*h {
		t.Fatalf("thumbnail %dx%d max %d with %d data bytes, want %dx%d", w, h, maxv, len(ppm)-hdrLen, pw, ph)
	}
	// Preview pixel near displayed (224, 160), well inside the background.
	px := ppm[hdrLen+3*((160*ph/c.H)*w+224*pw/c.W):]
	want := srgb8(0.18 * testGain)
	for ch := range 3 {
		if d := int(px[ch]) - int(want); d < -1 || d > 1 {
			t.Errorf("preview background ch%d = %d, want %d", ch, px[ch], want)
		}
	}
}
