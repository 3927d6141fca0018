package warp

import (
	"math"
	"testing"
)

// TestRemapThreeChannelsMatchesSample: Remap's three-channel path (the
// interior taps written out, channel by channel over a row) gives Sample's
// value at every pixel, for positions inside, near the border and
// outside, each channel with its own positions.
func TestRemapThreeChannelsMatchesSample(t *testing.T) {
	const w, h, c = 23, 17, 3
	src := make([]float32, w*h*c)
	for i := range src {
		src[i] = float32(math.Sin(float64(i)*0.37)) + float32(i%7)*0.1
	}
	pos := func(x, y, ch int) (float32, float32) {
		// A scale about the centre that reaches past every border, and a
		// per-channel sub-pixel shift.
		s := float32(1.3 + 0.02*float64(ch))
		return (float32(x)-w/2)*s + w/2 + 0.17*float32(ch), (float32(y)-h/2)*s + h/2 - 0.29*float32(ch)
	}
	out := Remap(src, w, h, c, w, h, func(y, ch int, sx, sy []float32) {
		for i := range sx {
			sx[i], sy[i] = pos(i, y, ch)
		}
	})
	worst := 0.0
	for y := range h {
		for x := range w {
			for ch := range c {
				px, py := pos(x, y, ch)
				want := Sample(src, w, h, c, ch, px, py)
				worst = max(worst, math.Abs(float64(out[(y*w+x)*c+ch]-want)))
			}
		}
	}
	if worst > 1e-6 {
		t.Fatalf("Remap differs from Sample by up to %g, want ≤ 1e-6", worst)
	}
}
