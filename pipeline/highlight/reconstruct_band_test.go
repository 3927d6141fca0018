package highlight

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// blobs is a w×h image of coloured noise with clipped discs, some of
// them crossing the given rows.
func blobs(w, h int, rows []int) []float32 {
	rng := rand.New(rand.NewPCG(3, 4))
	pix := make([]float32, w*h*3)
	for i := range pix {
		pix[i] = 0.1 + 0.6*rng.Float32()
	}
	disc := func(cx, cy, rad int) {
		for y := max(0, cy-rad); y < min(h, cy+rad); y++ {
			for x := max(0, cx-rad); x < min(w, cx+rad); x++ {
				if (x-cx)*(x-cx)+(y-cy)*(y-cy) < rad*rad {
					p := pix[(y*w+x)*3:]
					p[0], p[1] = 1, 0.98+0.02*rng.Float32()
				}
			}
		}
	}
	for i, y := range rows {
		disc(20+i*37%(w-40), y, 6+i%3*5)
	}
	return pix
}

// boxRef is Reconstruct computed directly: each clipped pixel's box
// summed afresh.
func boxRef(pix []float32, w, h int, thr float32) []float32 {
	out := slices.Clone(pix)
	r := ReconstructRadius(w, h)
	clipped := func(i int) bool { return pix[3*i] >= thr || pix[3*i+1] >= thr || pix[3*i+2] >= thr }
	for y := range h {
		for x := range w {
			i := y*w + x
			if max(pix[3*i], pix[3*i+1], pix[3*i+2]) <= thr-blendBand {
				continue
			}
			var s [5]float64
			for yy := max(0, y-r); yy <= min(h-1, y+r); yy++ {
				for xx := max(0, x-r); xx <= min(w-1, x+r); xx++ {
					k := yy*w + xx
					if clipped(k) {
						continue
					}
					s[4]++
					p := pix[3*k : 3*k+3]
					if m := max(p[0], p[1], p[2]); m > minChromaLevel {
						for c := range 3 {
							s[c] += float64(p[c] / m)
						}
						s[3]++
					}
				}
			}
			p := out[3*i : 3*i+3]
			var rho [3]float64
			a := 0.0
			if s[3] > 0 {
				rho = [3]float64{s[0] / s[3], s[1] / s[3], s[2] / s[3]}
				m := max(rho[0], rho[1], rho[2])
				for c := range rho {
					rho[c] /= m
				}
				area := float64((min(w-1, x+r) - max(0, x-r) + 1) * (min(h-1, y+r) - max(0, y-r) + 1))
				a = math.Min(1, 2*s[4]/area)
			}
			q := refPixel(pix, w, h, x, y, rho, a, s[3], r, thr)
			copy(p, q[:])
		}
	}
	return out
}

// TestReconstructorBands: Reconstruct row by row in bands of any height
// (ones that do not divide the image, ones below the radius) gives the
// whole image's result, with clipped discs across the bands' borders and
// long unclipped stretches between them; and that result is the direct
// box computation's.
func TestReconstructorBands(t *testing.T) {
	const w, h = 160, 700
	src := blobs(w, h, []int{0, 64, 100, 128, 129, 300, 301, 699})
	whole := Reconstruct(slices.Clone(src), w, h, DefaultThreshold)
	ref := boxRef(src, w, h, DefaultThreshold)
	for i := range whole {
		if d := math.Abs(float64(whole[i] - ref[i])); d > 1e-6 {
			t.Fatalf("sample %d: %g, direct box sums %g", i, whole[i], ref[i])
		}
	}
	if slices.Equal(whole, src) {
		t.Fatal("nothing reconstructed")
	}
	for _, band := range []int{1, 7, 64, 129, h} {
		pix := slices.Clone(src)
		rc := NewReconstructor(w, h, DefaultThreshold)
		// Only rows from Next() to the lookahead are readable.
		row := func(y int) []float32 {
			if y < rc.Next() || y >= rc.Next()+band+rc.Lookahead() {
				t.Fatalf("band %d: row %d read while finishing from %d", band, y, rc.Next())
			}
			return pix[3*y*w : 3*(y+1)*w]
		}
		for y := 0; y < h; y += band {
			rc.Rows(y+band, row)
		}
		if !slices.Equal(pix, whole) {
			t.Errorf("band %d: differs from the whole image's", band)
		}
	}
}
