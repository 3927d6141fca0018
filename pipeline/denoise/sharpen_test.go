package denoise

import (
	"math"
	"testing"
)

// TestCaptureSharpenFlatAndColour: a flat image is left alone, amount 0
// changes nothing, and a sharpened edge between two tints keeps each
// pixel's channel ratios (one gain per pixel).
func TestCaptureSharpenFlatAndColour(t *testing.T) {
	const w, h = 40, 30
	tint := [3]float32{0.5, 1, 0.7}
	img := func(edge bool) []float32 {
		p := make([]float32, 3*w*h)
		for y := range h {
			for x := range w {
				v := float32(0.2)
				if edge && x >= w/2 {
					v = 0.4
				}
				for c := range 3 {
					p[3*(y*w+x)+c] = v * tint[c]
				}
			}
		}
		return p
	}
	flat := img(false)
	CaptureSharpen(flat, w, h, 1, SharpenSigma)
	for i, v := range flat {
		if want := 0.2 * tint[i%3]; math.Abs(float64(v-want)) > 1e-6 {
			t.Fatalf("flat image: value %d %g, want %g", i, v, want)
		}
	}
	p := img(true)
	orig := append([]float32(nil), p...)
	CaptureSharpen(p, w, h, 0, SharpenSigma)
	for i := range p {
		if p[i] != orig[i] {
			t.Fatalf("amount 0 changed value %d", i)
		}
	}
	CaptureSharpen(p, w, h, 0.8, SharpenSigma)
	y := h / 2
	l, r := p[3*(y*w+w/2-1)+1], p[3*(y*w+w/2)+1]
	if !(l < 0.2 && r > 0.4) {
		t.Errorf("edge pixels %g | %g: want under 0.2 and over 0.4 (sharpened)", l, r)
	}
	for x := range w {
		q := p[3*(y*w+x):]
		if math.Abs(float64(q[0]/q[1]-0.5)) > 1e-5 || math.Abs(float64(q[2]/q[1]-0.7)) > 1e-5 {
			t.Errorf("x %d: ratios %g %g, want 0.5 0.7", x, q[0]/q[1], q[2]/q[1])
		}
	}
}

// TestCaptureSharpenFloor: a dark pixel among bright ones (a dark speck
// beside a light source) is darkened by at most one stop
// (SharpenFloor), not driven to black; a bright pixel among dark ones is
// still brightened by the full mask.
func TestCaptureSharpenFloor(t *testing.T) {
	const w, h = 9, 9
	for _, c := range []struct {
		centre, around float32
		check          func(got float32) bool
		want           string
	}{
		{0.1, 0.6, func(g float32) bool { return math.Abs(float64(g-SharpenFloor*0.1)) < 1e-6 }, "half its luminance"},
		{0.6, 0.1, func(g float32) bool { return g > 0.8 }, "over 0.8"},
	} {
		p := make([]float32, 3*w*h)
		for i := range w * h {
			v := c.around
			if i == (h/2)*w+w/2 {
				v = c.centre
			}
			p[3*i], p[3*i+1], p[3*i+2] = v*1.2, v, v*0.8
		}
		CaptureSharpen(p, w, h, 0.8, SharpenSigma)
		q := p[3*((h/2)*w+w/2):]
		if y := (q[0] + q[1] + q[2]) / 3; !c.check(y) {
			t.Errorf("pixel %g among %g: luminance %g after sharpening, want %s", c.centre, c.around, y, c.want)
		}
		if r := q[0] / q[1]; math.Abs(float64(r-1.2)) > 1e-5 {
			t.Errorf("pixel %g among %g: R/G %g, want 1.2 (colour kept)", c.centre, c.around, r)
		}
	}
}
