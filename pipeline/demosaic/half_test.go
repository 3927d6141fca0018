package demosaic

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// TestHalf: each output pixel is its 2×2 block's red, the mean of its
// greens and its blue, each normalised (black level, black pattern,
// scale, clipped to [0, 1]) as RCD's input, for every Bayer phase and
// with and without a black pattern; odd sizes and non-Bayer patterns are
// refused.
func TestHalf(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	w, h := 38, 26
	pix := make([]uint16, w*h)
	for i := range pix {
		pix[i] = uint16(rng.IntN(4096))
	}
	for _, colour := range [][4]uint8{{0, 1, 1, 2}, {1, 0, 2, 1}, {1, 2, 0, 1}, {2, 1, 1, 0}} {
		for _, pattern := range []bool{false, true} {
			c := CFA{Pix: pix, Stride: w, W: w, H: h, Colour: colour,
				Black: [4]float32{64, 60, 62, 66}, Scale: [4]float32{1.9 / 4000, 1 / 4000.0, 1.5 / 4000, 1 / 4000.0}}
			if pattern {
				c.BlackPattern, c.PatternRows, c.PatternCols = []float32{1, 2, 3, 4, 5, 6}, 2, 3
			}
			norm := func(x, y int) float32 {
				p := (y&1)*2 + x&1
				b := c.Black[p]
				if pattern {
					b += c.BlackPattern[(y%2)*3+x%3]
				}
				return min(max((float32(pix[y*w+x])-b)*c.Scale[p], 0), 1)
			}
			dst := make([]float32, 3*(w/2)*(h/2))
			if err := Half(c, dst); err != nil {
				t.Fatal(err)
			}
			for j := range h / 2 {
				for i := range w / 2 {
					var want [3]float32
					var greens []float32
					for p := range 4 {
						x, y := 2*i+p&1, 2*j+p>>1
						switch colour[p] {
						case 0:
							want[0] = norm(x, y)
						case 2:
							want[2] = norm(x, y)
						default:
							greens = append(greens, norm(x, y))
						}
					}
					want[1] = (greens[0] + greens[1]) / 2
					got := dst[3*(j*(w/2)+i) : 3*(j*(w/2)+i)+3]
					if [3]float32(got) != want {
						t.Fatalf("colour %v pattern %v, block (%d, %d): %v, want %v", colour, pattern, i, j, got, want)
					}
				}
			}
		}
	}
	c := CFA{Pix: pix, Stride: w, W: w - 1, H: h, Colour: [4]uint8{0, 1, 1, 2}}
	if err := Half(c, make([]float32, 3*w*h)); !errors.Is(err, ErrOddSize) {
		t.Errorf("odd width: %v, want ErrOddSize", err)
	}
	c = CFA{Pix: pix, Stride: w, W: w, H: h, Colour: [4]uint8{0, 0, 1, 2}}
	if err := Half(c, make([]float32, 3*w*h)); !errors.Is(err, ErrNotBayer) {
		t.Errorf("two reds: %v, want ErrNotBayer", err)
	}
}

// BenchmarkHalf24MP bins a 6000×4000 CFA of random 14-bit samples on one
// thread, with the scalar loop alone and with the vector kernel.
func BenchmarkHalf24MP(b *testing.B) {
	const w, h = 6000, 4000
	rng := rand.New(rand.NewPCG(5, 6))
	pix := make([]uint16, w*h)
	for i := range pix {
		pix[i] = uint16(rng.IntN(16384))
	}
	c := CFA{Pix: pix, Stride: w, W: w, H: h, Colour: [4]uint8{0, 1, 1, 2}, Threads: 1,
		Black: [4]float32{512, 512, 512, 512}, Scale: [4]float32{1.9 / 15871, 1 / 15871.0, 1.5 / 15871, 1 / 15871.0}}
	dst := make([]float32, 3*(w/2)*(h/2))
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "scalar", true: "vector"}[on], func(b *testing.B) {
			defer func(v bool) { vecHalfOn = v }(vecHalfOn)
			vecHalfOn = vecHalfOn && on
			for b.Loop() {
				if err := Half(c, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
