package look

import (
	"math"
	"math/rand"
	"runtime"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/colour"
)

// camToSRGB is a plausible camera matrix (white-balanced camera RGB →
// linear sRGB, rows sum to 1), the shape of LibRaw's rgb_cam.
var camToSRGB = colour.Mat3{{1.7, -0.55, -0.15}, {-0.2, 1.5, -0.3}, {0.02, -0.45, 1.43}}

// synthScene returns a w×h grid of scene-linear colours in sRGB: random
// luminance from −7 to +0.5 EV around 18 % grey, random moderate chroma,
// smooth in 8×8 blocks like a photograph.
func synthScene(w, h int, seed int64) Image {
	rng := rand.New(rand.NewSource(seed))
	m := Image{W: w, H: h, Pix: make([]float32, 3*w*h)}
	for by := 0; by < h; by += 4 {
		for bx := 0; bx < w; bx += 4 {
			y := 0.18 * math.Exp2(-7+7.5*rng.Float64())
			c := [3]float64{1 + 0.6*(rng.Float64()-0.5), 1 + 0.6*(rng.Float64()-0.5), 1 + 0.6*(rng.Float64()-0.5)}
			l := luminance(c, colour.SRGB.ToXYZ[1])
			for yy := by; yy < min(by+4, h); yy++ {
				for xx := bx; xx < min(bx+4, w); xx++ {
					k := 3 * (yy*w + xx)
					for i := range 3 {
						m.Pix[k+i] = float32(c[i] / l * y * (1 + 0.01*rng.NormFloat64()))
					}
				}
			}
		}
	}
	return m
}

// renderGrid renders a scene grid (sRGB, scene-linear) as a camera would:
// exposure ev, saturation sat, RGBTone with curve, into the cube.
func renderGrid(scene Image, ev, sat float64, curve Curve) Image {
	lum := colour.SRGB.ToXYZ[1]
	out := Image{W: scene.W, H: scene.H, Pix: make([]float32, len(scene.Pix))}
	for k := range scene.W * scene.H {
		r := renderCell(colour.Identity3, renderModel{lum: lum}, scene.cell(k), [3]float64{1, 1, 1}, ev, sat, curve)
		out.Pix[3*k], out.Pix[3*k+1], out.Pix[3*k+2] = float32(r[0]), float32(r[1]), float32(r[2])
	}
	return out
}

// toCamera turns a white-balanced sRGB scene grid into camera RGB that
// needs gains g: camera = diag(1/g)·camToSRGB⁻¹·scene.
func toCamera(scene Image, g [3]float64) Image {
	inv, _ := camToSRGB.Inverse()
	out := Image{W: scene.W, H: scene.H, Pix: make([]float32, len(scene.Pix))}
	for k := range scene.W * scene.H {
		c := inv.Apply(scene.cell(k))
		for i := range 3 {
			out.Pix[3*k+i] = float32(c[i] / g[i])
		}
	}
	return out
}

func TestAnchorExposureRecoversOffset(t *testing.T) {
	scene := synthScene(256, 170, 1)
	for _, ev := range []float64{-1.0, -0.3, 0, 0.4, 1.2} {
		prev := renderGrid(scene, ev, 1, DefaultCurve)
		e, err := AnchorExposure(Cells{Scene: scene, Preview: prev, Lum: colour.SRGB.ToXYZ[1]}, DefaultCurve, nil)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(e.EV-ev) > 0.05 || !e.Consistent {
			t.Errorf("offset %+.2f EV: got %v", ev, e)
		}
	}
}

// TestAnchorExposureSkipsClippedCells: cells clipped in the raw show a
// preview far brighter than the scene (the camera's highlight handling);
// marked clipped they must not move the estimate; unmarked they do.
func TestAnchorExposureSkipsClippedCells(t *testing.T) {
	scene := synthScene(256, 170, 2)
	prev := renderGrid(scene, 0.5, 1, DefaultCurve)
	n := scene.W * scene.H
	clipped := make([]float32, n)
	for k := 0; k < n; k++ { // 60 % of the cells: preview two stops brighter
		if k%5 >= 3 {
			continue
		}
		clipped[k] = 1
		for i := range 3 {
			prev.Pix[3*k+i] = float32(DefaultCurve.Apply(math.Exp2(2.5) * float64(scene.Pix[3*k+i])))
		}
	}
	c := Cells{Scene: scene, Preview: prev, Clipped: clipped, Lum: colour.SRGB.ToXYZ[1]}
	e, _ := AnchorExposure(c, DefaultCurve, nil)
	if math.Abs(e.EV-0.5) > 0.05 {
		t.Errorf("with the clip mask: %v, want +0.50", e)
	}
	c.Clipped = nil
	if e, _ := AnchorExposure(c, DefaultCurve, nil); math.Abs(e.EV-0.5) <= 0.05 {
		t.Errorf("without the clip mask the estimate %v is not moved: the test does not test the mask", e)
	}
}

func TestAnchorExposureClampAndConsistency(t *testing.T) {
	scene := synthScene(256, 170, 3)
	lum := colour.SRGB.ToXYZ[1]
	e, _ := AnchorExposure(Cells{Scene: scene, Preview: renderGrid(scene, 2.2, 1, DefaultCurve), Lum: lum}, DefaultCurve, nil)
	if e.EV != MaxAnchorEV || math.Abs(e.Raw-2.2) > 0.05 {
		t.Errorf("+2.2 EV: %v, want clamped to +1.5 with median 2.2", e)
	}
	// A preview of another picture: the ratios scatter, not consistent.
	e, _ = AnchorExposure(Cells{Scene: scene, Preview: renderGrid(synthScene(256, 170, 99), 0, 1, DefaultCurve), Lum: lum}, DefaultCurve, nil)
	if e.Consistent || e.Spread <= MaxAnchorSpread {
		t.Errorf("unrelated preview: %v, want inconsistent", e)
	}
	// Too few cells.
	small := synthScene(6, 4, 4)
	e, _ = AnchorExposure(Cells{Scene: small, Preview: renderGrid(small, 0, 1, DefaultCurve), Lum: lum}, DefaultCurve, nil)
	if e.Consistent {
		t.Errorf("%d cells: %v, want inconsistent", e.Cells, e)
	}
}

// TestFitWBWarmPreview: a grey-and-colour scene under tungsten whose
// camera JPEG kept the warmth: the gains that produced the preview come
// back within 2 %, whatever the exposure.
func TestFitWBWarmPreview(t *testing.T) {
	scene := synthScene(256, 170, 5)
	for _, g := range [][3]float64{{1.20, 1, 1.93}, {2.0, 1, 1.4}, {0.8, 1, 2.6}} {
		camera := toCamera(scene, g)
		prev := renderGrid(scene, 0.3, 1, DefaultCurve)
		fit, err := FitWB(camera, camToSRGB, Cells{Preview: prev, Lum: colour.SRGB.ToXYZ[1]}, DefaultCurve, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range []int{0, 2} {
			if math.Abs(fit.Gains[i]/g[i]-1) > 0.02 {
				t.Errorf("gains %v: fitted %v (residual %.4f, %d cells)", g, fit.Gains, fit.Residual, fit.Cells)
			}
		}
	}
}

func TestFitWBNeedsCells(t *testing.T) {
	scene := synthScene(4, 4, 6)
	if _, err := FitWB(toCamera(scene, [3]float64{2, 1, 1.5}), camToSRGB, Cells{Preview: renderGrid(scene, 0, 1, DefaultCurve), Lum: colour.SRGB.ToXYZ[1]}, DefaultCurve, nil); err == nil {
		t.Fatal("a 16-cell grid gave a fit")
	}
}

// TestFitWBAllocates: FitWB on a 256×170 grid (43 520 cells, the grid of
// a 256-cell-wide preview) allocates under 1 MiB: the cells of its search
// (120 bytes each) are made for the wbMaxCells it keeps, not for every
// usable cell. A white-balance step's estimate counts the raw data's
// copy and its grids, not the search (whiteBalanceCost).
func TestFitWBAllocates(t *testing.T) {
	scene := synthScene(256, 170, 5)
	camera := toCamera(scene, [3]float64{1.2, 1, 1.9})
	c := Cells{Preview: renderGrid(scene, 0.3, 1, DefaultCurve), Lum: colour.SRGB.ToXYZ[1], Threads: 1}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fit, err := FitWB(camera, camToSRGB, c, DefaultCurve, nil)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if fit.Cells != wbMaxCells {
		t.Fatalf("%d cells fitted, want %d", fit.Cells, wbMaxCells)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("FitWB allocated %d bytes for a 256×170 grid, want under 1 MiB", got)
	}
}
