package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/rawbatch/rawbatch/pipeline/demosaic"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
	"github.com/rawbatch/rawbatch/pipeline/internal/par"
)

// rawbatch's own demosaic (--demosaic rcd, issue 14 point 4): the demosaic
// stage reads LibRaw's unpacked Bayer data in place (after the white-level
// stage's rescale and the raw opcodes' gain maps), normalises it as
// LibRaw's scale_colors would (black, white, white-balance multipliers) and
// runs pipeline/demosaic's RCD, without LibRaw's processing and its
// 4×16-bit image.

// ownDemosaic reports whether the demosaic stage demosaics j's file itself
// with settings s: --demosaic rcd, not half size (LibRaw's half-size decode
// does not demosaic) and LibRaw's highlight mode 0 (clip). Whether the
// file is Bayer data only its decode tells (bayerCFA).
func ownDemosaic(s Settings) bool {
	return s.Demosaic == "rcd" && !s.HalfSize && s.Highlight == 0
}

// errLibRawWB: the white balance is LibRaw's own estimate (grey world),
// which only its processing computes.
var errLibRawWB = errors.New("the white balance is LibRaw's grey world (--wb auto)")

// bayerCFA returns the normalised CFA of v for pipeline/demosaic and the
// multipliers applied (R, G, B, G2, the smallest 1), following LibRaw
// 0.21's raw2image_ex, adjust_bl, adjust_maximum and scale_colors:
//
//   - black: color.black + cblack[colour], a 2×2 (or smaller) cblack
//     pattern folded into the per-colour levels by position, a larger one
//     kept per photosite; the common part B (the smallest per-colour level
//     plus the smallest pattern cell) is taken out of the white level;
//   - white: maximum − B, replaced by the largest black-subtracted sample
//     when that lies between adjust_maximum_thr (0.75 by default; 0 after
//     the white-level stage's RescaleRaw) and 1 of it;
//   - multipliers m: user_mul (WBUser), cam_mul (WBCamera, when cam_mul[0]
//     and cam_mul[2] are positive), else pre_mul (daylight); a zero green
//     becomes 1, a zero G2 the green; divided by the smallest (LibRaw's
//     highlight mode 0);
//   - each photosite: clamp((raw − black)·m_colour/white, 0, 1).
//
// Errors (the file then keeps LibRaw's processing): errLibRawWB for --wb
// auto, or the camera's multipliers unusable to LibRaw (it would estimate
// its own); multipliers that are not positive; a white level at or below
// the black level.
func bayerCFA(v libraw.BayerView, p libraw.Params) (demosaic.CFA, [4]float64, error) {
	return bayerCFAOn(v, p, 0)
}

// bayerCFAOn is bayerCFA reading the data on up to threads goroutines (≤ 0:
// GOMAXPROCS).
func bayerCFAOn(v libraw.BayerView, p libraw.Params, threads int) (demosaic.CFA, [4]float64, error) {
	var pre [4]float64
	switch p.WB {
	case libraw.WBUser:
		for i := range 4 {
			pre[i] = float64(p.Multipliers[i])
		}
	case libraw.WBCamera:
		if !(v.CamMul[0] > 1e-5 && v.CamMul[2] > 1e-5) {
			return demosaic.CFA{}, pre, errLibRawWB
		}
		pre = v.CamMul
	case libraw.WBAuto:
		return demosaic.CFA{}, pre, errLibRawWB
	default:
		pre = v.PreMul
	}
	if pre[1] == 0 {
		pre[1] = 1
	}
	if pre[3] == 0 {
		pre[3] = pre[1]
	}
	dmin := math.Inf(1)
	for _, m := range pre {
		dmin = min(dmin, m)
	}
	if !(dmin > 1e-5) || math.IsInf(dmin, 0) {
		return demosaic.CFA{}, pre, fmt.Errorf("white-balance multipliers %v", pre)
	}
	for i := range pre {
		pre[i] /= dmin
	}

	// Black levels: LibRaw's adjust_bl.
	cb := v.CBlack
	pat := append([]float64(nil), v.Pattern...)
	pr, pc := v.PatternRows, v.PatternCols
	if pat != nil && (pr == 1 || pr == 2) && (pc == 1 || pc == 2) {
		var clrs [4]int
		last, greens := -1, 0
		for i := range 4 {
			clrs[i] = int(v.Colour[i])
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
	black := v.Black
	common := min(cb[0], cb[1], cb[2], cb[3])
	for i := range cb {
		cb[i] -= common
	}
	black += common
	if pat != nil {
		m := pat[0]
		for _, x := range pat {
			m = min(m, x)
		}
		for i := range pat {
			pat[i] -= m
		}
		black += m
	}
	for i := range cb {
		cb[i] += black
	}

	// Per phase: the level and the channel LibRaw's image gets.
	c := demosaic.CFA{Pix: v.Pix, Stride: v.Stride, W: v.W, H: v.H}
	var phaseBlack [4]float64
	for i := range 4 {
		k := v.Colour[i]
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
		c.PatternRows, c.PatternCols = pr, pc
	}

	white := v.Maximum - black
	if thr := v.AdjustMaximum; thr >= 0.00001 && !v.FixedMaximum {
		if thr > 0.99999 {
			thr = 0.75 // LIBRAW_DEFAULT_ADJUST_MAXIMUM_THRESHOLD
		}
		if dmax := dataMaximum(v, phaseBlack, threads); dmax > 0 && dmax < white && dmax > white*thr {
			white = dmax
		}
	}
	if !(white > 0) {
		return demosaic.CFA{}, pre, fmt.Errorf("white level %g at or below black %g", v.Maximum, black)
	}
	for i := range 4 {
		c.Scale[i] = float32(pre[v.Colour[i]] / white)
	}
	return c, pre, nil
}

// dataMaximum is LibRaw's data_maximum: the largest sample above its
// phase's black level, less that level (copy_bayer). The black level is
// one per phase, so that is the largest of each phase's largest sample
// less its level: the samples are compared as integers, rows in parallel
// on threads goroutines (≤ 0: GOMAXPROCS).
func dataMaximum(v libraw.BayerView, black [4]float64, threads int) float64 {
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

// rcdInput returns the CFA RCD demosaics for j (the unpacked data in
// place, normalised by bayerCFA, on j.threads goroutines, releasing the
// raw rows it has passed) and the multipliers applied, or why the file is
// not for RCD.
func (j *job) rcdInput() (c demosaic.CFA, mul [4]float64, why string, err error) {
	v, err := j.h.Bayer()
	if errors.Is(err, libraw.ErrNoCFA) {
		return c, mul, err.Error(), nil
	}
	if err != nil {
		return c, mul, "", fmt.Errorf("rcd: %w", err)
	}
	c, mul, err = bayerCFAOn(v, j.params, j.threads)
	if err != nil {
		// LibRaw's processing handles these its own way (its grey world,
		// unit scale for a white level at black).
		return c, mul, err.Error(), nil
	}
	// The per-file thread count LibRaw's processing would get.
	c.Threads = j.threads
	if j.live.f != nil {
		c.ThreadsNow = j.threadsNow // may grow while the bands run
	}
	// The raw rows RCD has passed go back to the system as it works down
	// the image, so the raw data and the camera image are not both
	// resident in full (issue 14 point 5).
	d, err := j.h.RawDiscarder()
	if err != nil {
		return c, mul, "", fmt.Errorf("rcd: %w", err)
	}
	if !keepRawRows {
		c.Done = func(y int) { d.Discard(y) }
	}
	return c, mul, "", nil
}

// demosaicOwn demosaics j's unpacked Bayer data with RCD into j.camera. It
// returns handled false, with why, when the file is not for it (see
// libraw.Handle.Bayer, bayerCFA); the demosaic stage then runs LibRaw's.
func (j *job) demosaicOwn(ctx context.Context) (handled bool, why string, err error) {
	c, mul, why, err := j.rcdInput()
	if why != "" || err != nil {
		return false, why, err
	}
	c.Stop = func() bool { return ctx.Err() != nil }
	pix := make([]float32, c.W*c.H*3)
	if err := demosaic.RCD(c, pix); errors.Is(err, demosaic.ErrStopped) {
		return false, "", ctx.Err()
	} else if err != nil {
		return false, "", fmt.Errorf("rcd: %w", err)
	}
	j.wb.Multipliers = [3]float64{mul[0] / mul[1], 1, mul[2] / mul[1]}
	j.camera, j.colors = pix, 3
	j.img = Image{W: c.W, H: c.H}
	return true, "", nil
}

// rcdCost is the demosaic step's memory on the RCD path: the W×H×3
// float32 camera image (12 bytes per pixel of the visible area) and each
// goroutine's tile planes (demosaic.TileBytes); no LibRaw image. After: the
// image, the raw data freed with the handle.
func rcdCost(m memCtx) StepMemory {
	lw, lh := libRawSize(m.fi, m.s)
	img := 12 * int64(lw) * int64(lh)
	return StepMemory{Scratch: demosaic.TileBytes * int64(max(1, m.threads)), Alloc: img, Free: rawDataBytes(m.fi)}
}

// maybeXTrans reports whether fi may be a Fujifilm X-Trans file, which
// keeps LibRaw's demosaic (and its cost): the header does not tell the
// CFA pattern, so every Fujifilm mosaic counts.
func maybeXTrans(fi FileInfo) bool {
	return fi.Header != nil && strings.HasPrefix(strings.ToUpper(fi.Header.Make), "FUJI") || strings.HasPrefix(strings.ToUpper(fi.Make), "FUJI")
}

// keepRawRows turns the release of the raw rows off, for
// BenchmarkRCDDecodePeak's comparison only.
var keepRawRows bool
