package lens

import (
	"context"
	"errors"
)

// correctRows is the number of rows Correct finishes between checks for
// a cancel.
const correctRows = 256

// ErrPositions is returned by Correct when a source position of the grid
// is not finite (lensfun's model gave NaN or Inf): nothing is remapped.
var ErrPositions = errors.New("the lens model's source positions are not finite")

// Correct corrects pix (w×h×3 float32, interleaved, the sensor's frame)
// in place with Band, the streamed conversion's filter, run over the
// whole image: the vignetting gains of the node rows (gains, gc values a
// pixel, of the rows ys: NodeGainsCompact; nil for none) interpolated
// linearly in y between them, then the remap through the grid of source
// positions g (nil for none), Keys bicubic. lensfun computes the gains on
// one thread, so only the node rows are taken from it; the gains are
// radial and smooth (a polynomial in r², lensfun's "pa" model), so the
// interpolation's error is under 0.05 % of the gain
// (TestLensDevignetteRows: 0.03 % at the corners of the EF 24-105 at
// 24 mm f/4, gain 6.3). Besides pix, it holds only Band's copy of the
// rows the remap reads (about twice the largest displacement, plus
// bandChunk rows). Errors: ctx's when cancelled (pix is then partly
// corrected), ErrPositions.
func Correct(ctx context.Context, pix []float32, w, h int, gains []float32, gc int, ys []int, g *Nodes) error {
	b := NewBand(w, h, 0)
	if gains != nil {
		b.SetGains(gains, gc, ys)
	}
	if g != nil {
		if _, ok := b.SetGrid(g); !ok {
			return ErrPositions
		}
	}
	if b.Empty() {
		return nil
	}
	b.Start()
	row := func(y int) []float32 { return pix[y*w*3 : (y+1)*w*3 : (y+1)*w*3] }
	for y0 := 0; y0 < h; y0 += correctRows {
		if err := ctx.Err(); err != nil {
			return err
		}
		b.Rows(y0, min(h, y0+correctRows), row)
	}
	return nil
}
