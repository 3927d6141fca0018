package lens

import (
	"context"
	"math"
	"runtime"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/internal/lensfun"
)

// TestLensNodePositions: the source positions interpolated between the
// grid of nodes (Nodes, every Step pixels) are within 0.01 px
// of lensfun's own per-pixel positions, for the 6D's EF 24-105 at 24 and
// 65 mm (distortion and TCA from lensfun's database) at 5472×3648 and
// the test profile's strong barrel (k1 = −0.03).
func TestLensNodePositions(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	db, err := lensfun.Open("../../testdata/lensfun")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cases := []struct {
		maker, model, lens string
		focal, aperture    float64
		w, h               int
	}{
		{"Canon", "Canon EOS 6D", "EF24-105mm f/4L IS USM", 24, 4, 5472, 3648},
		{"Canon", "Canon EOS 6D", "EF24-105mm f/4L IS USM", 65, 5.6, 5472, 3648},
		{"Rawbatch", "Lens Chart", "Rawbatch Barrel 24mm f/2.8", 24, 2.8, 1201, 803},
	}
	for _, c := range cases {
		cam, err := db.FindCamera(c.maker, c.model)
		if err != nil {
			t.Fatal(err)
		}
		lens, err := db.FindLens(cam, "", c.lens)
		if err != nil {
			t.Fatal(err)
		}
		m, err := db.NewModifier(lens, cam.CropFactor, c.w, c.h, c.focal, c.aperture, 1000, lensfun.Distortion|lensfun.TCA, true)
		if err != nil {
			t.Fatal(err)
		}
		if m.Applied&lensfun.Distortion == 0 {
			t.Fatalf("%s at %v mm: no distortion correction (%v)", c.lens, c.focal, m.Applied)
		}
		g, err := NewNodes(c.w, c.h, m.Points)
		if err != nil {
			t.Fatal(err)
		}
		exact := make([]float32, c.w*6)
		sx, sy := make([]float32, c.w), make([]float32, c.w)
		worst, moved := 0.0, 0.0
		for y := 0; y < c.h; y += 7 {
			if err := m.Coordinates(exact, y, 1); err != nil {
				t.Fatal(err)
			}
			for ch := 0; ch < 3; ch++ {
				g.row(y, ch, sx, sy)
				for x := 0; x < c.w; x++ {
					ex, ey := float64(exact[x*6+2*ch]), float64(exact[x*6+2*ch+1])
					worst = max(worst, math.Hypot(float64(sx[x])-ex, float64(sy[x])-ey))
					moved = max(moved, math.Hypot(ex-float64(x), ey-float64(y)))
				}
			}
		}
		m.Close()
		t.Logf("%s at %v mm, %d×%d: interpolated positions within %.4f px of lensfun's (largest correction %.1f px)", c.lens, c.focal, c.w, c.h, worst, moved)
		if worst > 0.01 {
			t.Errorf("%s at %v mm: interpolated positions up to %.4f px from lensfun's, want ≤ 0.01", c.lens, c.focal, worst)
		}
		if moved < 1 {
			t.Errorf("%s at %v mm: the correction moves pixels by at most %.2f px: the test shows nothing", c.lens, c.focal, moved)
		}
	}
}

// TestLensDevignetteRows: the vignetting gains interpolated between every
// Step-th row (NodeGainsCompact, applied by Correct) are within 0.05 % of lensfun's gains
// computed on every row, for the EF 24-105 at 24 mm f/4 (strong
// vignetting) on the 6D's 5472×3648.
func TestLensDevignetteRows(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	db, err := lensfun.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cam, err := db.FindCamera("Canon", "Canon EOS 6D")
	if err != nil {
		t.Fatal(err)
	}
	lens, err := db.FindLens(cam, "", "EF24-105mm f/4L IS USM")
	if err != nil {
		t.Fatal(err)
	}
	const w, h = 5472, 3648
	m, err := db.NewModifier(lens, cam.CropFactor, w, h, 24, 4, 1000, lensfun.Vignetting, false)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Applied&lensfun.Vignetting == 0 {
		t.Fatal("no vignetting correction")
	}
	ones := func() []float32 {
		p := make([]float32, w*h*3)
		for i := range p {
			p[i] = 1
		}
		return p
	}
	got, want := ones(), ones()
	gains, gc, ys, err := NodeGainsCompact(m.Devignette, w, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := Correct(context.Background(), got, w, h, gains, gc, ys, nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Devignette(want, 0, h); err != nil {
		t.Fatal(err)
	}
	worst, corner := 0.0, float64(want[0])
	for i := range got {
		worst = max(worst, math.Abs(float64(got[i]-want[i]))/float64(want[i]))
	}
	t.Logf("gains within %.2g (relative) of lensfun's per-row gains (corner gain %.3f)", worst, corner)
	if worst > 5e-4 || corner < 1.2 {
		t.Errorf("interpolated gains up to %.2g off (relative; want ≤ 5e-4); corner gain %.3f (want a strong vignette, ≥ 1.2)", worst, corner)
	}
}
