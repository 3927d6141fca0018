package lens

import (
	"context"

	"github.com/rawbatch/rawbatch/pipeline/internal/par"
	"github.com/rawbatch/rawbatch/pipeline/internal/thp"
	"github.com/rawbatch/rawbatch/pipeline/warp"
)

// The reference the band form (Band, Correct) is tested against: the
// devignetting and the remap written straight from their definitions,
// each over the whole image into a second one, the remap through
// warp.RemapInto (interleaved taps, no copy of the rows).

// refRows is the number of rows refRemap resamples at a time.
const refRows = 256

// refDevignette multiplies pix (w×h×3 float32) by lensfun's vignetting
// gains (devignette: lensfun.Modifier.Devignette). lensfun computes them
// on one thread, so they are taken on every Step-th row (and the
// last), from a row of ones, and interpolated linearly in y between those
// rows while the image is multiplied in parallel; the gains are radial
// and smooth (a polynomial in r², lensfun's "pa" model), so the
// interpolation's error is under 0.05 % of the gain (TestLensDevignetteRows:
// 0.03 % at the corners of the EF 24-105 at 24 mm f/4, gain 6.3).
// A gain that is implausible on any node row (≤ 0, NaN, Inf or above
// dngopcode.MaxGain = 16: checkGains) leaves pix as it was and
// returns an *ImplausibleVignetting.
func refDevignette(devignette func(pix []float32, y0, rows int) error, pix []float32, w, h int) error {
	gains, ys, err := nodeGains(devignette, w, h)
	if err != nil {
		return err
	}
	par.Rows(h, func(lo, hi int) {
		for y := lo; y < hi; y++ {
			k := 0
			if len(ys) > 1 {
				k = min(y/Step, len(ys)-2)
			}
			k1 := min(k+1, len(ys)-1)
			t := float32(0)
			if ys[k1] > ys[k] {
				t = float32(y-ys[k]) / float32(ys[k1]-ys[k])
			}
			g0, g1 := gains[k*w*3:(k+1)*w*3], gains[k1*w*3:(k1+1)*w*3]
			row := pix[y*w*3 : (y+1)*w*3]
			for i := range row {
				row[i] *= g0[i] + t*(g1[i]-g0[i])
			}
		}
	})
	return nil
}

// refRemap resamples src (w×h×3) through per-channel source positions
// that points (lensfun.Modifier.Points) gives at the grid of nodes
// (Nodes), interpolated in between; the nodes are computed on the
// calling goroutine (lensfun's handles belong to its thread), the image is
// remapped by warp.RemapInto in parallel, band by band straight into the
// corrected image (so a cancel is seen).
func refRemap(ctx context.Context, src []float32, w, h int, points func(dst, xy []float32) error) ([]float32, error) {
	g, err := NewNodes(w, h, points)
	if err != nil {
		return nil, err
	}
	out := thp.Floats(len(src))
	for y0 := 0; y0 < h; y0 += refRows {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := min(refRows, h-y0)
		warp.RemapInto(out[y0*w*3:(y0+n)*w*3], src, w, h, 3, w, n, func(y, ch int, sx, sy []float32) { g.row(y0+y, ch, sx, sy) })
	}
	return out, nil
}
