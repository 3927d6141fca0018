package highlight

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// raggedClip is a w×w white-balanced camera RGB image (clip level 1) of a
// coloured surface bg lit by a ragged highlight: brightness rises towards a
// centre whose outline wobbles with the angle, multiplicative noise of 3 %
// on every channel, channels clipped at 1 where they pass it (one channel
// clips first for a saturated bg, two for a paler one), and hot (all 1)
// and dead (0) photosites scattered over it, as a demosaiced real file
// has them.
func raggedClip(w int, bg [3]float64, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 9))
	pix := make([]float32, w*w*3)
	c := float64(w) / 2
	for y := range w {
		for x := range w {
			dx, dy := float64(x)-c, float64(y)-c
			d := math.Hypot(dx, dy) / (0.3 * float64(w) * (1 + 0.25*math.Sin(5*math.Atan2(dy, dx))))
			k := 0.45 + 1.4*math.Exp(-d*d)
			for ch := range 3 {
				v := bg[ch] * k * (1 + 0.03*rng.NormFloat64())
				pix[(y*w+x)*3+ch] = float32(math.Min(1, math.Max(0, v)))
			}
		}
	}
	for range w * w / 400 {
		i := rng.IntN(w * w)
		v := float32(1)
		if rng.IntN(2) == 0 {
			v = 0
		}
		pix[3*i], pix[3*i+1], pix[3*i+2] = v, v, v
	}
	return pix
}

// farFromMedian counts the pixels of which a channel differs from the
// median of its 3×3 neighbourhood by more than frac of that median (at
// least 0.05): isolated outliers.
func farFromMedian(pix []float32, w, h int, frac float64) int {
	n := 0
	var nb [9]float64
	for y := 1; y < h-1; y++ {
		for x := 1; x < w-1; x++ {
			far := false
			for c := range 3 {
				k := 0
				for dy := -1; dy <= 1; dy++ {
					for dx := -1; dx <= 1; dx++ {
						nb[k] = float64(pix[((y+dy)*w+x+dx)*3+c])
						k++
					}
				}
				slices.Sort(nb[:])
				m := nb[4]
				if math.Abs(float64(pix[(y*w+x)*3+c])-m) > frac*math.Max(m, 0.05) {
					far = true
				}
			}
			if far {
				n++
			}
		}
	}
	return n
}

// TestReconstructRaggedClipping: on ragged, noisy highlights clipped in
// one or two channels, with hot and dead photosites, reconstruct leaves no
// more isolated outliers (beyond 15 % of their 3×3 median) than clip does
// (the hot and dead photosites themselves), keeps every value in [0, 1],
// and makes no step between neighbours larger than the noise allows.
func TestReconstructRaggedClipping(t *testing.T) {
	const w = 160
	for _, c := range []struct {
		name string
		bg   [3]float64
	}{
		{"blue clips", [3]float64{0.45, 0.55, 0.9}},
		{"green and blue clip", [3]float64{0.5, 0.85, 0.9}},
		{"red clips", [3]float64{0.95, 0.5, 0.35}},
	} {
		for seed := range uint64(3) {
			in := raggedClip(w, c.bg, seed)
			clip := Clip(slices.Clone(in), w, w, DefaultThreshold)
			rec := Reconstruct(slices.Clone(in), w, w, DefaultThreshold)
			if slices.Equal(rec, clip) {
				t.Fatalf("%s: reconstruct changed nothing", c.name)
			}
			nc, nr := farFromMedian(clip, w, w, 0.15), farFromMedian(rec, w, w, 0.15)
			if nr > nc {
				t.Errorf("%s seed %d: reconstruct leaves %d pixels beyond 15 %% of their 3×3 median, clip %d", c.name, seed, nr, nc)
			}
			for i, v := range rec {
				if !(v >= 0 && v <= 1) {
					t.Fatalf("%s: sample %d = %v outside [0, 1]", c.name, i, v)
				}
			}
		}
	}
}
