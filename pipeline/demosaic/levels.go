package demosaic

import (
	"fmt"
	"math"
	"sync"

	"github.com/rawbatch/rawbatch/pipeline/internal/par"
)

// Mosaic is a Bayer mosaic as LibRaw holds it after unpacking, before its
// processing: the samples and the levels that normalise them.
type Mosaic struct {
	// Pix holds the samples (DN, black included) of the visible area:
	// photosite (x, y) is Pix[y*Stride+x], 0 ≤ x < W, 0 ≤ y < H.
	Pix    []uint16
	Stride int
	W, H   int
	// Colour is the colour index of the top-left 2×2 photosites, indexed
	// (y&1)*2 + (x&1): 0 red, 1 green, 2 blue, 3 the second green
	// (LibRaw's COLOR).
	Colour [4]uint8
	// Black is the common black level, CBlack the per-colour one (indexed
	// as Colour's values), Pattern a PatternRows × PatternCols pattern of
	// further offsets (nil when none); all DN, LibRaw's color.black,
	// cblack[0..3] and cblack[6..].
	Black                    float64
	CBlack                   [4]float64
	Pattern                  []float64
	PatternRows, PatternCols int
	// Maximum is the white level (DN, black included); AdjustMaximum the
	// threshold of the data-maximum adjustment (0: off), which
	// FixedMaximum turns off too.
	Maximum       float64
	AdjustMaximum float64
	FixedMaximum  bool
}

// Normalise returns the CFA of m that RCD and Bilinear read, normalised as
// LibRaw 0.21's raw2image_ex, adjust_bl, adjust_maximum and scale_colors
// do, with the white-balance multipliers mul (R, G, B, G2; the smallest
// 1), reading the data on up to threads goroutines (≤ 0: GOMAXPROCS):
//
//   - black: Black + CBlack[colour], a 2×2 (or smaller) pattern folded into
//     the per-colour levels by position, a larger one kept per photosite;
//     the common part B (the smallest per-colour level plus the smallest
//     pattern cell) is taken out of the white level (blackLevels);
//   - white: Maximum − B, replaced by the largest black-subtracted sample
//     when that lies between AdjustMaximum (0.75 when 1 or more) and 1 of
//     it (whiteLevel);
//   - each photosite: clamp((raw − black)·mul[colour]/white, 0, 1).
//
// It fails when the white level is at or below the black level.
func Normalise(m Mosaic, mul [4]float64, threads int) (CFA, error) {
	cb, black, pat := blackLevels(m)

	// Per phase: the level and the channel LibRaw's image gets.
	c := CFA{Pix: m.Pix, Stride: m.Stride, W: m.W, H: m.H}
	var phaseBlack [4]float64
	for i := range 4 {
		k := m.Colour[i]
		phaseBlack[i] = cb[k]
		c.Black[i] = float32(cb[k])
		if k == 3 {
			k = 1 // the second green is green (pre_interpolate)
		}
		c.Colour[i] = k
	}
	if pat != nil {
		c.BlackPattern = make([]float32, len(pat))
		for i, x := range pat {
			c.BlackPattern[i] = float32(x)
		}
		c.PatternRows, c.PatternCols = m.PatternRows, m.PatternCols
	}

	white := whiteLevel(m, black, phaseBlack, threads)
	if !(white > 0) {
		return CFA{}, fmt.Errorf("white level %g at or below black %g", m.Maximum, black)
	}
	for i := range 4 {
		c.Scale[i] = float32(mul[m.Colour[i]] / white)
	}
	return c, nil
}

// blackLevels is LibRaw's adjust_bl: the black level of each colour index
// (cb, the common part included), the common part (black) and the
// pattern left per photosite (nil when it was folded into cb or there is
// none; less its smallest cell, which black includes).
func blackLevels(m Mosaic) (cb [4]float64, black float64, pat []float64) {
	cb = m.CBlack
	pat = append([]float64(nil), m.Pattern...)
	pr, pc := m.PatternRows, m.PatternCols
	if pat != nil && (pr == 1 || pr == 2) && (pc == 1 || pc == 2) {
		var clrs [4]int
		last, greens := -1, 0
		for i := range 4 {
			clrs[i] = int(m.Colour[i])
			if clrs[i] == 1 {
				greens++
				last = i
			}
		}
		if greens > 1 {
			clrs[last] = 3
		}
		for i := range 4 {
			cb[clrs[i]] += pat[(i/2%pr)*pc+i%2%pc]
		}
		pat = nil
	}
	black = m.Black
	common := min(cb[0], cb[1], cb[2], cb[3])
	for i := range cb {
		cb[i] -= common
	}
	black += common
	if pat != nil {
		low := pat[0]
		for _, x := range pat {
			low = min(low, x)
		}
		for i := range pat {
			pat[i] -= low
		}
		black += low
	}
	for i := range cb {
		cb[i] += black
	}
	return cb, black, pat
}

// whiteLevel is LibRaw's adjust_maximum: Maximum − black, or the data
// maximum (dataMaximum over the phases' levels phaseBlack) when that lies
// between AdjustMaximum and 1 of it.
func whiteLevel(m Mosaic, black float64, phaseBlack [4]float64, threads int) float64 {
	white := m.Maximum - black
	if thr := m.AdjustMaximum; thr >= 0.00001 && !m.FixedMaximum {
		if thr > 0.99999 {
			thr = 0.75 // LIBRAW_DEFAULT_ADJUST_MAXIMUM_THRESHOLD
		}
		if dmax := dataMaximum(m, phaseBlack, threads); dmax > 0 && dmax < white && dmax > white*thr {
			white = dmax
		}
	}
	return white
}

// dataMaximum is LibRaw's data_maximum: the largest sample above its
// phase's black level, less that level (copy_bayer). The black level is
// one per phase, so that is the largest of each phase's largest sample
// less its level: the samples are compared as integers, rows in parallel
// on threads goroutines (≤ 0: GOMAXPROCS).
func dataMaximum(v Mosaic, black [4]float64, threads int) float64 {
	var mu sync.Mutex
	var top [4]uint16 // the largest sample of each phase
	par.RangeOn(threads, v.H, 64, func(lo, hi int) {
		var m [4]uint16
		for y := lo; y < hi; y++ {
			row := v.Pix[y*v.Stride : y*v.Stride+v.W]
			e, o := &m[(y&1)*2], &m[(y&1)*2+1]
			x := 0
			for ; x+1 < len(row); x += 2 {
				*e, *o = max(*e, row[x]), max(*o, row[x+1])
			}
			if x < len(row) {
				*e = max(*e, row[x])
			}
		}
		mu.Lock()
		for p := range 4 {
			top[p] = max(top[p], m[p])
		}
		mu.Unlock()
	})
	var dmax float64 // a phase the image lacks has 0 − black < 0
	for p := range 4 {
		dmax = max(dmax, float64(top[p])-black[p])
	}
	return math.Floor(dmax)
}
