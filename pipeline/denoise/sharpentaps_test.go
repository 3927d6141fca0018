package denoise

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/internal/par"
)

// captureSharpenLoops is CaptureSharpen with its taps in loops for every
// radius: the reference of the default radius's written-out taps.
func captureSharpenLoops(pix []float32, w, h int, amount, sigma float64) {
	n := w * h
	if n == 0 || amount == 0 || sigma <= 0 {
		return
	}
	pix = pix[:3*n]
	k, r := gaussianTaps(sigma)
	l := make([]float32, n)
	par.Rows(h, func(lo, hi int) {
		for i := lo * w; i < hi*w; i++ {
			y := (pix[3*i] + pix[3*i+1] + pix[3*i+2]) / 3
			l[i] = max(y, 0)
		}
	})
	a := float32(amount)
	par.Rows(h, func(lo, hi int) {
		tmp := make([]float32, w)
		for y := lo; y < hi; y++ {
			for x := range tmp {
				tmp[x] = 0
			}
			for i := -r; i <= r; i++ {
				row := l[mirror(y+i, h)*w:][:w]
				ki := k[i+r]
				for x := range tmp {
					tmp[x] += ki * row[x]
				}
			}
			for x := range w {
				var b float32
				if x >= r && x+r < w {
					for i := -r; i <= r; i++ {
						b += k[i+r] * tmp[x+i]
					}
				} else {
					for i := -r; i <= r; i++ {
						b += k[i+r] * tmp[mirror(x+i, w)]
					}
				}
				i := y*w + x
				lv := l[i]
				ls := max(lv+a*(lv-b), SharpenFloor*lv)
				q := pix[3*i : 3*i+3 : 3*i+3]
				yv := (q[0] + q[1] + q[2]) / 3
				if yv <= 0 {
					continue
				}
				g := ls / yv
				q[0] *= g
				q[1] *= g
				q[2] *= g
			}
		}
	})
}

// TestCaptureSharpenRadius3Taps: the written-out taps of radius 3 (the
// default sigma) give what the loops give, to float rounding, borders
// included; so does a smaller radius (the loops themselves).
func TestCaptureSharpenRadius3Taps(t *testing.T) {
	const w, h = 41, 29
	rng := rand.New(rand.NewPCG(13, 3))
	src := make([]float32, 3*w*h)
	for i := range src {
		src[i] = 0.2 + 0.05*float32(rng.NormFloat64()) + 0.3*float32(i%(3*w)%17)/17
	}
	for _, sigma := range []float64{SharpenSigma, 0.5} {
		got, want := append([]float32(nil), src...), append([]float32(nil), src...)
		CaptureSharpen(got, w, h, 0.8, sigma)
		captureSharpenLoops(want, w, h, 0.8, sigma)
		worst := 0.0
		for i := range got {
			worst = max(worst, math.Abs(float64(got[i]-want[i])))
		}
		if worst > 1e-6 {
			t.Errorf("sigma %g: differs from the loops by up to %g, want ≤ 1e-6", sigma, worst)
		}
	}
}
