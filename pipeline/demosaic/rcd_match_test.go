package demosaic

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// noisyCFA is a w×h mosaic of pattern pat whose samples mix a smooth
// image, edges and uniform noise over the whole 16-bit range, with black
// levels, a scale that clips, and (pattern true) a 2×3 black pattern: every
// branch of the kernel taken both ways. Fixed seed.
func noisyCFA(w, h int, pat [4]uint8, pattern bool, seed uint64) CFA {
	r := rand.New(rand.NewPCG(seed, 14))
	c := CFA{Pix: make([]uint16, w*h+7), Stride: w + 1, W: w, H: h, Colour: pat,
		Black: [4]float32{512, 510, 515, 508}, Scale: [4]float32{2.1 / 60000, 1.0 / 60000, 1.7 / 60000, 1.0 / 60000}}
	c.Pix = make([]uint16, (h-1)*c.Stride+w)
	if pattern {
		c.BlackPattern, c.PatternRows, c.PatternCols = []float32{0, 3, 7, 1, 0, 12}, 2, 3
	}
	for y := range h {
		for x := range w {
			var v float64
			switch {
			case r.IntN(8) == 0:
				v = r.Float64() * 65535
			case (x/7+y/5)%3 == 0:
				v = 40000 + 20000*math.Sin(float64(x*y)/900)
			default:
				v = 600 + 30000*(1+math.Cos(float64(x)/13+float64(y)/29)) + r.NormFloat64()*300
			}
			c.Pix[y*c.Stride+x] = uint16(min(max(v, 0), 65535))
		}
	}
	return c
}

// TestRCDMatchesReference: the optimised kernel gives the reference
// kernel's output (rcd_ref_test.go) within 1e-6 on noisy CFAs of every
// Bayer phase, sizes that are not tile multiples (and smaller than one
// tile), with and without a black pattern, on one and on several
// goroutines.
func TestRCDMatchesReference(t *testing.T) {
	sizes := [][2]int{{2, 2}, {5, 3}, {33, 17}, {129, 131}, {300, 211}, {517, 389}}
	for name, pat := range phases {
		for _, sz := range sizes {
			for _, bp := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%dx%d/pattern=%v", name, sz[0], sz[1], bp), func(t *testing.T) {
					c := noisyCFA(sz[0], sz[1], pat, bp, uint64(sz[0]*sz[1]))
					want := run(t, refRCD, c)
					for _, th := range []int{1, 3} {
						c.Threads = th
						got := run(t, RCD, c)
						worst, at := 0.0, 0
						for i := range got {
							if d := math.Abs(float64(got[i] - want[i])); d > worst || math.IsNaN(d) {
								worst, at = d, i
							}
						}
						if worst > 1e-6 || math.IsNaN(worst) {
							t.Fatalf("%d threads: pixel (%d, %d) channel %d: %g, reference %g", th, at/3%sz[0], at/3/sz[0], at%3, got[at], want[at])
						}
					}
				})
			}
		}
	}
}

// TestRCDMatchesPrevious: the row-pipelined kernel gives bit for bit the
// output of the kernel it replaced (prevRCD, rcd_prev_test.go: every step
// one pass over a square tile) on noisy CFAs of every Bayer phase, with
// and without a black pattern, sizes that are not multiples of either
// kernel's tiles (wider than several tiles, and smaller than one), on one
// and on several goroutines.
func TestRCDMatchesPrevious(t *testing.T) {
	sizes := [][2]int{{2, 2}, {5, 3}, {33, 17}, {300, 211}, {1111, 427}}
	for name, pat := range phases {
		for _, sz := range sizes {
			for _, bp := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%dx%d/pattern=%v", name, sz[0], sz[1], bp), func(t *testing.T) {
					c := noisyCFA(sz[0], sz[1], pat, bp, uint64(sz[0]*sz[1]+7))
					want := run(t, prevRCD, c)
					for _, th := range []int{1, 3} {
						c.Threads = th
						got := run(t, RCD, c)
						for i := range got {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%d threads: pixel (%d, %d) channel %d: %g, previous kernel %g", th, i/3%sz[0], i/3/sz[0], i%3, got[i], want[i])
							}
						}
					}
				})
			}
		}
	}
}
