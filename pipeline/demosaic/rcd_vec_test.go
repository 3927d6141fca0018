package demosaic

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rawbatch/rawbatch/internal/testtool"
)

// vecTestCFAs are the CFAs that TestRCDVector demosaics: w×h of pattern
// pat, black level 512 and white 60512 (scaled to 1; red's and blue's
// scales clip below white), named by their content: noise over the
// whole range (with and without a black pattern), uniform noise, samples
// a few DN around black (normalised to 0 and just above, some clamped
// from below), around and over white (clipped), all black, all white,
// stripes and a checkerboard of black and clipped photosites, lone
// bright photosites on black, and a zone plate.
func vecTestCFAs(w, h int, pat [4]uint8, seed uint64) map[string]CFA {
	r := rand.New(rand.NewPCG(seed, 3))
	mk := func(f func(x, y int) float64) CFA {
		c := CFA{Pix: make([]uint16, w*h), Stride: w, W: w, H: h, Colour: pat,
			Black: [4]float32{512, 512, 512, 512}, Scale: [4]float32{1.3 / 60000, 1.0 / 60000, 1.15 / 60000, 1.0 / 60000}}
		for y := range h {
			for x := range w {
				c.Pix[y*w+x] = uint16(min(max(f(x, y), 0), 65535))
			}
		}
		return c
	}
	return map[string]CFA{
		"noisy":        noisyCFA(w, h, pat, false, seed),
		"noisyPattern": noisyCFA(w, h, pat, true, seed+1),
		"uniform":      mk(func(x, y int) float64 { return r.Float64() * 65535 }),
		"nearBlack":    mk(func(x, y int) float64 { return 509 + r.Float64()*24 }),
		"nearWhite":    mk(func(x, y int) float64 { return 59000 + r.Float64()*6535 }),
		"black":        mk(func(x, y int) float64 { return 0 }),
		"white":        mk(func(x, y int) float64 { return 65535 }),
		"stripes": mk(func(x, y int) float64 {
			if (x/3+y/5)%2 == 0 || (x+y)%11 == 0 {
				return 65535
			}
			return 512
		}),
		"checker": mk(func(x, y int) float64 { return float64((x+y)&1) * 65535 }),
		"sparks": mk(func(x, y int) float64 {
			if r.IntN(50) == 0 {
				return 65535
			}
			return 512 + r.Float64()*3
		}),
		"zonePlate": mosaic(zonePlate(w, h), w, h, pat),
	}
}

// TestRCDVector: RCD with its vector kernels (rcd_simd.go) gives bit for
// bit the output of its scalar loops alone (vecRCD off), on the CFAs of
// vecTestCFAs in every Bayer phase and sizes from 2×2 to wider than two
// tiles, most widths not multiples of 8 or 16, so that every step's
// vector loop ends at each remainder and the scalar loops finish the rows.
// Under CI the vector path must have run.
func TestRCDVector(t *testing.T) {
	testtool.NeedVector(t, vec)
	if !vec {
		t.Skip("no vector kernels in this build or on this CPU")
	}
	sizes := [][2]int{{2, 2}, {3, 5}, {9, 7}, {16, 16}, {17, 13}, {23, 29}, {40, 33}, {61, 45}, {203, 61}, {513, 37}, {530, 23}, {1037, 31}}
	defer func(v bool) { vecRCD = v }(vecRCD)
	for name, pat := range phases {
		for i, sz := range sizes {
			for kind, c := range vecTestCFAs(sz[0], sz[1], pat, uint64(100+i)) {
				t.Run(fmt.Sprintf("%s/%dx%d/%s", name, sz[0], sz[1], kind), func(t *testing.T) {
					c.Threads = 1
					vecRCD = false
					want := run(t, RCD, c)
					vecRCD = vec
					got := run(t, RCD, c)
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("pixel (%d, %d) channel %d: vector %g (%#x), scalar %g (%#x)", i/3%sz[0], i/3/sz[0], i%3,
								got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
						}
					}
				})
			}
		}
	}
}
