package look

import (
	"math"
	"math/rand"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/colour"
)

// TestReduceSub: the sub-cells partition each cell of Reduce's grid, so
// their weighted mean is the cell's mean; the sub-cell count is the
// largest that fits, at most MaxSub.
func TestReduceSub(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	m := Image{W: 2176, H: 1448, Pix: make([]float32, 3*2176*1448)}
	for i := range m.Pix {
		m.Pix[i] = rng.Float32()
	}
	for _, tc := range []struct{ gw, gh, max, want int }{{256, 170, 4, 4}, {256, 170, 16, 8}, {1000, 700, 4, 2}} {
		g, err := ReduceSub(m, tc.gw, tc.gh, tc.max)
		if err != nil {
			t.Fatal(err)
		}
		if g.Sub != tc.want {
			t.Errorf("%d×%d, at most %d: %d sub-cells a side, want %d", tc.gw, tc.gh, tc.max, g.Sub, tc.want)
		}
		cells, _, _ := Reduce(m, tc.gw, tc.gh, 0)
		for k := range tc.gw * tc.gh {
			var s [3]float64
			var ws float64
			g.each(k, func(v [3]float64, w float64) {
				for i := range 3 {
					s[i] += w * v[i]
				}
				ws += w
			})
			c := cells.cell(k)
			if math.Abs(ws-1) > 1e-9 || math.Abs(s[0]-c[0]) > 1e-5 || math.Abs(s[2]-c[2]) > 1e-5 {
				t.Fatalf("%d×%d cell %d: sub-cells %v (weights %g), cell %v", tc.gw, tc.gh, k, s, ws, c)
			}
		}
	}
}

// TestFitCameraRendersSubCells: where each cell holds bright and dark
// pixels (here a 4×4-pixel checkerboard of two levels 3 EV apart, some
// clipped), the conversion's cell is the mean of the rendered pixels, not
// the render of the mean. With the sub-grid the fit's residual is that
// of the pixels rendered and reduced (what ScorePreview measures) and
// small; rendering the cell means instead scores cells the conversion
// does not write.
func TestFitCameraRendersSubCells(t *testing.T) {
	const gw, gh, px = 128, 85, 4
	base := synthScene(gw, gh, 13)
	full := Image{W: gw * px, H: gh * px, Pix: make([]float32, 3*gw*gh*px*px)}
	for y := range full.H {
		for x := range full.W {
			v := base.cell((y/px)*gw + x/px)
			f := 2.5
			if (x+y)%2 == 1 {
				f = 2.5 / 8
			}
			for i := range 3 {
				full.Pix[3*(y*full.W+x)+i] = float32(v[i] * f)
			}
		}
	}
	g := [3]float64{1.9, 1, 1.5}
	lum := colour.SRGB.ToXYZ[1]
	camFull := toCamera(full, g)
	// The camera's rendition of every pixel, reduced (the preview grid).
	prevFull := renderGrid(full, 0.2, 1.2, NewParametric(1.35, 0.18, 0.46, 1))
	prev, _, _ := Reduce(prevFull, gw, gh, 0)
	camera, _, _ := Reduce(camFull, gw, gh, 0)
	sub, err := ReduceSub(camFull, gw, gh, MaxSub)
	if err != nil {
		t.Fatal(err)
	}
	c := Cells{Preview: prev, Lum: lum}
	withSub, err := FitCamera(camera, camToSRGB, colour.SRGB, c, FitOptions{Gains: g, Sub: sub})
	if err != nil {
		t.Fatal(err)
	}
	means, err := FitCamera(camera, camToSRGB, colour.SRGB, c, FitOptions{Gains: g})
	if err != nil {
		t.Fatal(err)
	}
	mask := CVMask(gw, gh)
	for i := range mask {
		mask[i] = !mask[i]
	}
	// What the conversion writes with a fit: every pixel rendered, then
	// reduced, scored on the scoring half.
	written := func(l CameraLook) float64 {
		out := Image{W: full.W, H: full.H, Pix: make([]float32, len(full.Pix))}
		for k := range full.W * full.H {
			r := l.Render(camToSRGB, colour.SRGB, lum, camFull.cell(k))
			out.Pix[3*k], out.Pix[3*k+1], out.Pix[3*k+2] = float32(r[0]), float32(r[1]), float32(r[2])
		}
		og, _, _ := Reduce(out, gw, gh, 0)
		d, err := MeanDeltaE2000(og, colour.SRGB, prev, colour.SRGB, mask)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	ws, wm := written(withSub), written(means)
	t.Logf("sub-cells: residual %.3f, written %.3f; cell means: residual %.3f, written %.3f", withSub.Residual, ws, means.Residual, wm)
	if math.Abs(withSub.Residual-ws) > 0.01 {
		t.Errorf("sub-cell fit's residual %.3f, what the conversion writes scores %.3f", withSub.Residual, ws)
	}
	if math.Abs(means.Residual-wm) < 0.3 {
		t.Errorf("cell-mean fit's residual %.3f, written %.3f: the test does not show the difference", means.Residual, wm)
	}
}
