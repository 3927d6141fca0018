package demosaic

import (
	"errors"
	"fmt"

	"github.com/rawbatch/rawbatch/pipeline/internal/par"
)

// vecHalfOn is whether Half runs its vector kernel (vecHalf) where the
// CPU has one: a variable for BenchmarkHalf24MP's scalar runs.
var vecHalfOn = vec

// ErrOddSize is returned by Half for a CFA of an odd width or height.
var ErrOddSize = errors.New("demosaic: odd size")

// Half bins c's 2×2 Bayer blocks into dst ((W/2)×(H/2)×3 float32,
// interleaved, at least 3·(W/2)·(H/2) values): each pixel is its block's
// red, the mean of its two greens and its blue, normalised as RCD's input
// (black level and scale, clipped to [0, 1]). It is what LibRaw's
// half_size decode makes of a Bayer file (one pixel a CFA block,
// pre_interpolate averaging the two greens), without LibRaw's 16-bit
// image. W and H must be even. Errors: an invalid CFA (ErrNotBayer,
// sizes), odd sizes. CFA.Done is not called.
func Half(c CFA, dst []float32) error {
	if c.W%2 != 0 || c.H%2 != 0 {
		return fmt.Errorf("%w: half of an odd %d×%d CFA", ErrOddSize, c.W, c.H)
	}
	if err := c.checkSource(); err != nil {
		return err
	}
	hw, hh := c.W/2, c.H/2
	if len(dst) < 3*hw*hh {
		return fmt.Errorf("demosaic: output of %d floats for %d×%d×3", len(dst), hw, hh)
	}
	// Where each colour sits in a block: the phase index (y&1)*2 + x&1.
	var red, blue int
	var greens []int
	for p, k := range c.Colour {
		switch k {
		case 0:
			red = p
		case 2:
			blue = p
		default:
			greens = append(greens, p)
		}
	}
	g0, g1 := greens[0], greens[1]
	rows(c.Threads, (hh+par.Block-1)/par.Block, func(blo, bhi int) {
		lo, hi := blo*par.Block, min(bhi*par.Block, hh)
		pair := [2][]float32{make([]float32, c.W), make([]float32, c.W)}
		for j := lo; j < hi; j++ {
			c.normRow(2*j, 0, pair[0])
			c.normRow(2*j+1, 0, pair[1])
			o := dst[3*j*hw : 3*(j+1)*hw]
			at := func(p, i int) float32 { return pair[p>>1][2*i+p&1] }
			for i := vecHalf(pair[0], pair[1], o, red, g0, g1, blue); i < hw; i++ {
				o[3*i] = at(red, i)
				o[3*i+1] = (at(g0, i) + at(g1, i)) / 2
				o[3*i+2] = at(blue, i)
			}
		}
	})
	return nil
}
