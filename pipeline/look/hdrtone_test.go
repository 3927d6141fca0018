package look

import (
	"math"
	"testing"
)

// TestHDRTone: the HDR rendition of the default curve is the curve up to
// its knee (where its log-log slope is 1, x = (0.6·K)^(1/1.6) ≈ 0.194) and
// Gain·x above, continuous and never below the curve; a pixel all above
// the knee is only scaled; a concave curve has its knee at mid grey.
func TestHDRTone(t *testing.T) {
	c := DefaultCurve
	h := NewHDRTone(c)
	want := math.Pow(0.6*c.K, 1/1.6)
	if math.Abs(float64(h.Knee)-want) > 1e-3 {
		t.Errorf("knee %.4f, want %.4f (log-log slope 1)", h.Knee, want)
	}
	if g := c.Apply(want) / want; math.Abs(float64(h.Gain)-g) > 1e-4 {
		t.Errorf("gain %.4f, want %.4f", h.Gain, g)
	}
	for _, x := range []float64{0.002, 0.01, 0.05, 0.1, 0.18, 0.194, 0.3, 0.5, 0.9, 1, 2, 8} {
		px := []float32{float32(x), float32(x), float32(x)}
		h.Rows(px)
		got, sdr := float64(px[1]), c.Apply(x)
		switch {
		case x <= float64(h.Knee) && math.Abs(got-sdr) > 1e-4:
			t.Errorf("H(%g) = %.5f, want the curve's %.5f below the knee", x, got, sdr)
		case x > float64(h.Knee) && math.Abs(got-float64(h.Gain)*x) > 1e-5*x:
			t.Errorf("H(%g) = %.5f, want %.5f above the knee", x, got, float64(h.Gain)*x)
		case got < sdr-1e-4:
			t.Errorf("H(%g) = %.5f below the SDR curve's %.5f", x, got, sdr)
		}
	}
	// Continuity at the knee.
	a := []float32{h.Knee * 0.999, 0, 0}
	b := []float32{h.Knee * 1.001, 0, 0}
	h.Rows(a)
	h.Rows(b)
	if d := math.Abs(float64(b[0]-a[0])) / float64(a[0]); d > 0.004 {
		t.Errorf("H jumps %.4f relative at the knee", d)
	}
	// Above the knee the hue is the scene's: channels scaled alike.
	p := []float32{3, 1.5, 0.6}
	h.Rows(p)
	for i, v := range []float32{3, 1.5, 0.6} {
		if math.Abs(float64(p[i]-h.Gain*v)) > 1e-5 {
			t.Errorf("channel %d %.5f, want %.5f", i, p[i], h.Gain*v)
		}
	}
	// Negative and NaN count as 0.
	n := []float32{-1, float32(math.NaN()), 0.5}
	h.Rows(n)
	if n[0] != 0 || n[1] != 0 {
		t.Errorf("negative and NaN gave %v", n)
	}
	// A curve already compressing at mid grey keeps mid grey's gain.
	tab, err := NewTable([]float64{0, 0.18, 1}, []float64{0, 0.5, 1})
	if err != nil {
		t.Fatal(err)
	}
	if h := NewHDRTone(tab); h.Knee != 0.18 || math.Abs(float64(h.Gain)-0.5/0.18) > 1e-4 {
		t.Errorf("concave curve: knee %.4f gain %.4f, want 0.18, %.4f", h.Knee, h.Gain, 0.5/0.18)
	}
}
