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
