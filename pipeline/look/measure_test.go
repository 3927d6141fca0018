package look

// The measurement of issue 12 on the real files in testdata/raw: the
// preview-anchored exposure estimate and the mean ΔE2000 against the
// embedded preview of (i) today's default output (pipeline.ConvertFile) and
// (ii) the same decode re-toned with DefaultCurve and the estimated EV,
// plus for files without usable as-shot multipliers (iii) with the
// white balance fitted to the preview (FitWB). Not timed; it logs the
// numbers (go test ./pipeline/look -run TestMeasureRealFiles -v) and
// checks only that every step works.

import (
	"context"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
)

const rawDir = "../../testdata/raw"

// rawDecode is what a stage would have: the linear camera RGB of LibRaw
// (white balanced with mul, or not balanced at all when mul is nil; 1 =
// clip), the camera matrix, the file's info and its preview.
type rawDecode struct {
	cam   Image // W×H×3 camera RGB, linear
	info  libraw.Info
	thumb libraw.Thumb
}

func decodeRaw(t *testing.T, path string, wb libraw.WBMode, mul [4]float32) rawDecode {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h, err := libraw.New()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.Open(path); err != nil {
		t.Fatal(err)
	}
	var d rawDecode
	d.info = h.Info()
	if d.thumb, err = h.Thumbnail(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if err := h.Unpack(); err != nil {
		t.Fatal(err)
	}
	if err := h.Process(libraw.Params{Demosaic: libraw.AHD, WB: wb, Multipliers: mul}); err != nil {
		t.Fatal(err)
	}
	pix, w, hh, colors, err := h.CopyImage(nil)
	if err != nil || colors != 3 {
		t.Fatalf("%s: %v (%d colours)", path, err, colors)
	}
	d.cam = Image{W: w, H: hh, Pix: pix}
	return d
}

func rgbCam(in libraw.Info) colour.Mat3 {
	var m colour.Mat3
	for i := range 3 {
		for j := range 3 {
			m[i][j] = in.RGBCam[i][j]
		}
	}
	return m
}

// readPNG16 reads a 16-bit sRGB PNG as display-linear sRGB.
func readPNG16(t *testing.T, path string) Image {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	m := Image{W: b.Dx(), H: b.Dy(), Pix: make([]float32, 3*b.Dx()*b.Dy())}
	rgb, ok := img.(*image.RGBA64)
	if !ok {
		t.Fatalf("%s: %T, want 16-bit RGB", path, img)
	}
	for y := range m.H {
		for x := range m.W {
			c := rgb.RGBA64At(x+b.Min.X, y+b.Min.Y)
			k := 3 * (y*m.W + x)
			m.Pix[k], m.Pix[k+1], m.Pix[k+2] = colour.SRGB16ToLinear(c.R), colour.SRGB16ToLinear(c.G), colour.SRGB16ToLinear(c.B)
		}
	}
	return m
}

// render maps white-balanced camera RGB through toSRGB, 2^ev, RGBTone with
// DefaultCurve and the gamut compression: display-linear sRGB.
func render(cam Image, toSRGB colour.Mat3, ev float64) Image {
	out := Image{W: cam.W, H: cam.H, Pix: make([]float32, len(cam.Pix))}
	k := math.Exp2(ev)
	lum := colour.SRGB.ToXYZ[1]
	for i := range cam.W * cam.H {
		c := cam.cell(i)
		s := toSRGB.Apply([3]float64{c[0] * k, c[1] * k, c[2] * k})
		r := RGBTone(DefaultCurve, s)
		r = desaturateIntoCube(r, luminance(r, lum))
		out.Pix[3*i], out.Pix[3*i+1], out.Pix[3*i+2] = float32(r[0]), float32(r[1]), float32(r[2])
	}
	return out
}

// anchor builds the grids of d (white-balanced camera RGB) and returns the
// anchored exposure.
func anchor(t *testing.T, cam Image, toSRGB colour.Mat3, prev *Preview) (Exposure, Cells) {
	gw, gh := GridSize(cam.W, cam.H, GridWidth)
	lin := Image{W: cam.W, H: cam.H, Pix: make([]float32, len(cam.Pix))}
	for i := range cam.W * cam.H {
		s := toSRGB.Apply(cam.cell(i))
		lin.Pix[3*i], lin.Pix[3*i+1], lin.Pix[3*i+2] = float32(s[0]), float32(s[1]), float32(s[2])
	}
	// Clipped = any camera channel at the white level (LibRaw scales
	// the white level to 65535, i.e. 1.0).
	sg, _, err := Reduce(lin, gw, gh, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, clip, _ := Reduce(cam, gw, gh, 0.999)
	pg, err := prev.Grid(gw, gh)
	if err != nil {
		t.Fatal(err)
	}
	c := Cells{Scene: sg, Preview: pg, Clipped: clip, Lum: colour.SRGB.ToXYZ[1]}
	e, err := AnchorExposure(c, DefaultCurve, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e, c
}

func TestMeasureRealFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("real-file measurement")
	}
	for _, file := range []string{"canon_eos_6d.dng", "canond30_CRW.CRW"} {
		t.Run(file, func(t *testing.T) {
			path := filepath.Join(rawDir, file)
			// (i) today's default output.
			out := filepath.Join(t.TempDir(), "out.png")
			s := pipeline.DefaultSettings()
			s.Format = pipeline.PNG16
			if _, err := pipeline.ConvertFile(context.Background(), path, out, s); err != nil {
				t.Fatal(err)
			}
			today := readPNG16(t, out)

			d := decodeRaw(t, path, libraw.WBCamera, [4]float32{})
			prev, err := DecodePreview(d.thumb.Data, 0, 0, 0, d.cam.W, d.cam.H)
			if err != nil {
				t.Fatal(err)
			}
			dToday, err := ScorePreview(today, colour.SRGB, prev.Image, prev.Space)
			if err != nil {
				t.Fatal(err)
			}
			toSRGB := rgbCam(d.info)
			e, _ := anchor(t, d.cam, toSRGB, prev)
			ev := 0.0
			if e.Consistent && math.Abs(e.EV) >= MinApplyEV {
				ev = e.EV
			}
			dNew, _ := ScorePreview(render(d.cam, toSRGB, ev), colour.SRGB, prev.Image, prev.Space)
			dCurve, _ := ScorePreview(render(d.cam, toSRGB, 0), colour.SRGB, prev.Image, prev.Space)
			msg := fmt.Sprintf("%s: preview %d×%d %s (%s); cam_mul %.3f; anchor %v; mean ΔE2000 vs preview: today's default %.2f, DefaultCurve at 0 EV %.2f, DefaultCurve + anchored EV %.2f",
				file, prev.SourceW, prev.SourceH, prev.Space.Name, prev.SpaceSource, d.info.CamMul, e, dToday, dCurve, dNew)

			// (iii) white balance fitted to the preview, from unbalanced
			// camera RGB (user multipliers 1, 1, 1, 1).
			u := decodeRaw(t, path, libraw.WBUser, [4]float32{1, 1, 1, 1})
			gw, gh := GridSize(u.cam.W, u.cam.H, GridWidth)
			cg, clip, _ := Reduce(u.cam, gw, gh, 0.999)
			pg, _ := prev.Grid(gw, gh)
			wb, err := FitWB(cg, toSRGB, Cells{Preview: pg, Clipped: clip, Lum: colour.SRGB.ToXYZ[1]}, DefaultCurve, nil)
			if err != nil {
				t.Fatal(err)
			}
			bal := Image{W: u.cam.W, H: u.cam.H, Pix: make([]float32, len(u.cam.Pix))}
			for i := range u.cam.W * u.cam.H {
				for c := range 3 {
					bal.Pix[3*i+c] = u.cam.Pix[3*i+c] * float32(wb.Gains[c])
				}
			}
			ew, _ := anchor(t, bal, toSRGB, prev)
			evw := 0.0
			if ew.Consistent && math.Abs(ew.EV) >= MinApplyEV {
				evw = ew.EV
			}
			dWB, _ := ScorePreview(render(bal, toSRGB, evw), colour.SRGB, prev.Image, prev.Space)
			msg += fmt.Sprintf("; WB fitted to the preview: gains R/G %.3f B/G %.3f (residual %.3f, %d cells), anchor %v, ΔE2000 %.2f",
				wb.Gains[0], wb.Gains[2], wb.Residual, wb.Cells, ew, dWB)

			// (iv) the camera look, cross-validated.
			cl, err := FitCamera(cg, toSRGB, colour.SRGB, Cells{Preview: pg, Clipped: clip, Lum: colour.SRGB.ToXYZ[1]}, FitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			msg += fmt.Sprintf("; camera look: gains %.3f EV %+.2f saturation %.2f, cross-validated ΔE2000 %.2f (fit half %.2f)",
				cl.Gains, cl.EV, cl.Saturation, cl.Residual, cl.FitResidual)
			t.Log(msg)
			for _, v := range []float64{dToday, dNew, dCurve, dWB, cl.Residual} {
				if math.IsNaN(v) || v <= 0 {
					t.Fatalf("implausible score in %s", msg)
				}
			}
		})
	}
}
