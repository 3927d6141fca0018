package pipeline

import (
	"context"
	"fmt"
	"image"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/cache"
	"github.com/rawbatch/rawbatch/pipeline/header"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// The marker DNG: a 100×80 sensor, DefaultCrop 92×74 at (4, 3), dark
// background, and two bright 10×10 squares at the picture area's top-left
// (raw 4..13, 3..12) and bottom-right (raw 86..95, 67..76) corners.
const (
	markW, markH   = 100, 80
	markX, markY   = 4, 3
	markCW, markCH = 92, 74
	markSide       = 10
)

// writeMarkerDNG writes the marker DNG with orientation o and the
// DefaultCrop origin and size given (zero size: no DefaultCrop tags).
func writeMarkerDNG(t *testing.T, dir string, o int, origin, size [2]int) string {
	t.Helper()
	inMark := func(x, y, x0, y0 int) bool { return x >= x0 && x < x0+markSide && y >= y0 && y < y0+markSide }
	p := filepath.Join(dir, fmt.Sprintf("marker-o%d-%dx%d.dng", o, size[0], size[1]))
	err := synthdng.WriteFile(p, synthdng.Spec{
		Width: markW, Height: markH, BlackLevel: 512, WhiteLevel: 16383,
		ColorMatrix1: synthdng.DefaultColorMatrix, AsShotNeutral: synthdng.NeutralFor(synthdng.DefaultColorMatrix),
		Orientation: o, DefaultCropOrigin: origin, DefaultCropSize: size,
		Scene: func(x, y, c int) float64 {
			if inMark(x, y, markX, markY) || inMark(x, y, markX+markCW-markSide, markY+markCH-markSide) {
				return 0.5
			}
			return 0.04
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// bright reports whether pixel (x, y) of img is one of the markers' (green
// above the middle of the two levels' 16-bit sRGB codes).
func bright(img image.Image, x, y int) bool {
	_, g, _ := rgb16(img, x, y)
	return g > 36000
}

// cropSettings: analytic colours (tone none, no anchoring), png16.
func cropSettings() Settings {
	s := referenceSettings()
	s.Crop = CropCamera
	return s
}

// TestCropDNGDefaultCrop: with --crop camera a DNG's output is exactly its
// DefaultCrop, and the markers at the crop's corners land at the output's
// corners; --crop sensor keeps the full visible area; upright orientation
// 6 rotates the cropped image; --half-size halves the crop.
func TestCropDNGDefaultCrop(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		o      int
		mode   CropMode
		half   bool
		w, h   int  // output size, upright
		marked bool // the markers are at the output's corners (else at the sensor's (4, 3) and (86, 67))
	}{
		{"camera", 1, CropCamera, false, markCW, markCH, true},
		{"sensor", 1, CropSensor, false, markW, markH, false},
		{"camera orientation 6", 6, CropCamera, false, markCH, markCW, true},
		{"camera half-size", 1, CropCamera, true, markCW / 2, markCH / 2, true},
		{"sensor orientation 6", 6, CropSensor, false, markH, markW, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := writeMarkerDNG(t, dir, tc.o, [2]int{markX, markY}, [2]int{markCW, markCH})
			s := cropSettings()
			s.Crop, s.HalfSize = tc.mode, tc.half
			hdr, err := ReadHeader(in)
			if err != nil {
				t.Fatal(err)
			}
			out, res := convert(t, in, t.TempDir(), s)
			img := decodeImage(t, out)
			if got := img.Bounds().Size(); got.X != tc.w || got.Y != tc.h {
				t.Fatalf("output %d×%d, want %d×%d", got.X, got.Y, tc.w, tc.h)
			}
			// The plan's size is the cropped size (DecodedSize, in the
			// header's orientation).
			if pw, ph := DecodedSize(InfoFromHeader(hdr), s); pw != tc.w || ph != tc.h {
				t.Errorf("DecodedSize %d×%d (upright), want %d×%d", pw, ph, tc.w, tc.h)
			}
			if res.Crop == nil {
				t.Fatal("Result.Crop is nil")
			}
			want := CropFromDNG
			if tc.mode == CropSensor {
				want = CropFromSensor
			}
			if res.Crop.Source != want {
				t.Errorf("Result.Crop %+v, want source %s", *res.Crop, want)
			}
			// at maps a point of the sensor-oriented output (sw×sh) to
			// the upright image.
			sw, sh := tc.w, tc.h
			if tc.o == 6 {
				sw, sh = sh, sw
			}
			at := func(x, y int) (int, int) {
				if tc.o == 6 {
					return sh - 1 - y, x
				}
				return x, y
			}
			side := markSide
			if tc.half {
				side /= 2
			}
			// Inside each marker (a pixel's margin for the demosaic's
			// edges), and just outside it.
			type point struct {
				x, y   int
				bright bool
			}
			points := []point{
				{1, 1, true}, {side - 2, side - 2, true}, {side + 2, 1, false}, {1, side + 2, false},
				{sw - 2, sh - 2, true}, {sw - side + 1, sh - side + 1, true}, {sw - side - 3, sh - 2, false}, {sw - 2, sh - side - 3, false},
			}
			if !tc.marked {
				// The markers where the sensor has them: raw 4..13 × 3..12
				// and 86..95 × 67..76; the corners dark.
				points = []point{
					{1, 1, false}, {markX + 1, markY + 1, true}, {markX + side - 2, markY + side - 2, true}, {markX + side + 2, markY + 1, false},
					{sw - 2, sh - 2, false}, {markX + markCW - 2, markY + markCH - 2, true}, {markX + markCW - side + 1, markY + markCH - side + 1, true},
				}
			}
			for _, p := range points {
				ux, uy := at(p.x, p.y)
				if got := bright(img, ux, uy); got != p.bright {
					t.Errorf("sensor (%d, %d) → upright (%d, %d): bright %v, want %v", p.x, p.y, ux, uy, got, p.bright)
				}
			}
		})
	}
}

// TestCropImplausibleIgnored: a DefaultCrop that takes more than 10 % off
// a side, or does not lie inside the visible area, is ignored with a
// warning that names the source, and the output is the visible area.
func TestCropImplausibleIgnored(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name         string
		origin, size [2]int
		why          string
	}{
		{"too small", [2]int{10, 10}, [2]int{50, 40}, "more than 10 %"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := writeMarkerDNG(t, dir, 1, tc.origin, tc.size)
			out, res := convert(t, in, t.TempDir(), cropSettings())
			if got := decodeImage(t, out).Bounds().Size(); got.X != markW || got.Y != markH {
				t.Errorf("output %d×%d, want the visible %d×%d", got.X, got.Y, markW, markH)
			}
			if res.Crop == nil || res.Crop.Source != CropNone {
				t.Errorf("Result.Crop %+v, want source none", res.Crop)
			}
			found := false
			for _, w := range res.Warnings {
				found = found || strings.Contains(w, "crop: ignored the picture area of "+CropFromDNG) && strings.Contains(w, tc.why)
			}
			if !found {
				t.Errorf("no crop warning with %q in %q", tc.why, res.Warnings)
			}
		})
	}
}

// TestPictureAreaRules: the sources in order (DNG DefaultCrop from the
// ActiveArea's corner, Canon SensorInfo, LibRaw's inset crop), relative to
// LibRaw's visible area; one outside the visible area is ignored with a
// warning; none without LibRaw's visible area.
func TestPictureAreaRules(t *testing.T) {
	vis := [4]int{48, 6, 2176, 1448} // the D30's
	for _, tc := range []struct {
		name string
		h    header.Header
		want Crop
		ok   bool
		warn string
	}{
		{"canon", header.Header{Format: "CRW", VisibleArea: vis, SensorArea: [4]int{56, 12, 2160, 1440}},
			Crop{CropFromCanon, 8, 6, 2160, 1440}, true, ""},
		{"libraw inset", header.Header{Format: "NEF", VisibleArea: vis, InsetCrop: [4]int{50, 8, 2170, 1440}},
			Crop{CropFromLibRaw, 2, 2, 2170, 1440}, true, ""},
		{"dng before canon", header.Header{Format: "DNG", VisibleArea: [4]int{152, 26, 1734, 1156}, ActiveArea: [4]int{26, 152, 1182, 1886},
			DefaultCrop: [4]int{8, 4, 1718, 1148}, SensorArea: [4]int{1, 1, 100, 100}},
			Crop{CropFromDNG, 8, 4, 1718, 1148}, true, ""},
		{"outside", header.Header{Format: "CRW", VisibleArea: vis, SensorArea: [4]int{80, 12, 2160, 1440}},
			Crop{CropNone, 0, 0, 2176, 1448}, false, "does not lie inside LibRaw's visible area of 2176×1448"},
		{"no libraw", header.Header{Format: "CRW", SensorArea: [4]int{56, 12, 2160, 1440}},
			Crop{CropNone, 0, 0, 0, 0}, false, ""},
		{"none stated", header.Header{Format: "ARW", VisibleArea: vis}, Crop{CropNone, 0, 0, 2176, 1448}, false, ""},
	} {
		c, ok, warn := pictureArea(&tc.h)
		if c != tc.want || ok != tc.ok || (tc.warn == "") != (warn == "") || !strings.Contains(warn, tc.warn) {
			t.Errorf("%s: %+v %v %q, want %+v %v %q", tc.name, c, ok, warn, tc.want, tc.ok, tc.warn)
		}
	}
}

// TestCropInPlace: the rows of the crop move to the buffer's start,
// sharing its memory.
func TestCropInPlace(t *testing.T) {
	const w, h, nc = 7, 5, 3
	pix := make([]float32, w*h*nc)
	for i := range pix {
		pix[i] = float32(i)
	}
	c := Crop{X: 2, Y: 1, W: 4, H: 3}
	got := cropInPlace(pix, w, nc, c)
	if len(got) != c.W*c.H*nc || &got[0] != &pix[0] {
		t.Fatalf("len %d (want %d), shares memory %v", len(got), c.W*c.H*nc, &got[0] == &pix[0])
	}
	for y := range c.H {
		for x := range c.W {
			for k := range nc {
				if want := float32(((c.Y+y)*w+c.X+x)*nc + k); got[(y*c.W+x)*nc+k] != want {
					t.Fatalf("(%d, %d, %d) = %v, want %v", x, y, k, got[(y*c.W+x)*nc+k], want)
				}
			}
		}
	}
}

// TestCropD30: the D30 CRW outputs the camera's 2160×1440 picture (Canon
// SensorInfo, at (8, 6) of LibRaw's 2176×1448 visible area) with --crop
// camera, the visible area with --crop sensor, and the camera output is
// the sensor output's pixels at that offset (and not at another).
func TestCropD30(t *testing.T) {
	in := filepath.Join("..", "testdata", "raw", "canond30_CRW.CRW")
	dir := t.TempDir()
	s := cropSettings()
	s.WhiteBalance = WhiteBalance{Mode: "daylight"} // the same gains for both
	camOut, camRes := convert(t, in, dir, s)
	s.Crop = CropSensor
	s.Format = "png16"
	sensorPath := filepath.Join(dir, "sensor.png")
	sensorRes, err := ConvertFile(t.Context(), in, sensorPath, s)
	if err != nil {
		t.Fatal(err)
	}
	cam, sensor := decodeImage(t, camOut), decodeImage(t, sensorPath)
	if got := cam.Bounds().Size(); got != image.Pt(2160, 1440) {
		t.Errorf("--crop camera: %v, want 2160×1440", got)
	}
	if got := sensor.Bounds().Size(); got != image.Pt(2176, 1448) {
		t.Errorf("--crop sensor: %v, want 2176×1448", got)
	}
	if want := (Crop{CropFromCanon, 8, 6, 2160, 1440}); camRes.Crop == nil || *camRes.Crop != want {
		t.Errorf("camera crop %+v, want %+v", camRes.Crop, want)
	}
	if want := (Crop{CropFromSensor, 0, 0, 2176, 1448}); sensorRes.Crop == nil || *sensorRes.Crop != want {
		t.Errorf("sensor crop %+v, want %+v", sensorRes.Crop, want)
	}
	type subImager interface {
		SubImage(image.Rectangle) image.Image
	}
	at := func(x, y int) float64 {
		sub := sensor.(subImager).SubImage(image.Rect(x, y, x+2160, y+1440))
		mean, _ := deltaEStats(t, cam, sub, 4)
		return mean
	}
	right, wrong := at(8, 6), at(0, 0)
	t.Logf("mean ΔE2000 camera vs sensor at (8, 6): %.3f, at (0, 0): %.3f", right, wrong)
	if right > 0.3 || wrong < 3*right {
		t.Errorf("mean ΔE2000 camera vs sensor at (8, 6) %.3f (max 0.3), at (0, 0) %.3f (want 3× more)", right, wrong)
	}
}

// TestCropHalfSizeEstimate: with --crop camera --half-size the D30's plan
// is the halved picture area (1080×720 at (4, 3)), the stage cache's
// entry that size, while the demosaic step still allocates LibRaw's
// halved visible area (1088×724) that the crop stage crops in place.
func TestCropHalfSizeEstimate(t *testing.T) {
	fi, err := ReadInfo(filepath.Join(testdata, "raw", "canond30_CRW.CRW"))
	if err != nil {
		t.Fatal(err)
	}
	s := DefaultSettings()
	s.HalfSize = true
	if w, h := DecodedSize(fi, s); w != 1080 || h != 720 {
		t.Errorf("DecodedSize %d×%d, want 1080×720", w, h)
	}
	if c, ok := scaledCrop(fi.Header, s, 1088, 724); !ok || c != (Crop{CropFromCanon, 4, 3, 1080, 720}) {
		t.Errorf("scaledCrop %+v %v", c, ok)
	}
	if got, want := CacheEntryBytes(fi, s), int64(96+6*1080*720); got != want {
		t.Errorf("cache entry %d bytes, want %d", got, want)
	}
	b := EstimateMemory(fi, s, 1)
	if d := stepMemory(b, "demosaic"); d.Alloc != 12*1088*724 {
		t.Errorf("demosaic allocates %d bytes, want %d", d.Alloc, 12*1088*724)
	}
	if d := stepMemory(b, "crop"); d.Alloc != 0 || d.Scratch != 0 {
		t.Errorf("crop step %+v, want no buffers", d)
	}
}

// TestCropStageCache: the stage cache holds the cropped image under a key
// with the crop setting: --crop camera and --crop sensor of one file are
// two entries, and each hit gives its own size and crop record.
func TestCropStageCache(t *testing.T) {
	dir := t.TempDir()
	c, err := cache.Open(filepath.Join(dir, "cache"), 0)
	if err != nil {
		t.Fatal(err)
	}
	opts := &CacheOptions{Cache: c, Keep: true}
	in := filepath.Join(testdata, "raw", "canond30_CRW.CRW")
	cam := DefaultSettings()
	cam.HalfSize = true // quicker; the same stages run
	sensor := cam
	sensor.Crop = CropSensor
	if CacheKey("xxh3:0", cam) == CacheKey("xxh3:0", sensor) {
		t.Fatal("the cache key does not depend on --crop")
	}
	n := 0
	for _, tc := range []struct {
		s      Settings
		cached bool
		w, h   int
		crop   Crop
	}{
		{cam, false, 1080, 720, Crop{CropFromCanon, 4, 3, 1080, 720}},
		{sensor, false, 1088, 724, Crop{CropFromSensor, 0, 0, 1088, 724}},
		{cam, true, 1080, 720, Crop{CropFromCanon, 4, 3, 1080, 720}},
		{sensor, true, 1088, 724, Crop{CropFromSensor, 0, 0, 1088, 724}},
	} {
		n++
		out := []OutputSpec{{Variant: Variant{Name: "main", Format: "jpeg", Quality: 90, Space: "srgb"}, Path: filepath.Join(dir, fmt.Sprintf("%d.jpg", n))}}
		r, err := ConvertVariants(context.Background(), in, out, tc.s, opts)
		if err != nil {
			t.Fatal(err)
		}
		if r.FromCache != tc.cached || r.Width != tc.w || r.Height != tc.h || r.Crop == nil || *r.Crop != tc.crop {
			t.Errorf("run %d (--crop %s): cached %v, %d×%d, crop %+v; want %v, %d×%d, %+v", n, tc.s.crop(), r.FromCache, r.Width, r.Height, r.Crop, tc.cached, tc.w, tc.h, tc.crop)
		}
	}
}
