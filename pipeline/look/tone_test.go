package look

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

func TestDefaultCurveControlPoints(t *testing.T) {
	c := DefaultCurve
	for _, p := range []struct{ x, y, tol float64 }{
		{0, 0, 0}, {0.01, 0.0058, 0.0001}, {0.05, 0.0721, 0.0001}, {0.18, 0.39, 1e-12}, {0.5, 0.821, 0.001}, {1, 1, 1e-12},
	} {
		if got := c.Apply(p.x); math.Abs(got-p.y) > p.tol {
			t.Errorf("f(%g) = %.5f, want %.4f", p.x, got, p.y)
		}
	}
	if s := (c.Apply(1) - c.Apply(1-1e-6)) / 1e-6; math.Abs(s-0.172) > 0.002 {
		t.Errorf("slope at white %.3f, want ≈ 0.172", s)
	}
}

// TestCurvesMonotoneC1Invertible checks monotonicity, C¹ (no jump of the
// numerical derivative) and Inverse∘Apply = id for the default curve and a
// ProfileToneCurve table.
func TestCurvesMonotoneC1Invertible(t *testing.T) {
	tab, err := ProfileToneCurve([]float32{0, 0, 0.05, 0.1, 0.18, 0.42, 0.5, 0.78, 0.8, 0.95, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]Curve{"default": DefaultCurve, "table": tab} {
		const h = 1e-5
		prev, prevSlope := c.Apply(1e-3-h), -1.0
		for x := 1e-3; x < 1; x += h {
			y := c.Apply(x)
			if y < prev {
				t.Fatalf("%s: f(%g) = %g < f(%g) = %g", name, x, y, x-h, prev)
			}
			s := (y - prev) / h
			if prevSlope >= 0 && math.Abs(s-prevSlope) > 0.01 {
				t.Fatalf("%s: slope jumps from %g to %g at %g", name, prevSlope, s, x)
			}
			prev, prevSlope = y, s
		}
		for _, x := range []float64{0.001, 0.02, 0.18, 0.33, 0.7, 0.99} {
			if got := c.Inverse(c.Apply(x)); math.Abs(got-x) > 1e-9 {
				t.Errorf("%s: Inverse(Apply(%g)) = %g", name, x, got)
			}
		}
	}
	for i := range tab.X {
		if got := tab.Apply(tab.X[i]); math.Abs(got-tab.Y[i]) > 1e-12 {
			t.Errorf("table misses its point %d: %g, want %g", i, got, tab.Y[i])
		}
	}
	if _, err := ProfileToneCurve([]float32{0, 0, 0.5, 0.6, 0.4, 0.7, 1, 1}); err == nil {
		t.Error("a table with decreasing x was accepted")
	}
}

func TestRGBToneKeepsHueAndInverts(t *testing.T) {
	for _, rgb := range [][3]float64{{0.3, 0.1, 0.05}, {0.02, 0.5, 0.2}, {0.18, 0.18, 0.18}, {0.6, 0.9, 0.95}, {0.1, 0.1, 0.4}} {
		o := RGBTone(DefaultCurve, rgb)
		hi, mid, lo := order3(rgb)
		if o[hi] != DefaultCurve.Apply(rgb[hi]) || o[lo] != DefaultCurve.Apply(rgb[lo]) {
			t.Errorf("%v → %v: largest and smallest not through the curve", rgb, o)
		}
		if rgb[hi] > rgb[lo] {
			before := (rgb[mid] - rgb[lo]) / (rgb[hi] - rgb[lo])
			after := (o[mid] - o[lo]) / (o[hi] - o[lo])
			if math.Abs(before-after) > 1e-12 {
				t.Errorf("%v → %v: middle fraction %g became %g", rgb, o, before, after)
			}
		}
		back := InverseRGBTone(DefaultCurve, o)
		for c := range 3 {
			if math.Abs(back[c]-rgb[c]) > 1e-9 {
				t.Errorf("InverseRGBTone(RGBTone(%v)) = %v", rgb, back)
			}
		}
	}
}

// TestTableSegments: Table.Apply's bucketed segment search gives what the
// binary search of the points gives (the Hermite value on the segment of
// the last point below x), at the points, between them and at random x,
// for a curve with points crowded near 0 and one with few.
func TestTableSegments(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	xs, ys := []float64{0}, []float64{0}
	for e := -10.0; e < 0; e += 0.25 {
		xs, ys = append(xs, math.Exp2(e)), append(ys, math.Pow(math.Exp2(e), 0.45))
	}
	xs, ys = append(xs, 1), append(ys, 1)
	dense, err := NewTable(xs, ys)
	if err != nil {
		t.Fatal(err)
	}
	sparse, err := NewTable([]float64{0, 0.3, 1}, []float64{0, 0.5, 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range []*Table{dense, sparse} {
		binary := func(x float64) float64 {
			n := len(tb.X)
			if x <= tb.X[0] {
				return tb.Y[0]
			}
			if x >= tb.X[n-1] {
				return tb.Y[n-1]
			}
			i := sort.SearchFloat64s(tb.X, x) - 1
			h := tb.X[i+1] - tb.X[i]
			s := (x - tb.X[i]) / h
			s2, s3 := s*s, s*s*s
			return (2*s3-3*s2+1)*tb.Y[i] + (s3-2*s2+s)*h*tb.m[i] + (-2*s3+3*s2)*tb.Y[i+1] + (s3-s2)*h*tb.m[i+1]
		}
		var probe []float64
		for _, x := range tb.X {
			probe = append(probe, x, math.Nextafter(x, 2), math.Nextafter(x, -1))
		}
		for range 100000 {
			probe = append(probe, rng.Float64(), math.Exp2(-14*rng.Float64()))
		}
		for _, x := range probe {
			if got, want := tb.Apply(x), binary(x); got != want {
				t.Fatalf("Apply(%g) = %.17g, binary search %.17g", x, got, want)
			}
		}
	}
}
