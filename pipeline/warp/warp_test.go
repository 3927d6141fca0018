package warp

import (
	"math"
	"testing"
)

func TestKeysWeights(t *testing.T) {
	for _, f := range []float32{0, 0.1, 0.25, 0.5, 0.75, 0.99} {
		w0, w1, w2, w3 := keys4(f)
		if s := w0 + w1 + w2 + w3; math.Abs(float64(s-1)) > 1e-6 {
			t.Errorf("f=%v: weights sum to %v", f, s)
		}
		ff := float64(f)
		want := []float64{Keys(1 + ff), Keys(ff), Keys(1 - ff), Keys(2 - ff)}
		for i, w := range []float32{w0, w1, w2, w3} {
			if math.Abs(float64(w)-want[i]) > 1e-6 {
				t.Errorf("f=%v tap %d: %v, kernel gives %v", f, i, w, want[i])
			}
		}
	}
	if Keys(0) != 1 || Keys(1) != 0 || Keys(2) != 0 {
		t.Errorf("Keys(0,1,2) = %v %v %v, want 1 0 0", Keys(0), Keys(1), Keys(2))
	}
}

// A quadratic surface moved by a sub-pixel shift per channel comes out
// exactly (Keys a = −0.5 reproduces degree-2 polynomials), away from the
// replicated border.
func TestRemapReproducesQuadratic(t *testing.T) {
	const w, h, c = 40, 30, 3
	f := func(x, y float64, ch int) float64 {
		return 0.01*x*x - 0.02*x*y + 0.005*y*y + 0.3*x - float64(ch)*0.1*y + 2
	}
	src := make([]float32, w*h*c)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for ch := 0; ch < c; ch++ {
				src[(y*w+x)*c+ch] = float32(f(float64(x), float64(y), ch))
			}
		}
	}
	shift := [3][2]float32{{0.3, -0.45}, {0, 0}, {-0.7, 0.2}}
	out := Remap(src, w, h, c, w, h, func(y, ch int, sx, sy []float32) {
		for i := range sx {
			sx[i] = float32(i) + shift[ch][0]
			sy[i] = float32(y) + shift[ch][1]
		}
	})
	worst := 0.0
	for y := 3; y < h-3; y++ {
		for x := 3; x < w-3; x++ {
			for ch := 0; ch < c; ch++ {
				want := f(float64(x)+float64(shift[ch][0]), float64(y)+float64(shift[ch][1]), ch)
				worst = max(worst, math.Abs(float64(out[(y*w+x)*c+ch])-want))
			}
		}
	}
	if worst > 1e-4 {
		t.Fatalf("quadratic moved by sub-pixel shifts: worst error %g, want ≤ 1e-4", worst)
	}
}

// The identity map returns the input; outside positions replicate the edge.
func TestRemapIdentityAndBorder(t *testing.T) {
	const w, h, c = 7, 5, 2
	src := make([]float32, w*h*c)
	for i := range src {
		src[i] = float32(i%13) * 0.25
	}
	id := Remap(src, w, h, c, w, h, func(y, ch int, sx, sy []float32) {
		for i := range sx {
			sx[i], sy[i] = float32(i), float32(y)
		}
	})
	for i := range src {
		if math.Abs(float64(id[i]-src[i])) > 1e-6 {
			t.Fatalf("identity: value %d is %v, want %v", i, id[i], src[i])
		}
	}
	if v := Sample(src, w, h, c, 1, -50, -50); v != src[1] {
		t.Errorf("far outside the top-left: %v, want the corner %v", v, src[1])
	}
	if v := Sample(src, w, h, c, 0, float32(math.NaN()), 0); math.IsNaN(float64(v)) {
		t.Errorf("NaN position gave NaN")
	}
}
