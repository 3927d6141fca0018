// Package demosaic interpolates Bayer colour filter array (CFA) data into
// full RGB in pure Go: RCD (Ratio Corrected Demosaicing, L. Sanz
// Rodríguez, 2017), tiled so that each tile's working planes stay in cache
// and tiles run in parallel over row bands, and a plain bilinear
// interpolation as a baseline.
//
// Input is the raw CFA as LibRaw holds it (16-bit samples with a row
// stride) with the levels that normalise it: each photosite becomes
// v = clamp((raw − black)·scale, 0, 1), as LibRaw's scale_colors does before
// its own demosaic (black subtracted, white-balance multiplier and
// 1/(white − black) in scale, clipped at the white level). Output is
// W×H×3 float32 interleaved linear camera RGB in [0, 1], rows top to
// bottom, the same range as LibRaw's 16-bit image divided by 65535.
package demosaic

import (
	"errors"
	"fmt"
	"math"

	"github.com/rawbatch/rawbatch/pipeline/internal/par"
)

// CFA is one Bayer mosaic of three colours and the levels that normalise
// it.
type CFA struct {
	// Pix holds the raw samples (DN); photosite (x, y) is Pix[y*Stride+x],
	// 0 ≤ x < W, 0 ≤ y < H.
	Pix    []uint16
	Stride int
	W, H   int
	// Colour is the colour of the photosites of each 2×2 phase, indexed
	// (y&1)*2 + (x&1): 0 red, 1 green, 2 blue. A Bayer pattern has one red,
	// one blue and two greens on a diagonal (RGGB, GRBG, GBRG, BGGR).
	Colour [4]uint8
	// Black is the black level (DN) of each phase, indexed as Colour.
	Black [4]float32
	// BlackPattern, when not nil, holds PatternRows × PatternCols further
	// black offsets (DN) added to Black at (y % PatternRows, x %
	// PatternCols) (LibRaw's cblack[6..]).
	BlackPattern             []float32
	PatternRows, PatternCols int
	// Scale is the factor (1/DN) of each phase, indexed as Colour: the
	// white-balance multiplier over (white − black).
	Scale [4]float32
	// Done, when not nil, is called by RCD with a row y (increasing from
	// call to call, at most H) once no rows above y are read any more, so
	// that their memory can be released while the rest is demosaiced. It
	// is called from RCD's goroutines, one call at a time.
	Done func(y int)
	// Threads caps the goroutines RCD and Bilinear run on; 0:
	// runtime.GOMAXPROCS(0).
	Threads int
	// ThreadsNow, when not nil, is the thread count now of a conversion
	// whose threads may grow while it runs: Bands reads it at each band
	// instead of Threads.
	ThreadsNow func() int
	// Stop, when not nil, is asked before each band of tiles; once it
	// reports true RCD skips the remaining bands and returns ErrStopped.
	Stop func() bool
}

// ErrStopped is returned by RCD when CFA.Stop asked it to stop; the
// output is then incomplete.
var ErrStopped = errors.New("demosaic: stopped")

// ErrNotBayer is returned for a Colour that is not a 2×2 Bayer pattern of
// red, two greens and blue.
var ErrNotBayer = errors.New("demosaic: not a Bayer pattern of one red, two greens and one blue")

// check validates c and the size of dst, a W×H×3 output.
func (c *CFA) check(dst []float32) error {
	if err := c.checkSource(); err != nil {
		return err
	}
	if len(dst) < c.W*c.H*3 {
		return fmt.Errorf("demosaic: output of %d floats for %d×%d×3", len(dst), c.W, c.H)
	}
	return nil
}

// checkSource validates c: its size, samples, Bayer pattern and black
// pattern.
func (c *CFA) checkSource() error {
	if c.W <= 0 || c.H <= 0 {
		return fmt.Errorf("demosaic: empty CFA %d×%d", c.W, c.H)
	}
	if c.Stride < c.W || len(c.Pix) < (c.H-1)*c.Stride+c.W {
		return fmt.Errorf("demosaic: %d samples with stride %d do not hold %d×%d", len(c.Pix), c.Stride, c.W, c.H)
	}
	var n [3]int
	for _, k := range c.Colour {
		if k > 2 {
			return ErrNotBayer
		}
		n[k]++
	}
	if n != [3]int{1, 2, 1} || c.Colour[0] == c.Colour[1] || c.Colour[0] == c.Colour[2] {
		// Two greens in one row or column are not Bayer.
		return ErrNotBayer
	}
	if c.BlackPattern != nil && (c.PatternRows <= 0 || c.PatternCols <= 0 || len(c.BlackPattern) < c.PatternRows*c.PatternCols) {
		return fmt.Errorf("demosaic: black pattern of %d values for %d×%d", len(c.BlackPattern), c.PatternRows, c.PatternCols)
	}
	return nil
}

// colourAt returns the colour of photosite (x, y).
func (c *CFA) colourAt(x, y int) int { return int(c.Colour[(y&1)*2+(x&1)]) }

// normRow writes the normalised samples of row y, columns x0..x0+len(out)−1
// (each reflected into the image: reflect), into out.
func (c *CFA) normRow(y, x0 int, out []float32) {
	if c.BlackPattern == nil {
		// The columns inside the image in one pass; those outside
		// (a window's margin at the image's edges) one by one.
		lo := min(max(0, -x0), len(out))
		hi := max(lo, min(len(out), c.W-x0))
		c.normSlow(y, x0, out[:lo])
		c.normInside(y, x0+lo, out[lo:hi])
		c.normSlow(y, x0+hi, out[hi:])
		return
	}
	c.normSlow(y, x0, out)
}

// normInside is normRow for columns x0..x0+len(out)−1 inside the image,
// without a black pattern: one black level and scale per column parity.
func (c *CFA) normInside(y, x0 int, out []float32) {
	if len(out) == 0 {
		return
	}
	src := c.Pix[y*c.Stride+x0 : y*c.Stride+x0+len(out)]
	p := (y&1)*2 + x0&1
	b0, s0 := c.Black[p], c.Scale[p]
	b1, s1 := c.Black[p^1], c.Scale[p^1]
	i := vecNorm(src, out, b0, s0, b1, s1) // eight at a time (rcd_simd.go)
	for ; i+1 < len(src) && i+1 < len(out); i += 2 {
		out[i] = clamp01((float32(src[i]) - b0) * s0)
		out[i+1] = clamp01((float32(src[i+1]) - b1) * s1)
	}
	if i < len(src) && i < len(out) {
		out[i] = clamp01((float32(src[i]) - b0) * s0)
	}
}

// normSlow is normRow one photosite at a time: any columns, any black
// pattern.
func (c *CFA) normSlow(y, x0 int, out []float32) {
	if len(out) == 0 {
		return
	}
	row := c.Pix[y*c.Stride : y*c.Stride+c.W]
	ph := (y & 1) * 2
	var pat []float32
	if c.BlackPattern != nil {
		r := y % c.PatternRows
		pat = c.BlackPattern[r*c.PatternCols : (r+1)*c.PatternCols]
	}
	for i := range out {
		x := reflect(x0+i, c.W)
		p := ph + x&1
		b := c.Black[p]
		if pat != nil {
			b += pat[x%c.PatternCols]
		}
		out[i] = clamp01((float32(row[x]) - b) * c.Scale[p])
	}
}

// reflect maps i into 0..n−1 by mirroring about the first and last index
// (… 2 1 0 1 2 … n−2 n−1 n−2 …), which keeps the parity of i and so the
// CFA colour. n ≥ 2.
func reflect(i, n int) int {
	if i >= 0 && i < n {
		return i
	}
	p := 2 * (n - 1)
	i %= p
	if i < 0 {
		i += p
	}
	if i >= n {
		i = p - i
	}
	return i
}

// clamp01 clamps v (not NaN) to [0, 1], without a branch: on the bits, a
// negative float has the sign bit set and non-negative floats order as
// their bits do.
func clamp01(v float32) float32 {
	b := int32(math.Float32bits(v))
	b &^= b >> 31
	b = min(b, 0x3f800000)
	return math.Float32frombits(uint32(b))
}

// rows calls f(lo, hi) for ranges of [0, n) one index at a time, in
// increasing order, on at most threads goroutines (threads ≤ 0:
// GOMAXPROCS).
func rows(threads, n int, f func(lo, hi int)) { par.RangeOn(threads, n, 1, f) }
