package look

import (
	"math"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/colour"
)

// TestFitCameraRecoversALook: a preview rendered with another curve (a
// harder toe, brighter mid grey), +0.3 EV, saturation 1.25 and warm gains
// is fitted to a cross-validated residual under 1 ΔE2000, with the
// saturation within 0.1 and the gains within 2 %; the default look scores
// clearly worse on the same cells.
func TestFitCameraRecoversALook(t *testing.T) {
	scene := synthScene(256, 170, 7)
	g := [3]float64{1.9, 1, 1.5}
	camCurve := NewParametric(1.35, 0.18, 0.46, 1)
	prev := renderGrid(scene, 0.3, 1.25, camCurve)
	camera := toCamera(scene, g)
	lum := colour.SRGB.ToXYZ[1]
	l, err := FitCamera(camera, camToSRGB, colour.SRGB, Cells{Preview: prev, Lum: lum}, FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fit: gains %.3f EV %+.2f sat %.2f residual %.2f (fit %.2f) on %d cells", l.Gains, l.EV, l.Saturation, l.Residual, l.FitResidual, l.Cells)
	if l.Residual > 1 || !l.Acceptable() {
		t.Errorf("cross-validated residual %.2f, want ≤ 1", l.Residual)
	}
	if math.Abs(l.Saturation-1.25) > 0.1 {
		t.Errorf("saturation %.2f, want 1.25 ± 0.1", l.Saturation)
	}
	for _, i := range []int{0, 2} {
		if math.Abs(l.Gains[i]/g[i]-1) > 0.02 {
			t.Errorf("gains %.3f, want %.3f", l.Gains, g)
		}
	}
	def := CameraLook{Gains: g, Curve: mustTable(t, DefaultCurve), Saturation: 1}
	var sum float64
	mask := CVMask(scene.W, scene.H)
	n := 0
	for k := range scene.W * scene.H {
		if !mask[k] {
			r := def.Render(camToSRGB, colour.SRGB, lum, camera.cell(k))
			sum += colour.DeltaE2000(colour.SRGB.LinearToLab(r), colour.SRGB.LinearToLab(prev.cell(k)))
			n++
		}
	}
	if d := sum / float64(n); d < 2*l.Residual+1 {
		t.Errorf("the default look scores %.2f against the fit's %.2f: the test does not show a fit", d, l.Residual)
	}
}

// mustTable samples a curve into a Table (for a CameraLook built by hand).
func mustTable(t *testing.T, c Curve) *Table {
	var x, y []float64
	for i := 0; i <= 64; i++ {
		v := math.Pow(float64(i)/64, 3)
		x, y = append(x, v), append(y, c.Apply(v))
	}
	tab, err := NewTable(x, y)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// TestFitCameraFallsBack: a preview of another picture cannot be fitted;
// the residual is above MaxCameraResidual.
func TestFitCameraFallsBack(t *testing.T) {
	scene := synthScene(256, 170, 8)
	other := renderGrid(synthScene(256, 170, 9), 0, 1, DefaultCurve)
	l, err := FitCamera(toCamera(scene, [3]float64{2, 1, 1.4}), camToSRGB, colour.SRGB, Cells{Preview: other, Lum: colour.SRGB.ToXYZ[1]}, FitOptions{Gains: [3]float64{2, 1, 1.4}})
	if err != nil {
		t.Fatal(err)
	}
	if l.Acceptable() {
		t.Fatalf("unrelated preview fitted with residual %.2f", l.Residual)
	}
}

func TestIsotonic(t *testing.T) {
	got := isotonic([]float64{1, 3, 2, 4, 0, 5}, []float64{1, 1, 1, 1, 3, 1})
	// Pooling: [3,2] → 2.5 (w 2); then 4 > 2.5 ok; 0 (w 3) < 4 → pool
	// [4,0] = (4+0)/4 = 1 (w 4) < 2.5 → pool [2.5 w2, 1 w4] = 1.5 (w 6)
	// ≥ 1 ok; 5 ok.
	want := []float64{1, 1.5, 1.5, 1.5, 1.5, 5}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("isotonic = %v, want %v", got, want)
		}
	}
}

// TestBlendCurve: weight 0 is DefaultCurve (within 0.002 display-linear
// from 2^-10 to 1), weight 1 the fitted curve, and a blend lies between
// them in L*.
func TestBlendCurve(t *testing.T) {
	fitted, err := NewTable([]float64{0, 0.1, 0.5, 1}, []float64{0, 0.1, 0.6, 1})
	if err != nil {
		t.Fatal(err)
	}
	b0, err := blendCurve(fitted, 0)
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := blendCurve(fitted, 1)
	bh, _ := blendCurve(fitted, 0.5)
	for e := -10.0; e <= 0; e += 0.05 {
		x := math.Exp2(e)
		d, f := DefaultCurve.Apply(x), fitted.Apply(x)
		if math.Abs(b0.Apply(x)-d) > 0.002 || math.Abs(b1.Apply(x)-f) > 0.002 {
			t.Fatalf("x %.4g: blend 0 %.4f (default %.4f), blend 1 %.4f (fitted %.4f)", x, b0.Apply(x), d, b1.Apply(x), f)
		}
		if l := lightness(bh.Apply(x)); l < min(lightness(d), lightness(f))-0.2 || l > max(lightness(d), lightness(f))+0.2 {
			t.Fatalf("x %.4g: half blend L* %.2f outside %.2f..%.2f", x, l, lightness(d), lightness(f))
		}
	}
}

// TestFitCameraScoresEveryCell: the cross-validated residual is the mean
// ΔE2000 of the fitted look's render against the preview over every cell
// of the scoring half, as ScorePreview scores every cell of the output:
// cells clipped in the raw (here one in seven, with a preview far from
// the render) and dark cells count too, and the fit does not use them.
func TestFitCameraScoresEveryCell(t *testing.T) {
	scene := synthScene(256, 170, 11)
	g := [3]float64{1.9, 1, 1.5}
	prev := renderGrid(scene, 0.3, 1.25, NewParametric(1.35, 0.18, 0.46, 1))
	camera := toCamera(scene, g)
	n := scene.W * scene.H
	clipped := make([]float32, n)
	for k := 0; k < n; k += 7 {
		clipped[k] = 0.5
		prev.Pix[3*k], prev.Pix[3*k+1], prev.Pix[3*k+2] = 1, 0.2, 1
	}
	lum := colour.SRGB.ToXYZ[1]
	l, err := FitCamera(camera, camToSRGB, colour.SRGB, Cells{Preview: prev, Clipped: clipped, Lum: lum}, FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mask := CVMask(scene.W, scene.H)
	var sum float64
	cnt := 0
	for k := range n {
		if mask[k] {
			continue
		}
		r := l.Render(camToSRGB, colour.SRGB, lum, camera.cell(k))
		sum += colour.DeltaE2000(colour.SRGB.LinearToLab(r), colour.SRGB.LinearToLab(clampCube(prev.cell(k))))
		cnt++
	}
	if want := sum / float64(cnt); math.Abs(l.Residual-want) > 1e-9 || l.Cells != cnt {
		t.Errorf("residual %.4f on %d cells, want %.4f on every scoring cell (%d)", l.Residual, l.Cells, want, cnt)
	}
	if math.Abs(l.Saturation-1.25) > 0.1 {
		t.Errorf("saturation %.2f, want 1.25 ± 0.1: the clipped cells pulled the fit", l.Saturation)
	}
}

// TestArgminFirst: argminFirst finds the first lowest value, as a plain
// loop keeping strictly lower values does, from every seed, with ties and
// with an f that stops (+Inf) whenever its value is at least the bound.
func TestArgminFirst(t *testing.T) {
	for _, vals := range [][]float64{{3, 1, 2, 1, 5}, {2, 2, 2}, {5, 4, 3, 2, 1}, {1, 2, 3}, {4, 1, 1, 0.5, 0.5, 7}} {
		want, wantV := -1, math.Inf(1)
		for i, v := range vals {
			if v < wantV {
				want, wantV = i, v
			}
		}
		for seed := range vals {
			got, gotV := argminFirst(len(vals), seed, func(i int, bound float64) float64 {
				if vals[i] >= bound {
					return math.Inf(1)
				}
				return vals[i]
			})
			if got != want || gotV != wantV {
				t.Errorf("%v seed %d: %d (%g), want %d (%g)", vals, seed, got, gotV, want, wantV)
			}
		}
	}
}
