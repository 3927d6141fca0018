package synthdng

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/internal/lensfun"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
)

// realTestPicture is a small linear sRGB picture for the realistic set's
// tests: a horizontal grey ramp (0.02 to 0.9) with a saturated red block.
func realTestPicture() Picture {
	img := image.NewRGBA(image.Rect(0, 0, 96, 64))
	for y := range 64 {
		for x := range 96 {
			v := uint8(40 + 2*x)
			c := color.RGBA{v, v, v, 255}
			if x >= 60 && x < 80 && y >= 20 && y < 40 {
				c = color.RGBA{200, 40, 30, 255}
			}
			img.Set(x, y, c)
		}
	}
	return PictureFromImage(img)
}

// TestRealSetFiles writes file 0 (a DNG) and file 1 (an ARW) of a 600×400
// realistic set and reads them back with LibRaw and lensfun: the raw data
// LibRaw unpacks is exactly what the scene gives (lossless), the
// difference to the noise-free signal has the spread of ISO 1600's noise,
// some photosites are clipped (the glints), LibRaw finds the JPEG preview
// at the set's size and the EXIF (ISO 1600, the lens, focal length,
// f-number), and lensfun knows the body and the lens, with profiles for
// vignetting, distortion and TCA.
func TestRealSetFiles(t *testing.T) {
	const w, h = 600, 400
	src := realTestPicture()
	dir := t.TempDir()
	for k, f := range []RealSetFormat{RealDNG, RealARW} {
		t.Run(string(f), func(t *testing.T) {
			runtime.LockOSThread() // LibRaw's handle is used from one thread
			defer runtime.UnlockOSThread()
			p := RealSetPath(dir, w, h, k, f)
			if err := WriteReal(p, src, k, w, h, f); err != nil {
				t.Fatal(err)
			}
			scene, err := NewRealScene(src, k, w, h)
			if err != nil {
				t.Fatal(err)
			}
			hd, err := libraw.New()
			if err != nil {
				t.Fatal(err)
			}
			defer hd.Close()
			if err := hd.Open(p); err != nil {
				t.Fatal(err)
			}
			in := hd.Info()
			if in.ISO != RealISO || in.Lens != RealLens || in.FocalLength != RealFocal || math.Abs(in.Aperture-RealFNumber) > 0.01 {
				t.Errorf("LibRaw's EXIF: ISO %v, lens %q, %v mm, f/%v; want %d, %q, %v mm, f/%v",
					in.ISO, in.Lens, in.FocalLength, in.Aperture, RealISO, RealLens, RealFocal, RealFNumber)
			}
			th, err := hd.Thumbnail()
			if err != nil {
				t.Fatalf("preview: %v", err)
			}
			cfg, err := jpeg.DecodeConfig(bytes.NewReader(th.Data))
			if th.Format != libraw.ThumbJPEG || err != nil || cfg.Width != w || cfg.Height != h {
				t.Errorf("preview: format %v, JPEG %dx%d (%v), want a %dx%d JPEG", th.Format, cfg.Width, cfg.Height, err, w, h)
			}
			if err := hd.Unpack(); err != nil {
				t.Fatal(err)
			}
			raw, rw, rh, err := hd.CopyRaw(nil)
			if err != nil || rw != w || rh != h {
				t.Fatalf("raw data %dx%d (%v), want %dx%d", rw, rh, err, w, h)
			}
			span := float64(RealWhite - RealBlack)
			var n, clipped int
			var sum, sum2 float64
			for y := range h {
				for x := range w {
					v := scene.Scene(x, y, CFAColor(x, y))
					want := int(math.Round(RealBlack + math.Max(0, math.Min(1, v))*span))
					got := int(raw[y*w+x])
					if got != want {
						t.Fatalf("raw (%d,%d) = %d, want %d (the data is lossless)", x, y, got, want)
					}
					if got == RealWhite {
						clipped++
					}
					c := scene.clean(x, y, CFAColor(x, y))
					if c > 0.05 && c < 0.8 {
						z := (float64(got-RealBlack)/span - c) / NoiseSigma(RealISO, c)
						n, sum, sum2 = n+1, sum+z, sum2+z*z
					}
				}
			}
			mean, sd := sum/float64(n), math.Sqrt(sum2/float64(n)-sum*sum/float64(n*n))
			t.Logf("noise: mean %.3f σ, spread %.3f σ over %d sites; %d photosites clipped", mean, sd, n, clipped)
			if n < w*h/4 || math.Abs(mean) > 0.05 || math.Abs(sd-1) > 0.1 {
				t.Errorf("noise over %d sites: mean %.3f σ, spread %.3f σ of ISO %d; want 0 ± 0.05, 1 ± 0.1", n, mean, sd, RealISO)
			}
			if frac := float64(clipped) / (w * h); frac < 1e-4 || frac > 0.03 {
				t.Errorf("%.4f %% of the photosites clipped, want 0.01 to 3 %% (the glints)", 100*frac)
			}
		})
	}
	runtime.LockOSThread() // lensfun's DB is used from one thread
	defer runtime.UnlockOSThread()
	db, err := lensfun.Open()
	if err != nil {
		t.Fatalf("lensfun's system database: %v", err)
	}
	defer db.Close()
	cam, err := db.FindCamera(RealMake, RealModel)
	if err != nil || cam == nil {
		t.Fatalf("lensfun does not know the %s %s (%v)", RealMake, RealModel, err)
	}
	lens, err := db.FindLens(cam, "", RealLens)
	if err != nil || lens == nil {
		t.Fatalf("lensfun does not know the %s on the %s (%v)", RealLens, RealModel, err)
	}
	if got := lens.Has.String(); got != "vignetting, distortion, TCA" {
		t.Errorf("lensfun's %s has %s, want vignetting, distortion and TCA", lens.Name(), got)
	}
}

// TestRealSetCache: RealSet writes each missing file once, develops the
// picture only then, and names the files by size, index and format.
func TestRealSetCache(t *testing.T) {
	root := t.TempDir()
	develops := 0
	develop := func(in, out string) error {
		develops++
		if filepath.Base(in) != filepath.Base(RealSource) {
			return fmt.Errorf("developing %s, want %s", in, RealSource)
		}
		var buf bytes.Buffer
		img := image.NewRGBA(image.Rect(0, 0, 48, 32))
		for i := range img.Pix {
			img.Pix[i] = uint8(i)
		}
		if err := jpeg.Encode(&buf, img, nil); err != nil {
			return err
		}
		return os.WriteFile(out, buf.Bytes(), 0o644)
	}
	formats := []RealSetFormat{RealDNG, RealARW}
	paths, err := RealSet(root, 64, 48, formats, develop)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		filepath.Join(root, "build", fmt.Sprintf("realset-v%d", RealSetVersion), "realset-64x48-00.dng"),
		filepath.Join(root, "build", fmt.Sprintf("realset-v%d", RealSetVersion), "realset-64x48-01.arw"),
	}
	if fmt.Sprint(paths) != fmt.Sprint(want) || develops != 1 {
		t.Fatalf("paths %v after %d developments, want %v after 1", paths, develops, want)
	}
	if _, err := RealSet(root, 64, 48, formats, develop); err != nil || develops != 1 {
		t.Errorf("second call: %v, %d developments, want the cached files and none", err, develops)
	}
}
