package demosaic

import (
	"errors"
	"fmt"
	"image"
)

// Bands demosaics a region of a CFA by RCD in bands of upright rows, for a
// conversion that streams its image to the encoder instead of holding it
// whole: the region is rotated and mirrored upright by
// a LibRaw flip code (bit 2 transposes rows and columns, then bit 1
// mirrors vertically and bit 0 horizontally, as pipeline.Oriented reads an
// image), and each call of Rows makes the next rows of that upright image.
//
// Every photosite gets exactly the values RCD gives it in a whole-image
// demosaic: a tile's output depends only on the CFA around it (RCD's
// window of margin photosites, mirrored at the CFA's own edges), not on
// where the tile lies, so Bands places its tiles on the band's own grid.
type Bands struct {
	c    CFA
	rect image.Rectangle // the region, in CFA photosites
	flip int
	// W, H: the upright size in pixels (the region's, swapped when the
	// flip transposes).
	W, H int
	// next is the first upright row not made yet.
	next int
}

// BandRows is how many upright rows a call of Bands.Rows makes at most
// with full efficiency: one tile's height, so that each band is one row of
// tiles and the tiles' margins are recomputed no more than in RCD.
const BandRows = tile

// NewBands returns the band demosaic of region r of c (photosites; the
// whole CFA when r is empty) upright by flip. Errors: an invalid CFA
// (ErrNotBayer, sizes), a CFA smaller than 2×2 photosites (RCD's
// bilinear case, which is not banded), a region outside the CFA.
func NewBands(c CFA, r image.Rectangle, flip int) (*Bands, error) {
	if c.W < 2 || c.H < 2 {
		return nil, fmt.Errorf("demosaic: %d×%d CFA too small for bands", c.W, c.H)
	}
	one := c // check everything but the size of an output of W×H
	one.W, one.H = 1, 1
	if err := one.check(make([]float32, 3)); err != nil {
		return nil, err
	}
	if c.Stride < c.W || len(c.Pix) < (c.H-1)*c.Stride+c.W {
		return nil, fmt.Errorf("demosaic: %d samples with stride %d do not hold %d×%d", len(c.Pix), c.Stride, c.W, c.H)
	}
	full := image.Rect(0, 0, c.W, c.H)
	if r.Empty() {
		r = full
	}
	if !r.In(full) {
		return nil, fmt.Errorf("demosaic: region %v outside the %d×%d CFA", r, c.W, c.H)
	}
	flip &= 7
	b := &Bands{c: c, rect: r, flip: flip, W: r.Dx(), H: r.Dy()}
	if flip&4 != 0 {
		b.W, b.H = b.H, b.W
	}
	return b, nil
}

// upright returns the upright position (column, row) of region photosite
// (x, y) (relative to the region's corner): the inverse of
// pipeline.Oriented's mapping.
func (b *Bands) upright(x, y int) (int, int) {
	rw, rh := b.rect.Dx(), b.rect.Dy()
	if b.flip&2 != 0 {
		y = rh - 1 - y
	}
	if b.flip&1 != 0 {
		x = rw - 1 - x
	}
	if b.flip&4 != 0 {
		return y, x
	}
	return x, y
}

// ErrBandOrder is returned by Bands.Rows for rows not asked in order.
var ErrBandOrder = errors.New("demosaic: band rows not asked in order")

// Rows demosaics upright rows y0 to y1−1 into dst ((y1−y0)×W×3 float32,
// interleaved, linear camera RGB in [0, 1]), on up to c.Threads goroutines
// (c.ThreadsNow() when set, read at each call; the band's tiles in
// parallel). Rows are asked in order: y0 is the row
// after the previous call's last. When the flip keeps the CFA's row order
// (no transpose, no vertical mirror), c.Done is told each raw row no later
// band reads. Errors: ErrBandOrder, ErrStopped (c.Stop), a short dst.
func (b *Bands) Rows(y0, y1 int, dst []float32) error {
	if y0 != b.next || y1 < y0 || y1 > b.H {
		return fmt.Errorf("%w: rows %d to %d after %d of %d", ErrBandOrder, y0, y1, b.next, b.H)
	}
	if len(dst) < (y1-y0)*b.W*3 {
		return fmt.Errorf("demosaic: output of %d floats for %d rows of %d×3", len(dst), y1-y0, b.W)
	}
	if y0 == y1 {
		return nil
	}
	if b.c.Stop != nil && b.c.Stop() {
		return ErrStopped
	}
	// The region photosites of upright rows y0..y1−1.
	rw, rh := b.rect.Dx(), b.rect.Dy()
	var src image.Rectangle
	switch {
	case b.flip&4 == 0 && b.flip&2 == 0:
		src = image.Rect(0, y0, rw, y1)
	case b.flip&4 == 0:
		src = image.Rect(0, rh-y1, rw, rh-y0)
	case b.flip&1 == 0:
		src = image.Rect(y0, 0, y1, rh)
	default:
		src = image.Rect(rw-y1, 0, rw-y0, rh)
	}
	// dst index of region photosite (x, y): base + x·dx + y·dy (affine).
	at := func(x, y int) int {
		u, v := b.upright(x, y)
		return (v-y0)*b.W + u
	}
	base := at(0, 0)
	dx, dy := at(1, 0)-base, at(0, 1)-base
	ox, oy := b.rect.Min.X, b.rect.Min.Y
	// The tiles, in CFA photosites, from an even corner: RCD's window
	// keeps the CFA's parity only from even positions.
	lo, hi := src.Min.Add(b.rect.Min), src.Max.Add(b.rect.Min)
	gx, gy := lo.X&^1, lo.Y&^1
	tx, ty := (hi.X-gx+tile-1)/tile, (hi.Y-gy+tile-1)/tile
	threads := b.c.Threads
	if b.c.ThreadsNow != nil {
		threads = b.c.ThreadsNow() // the conversion's threads may grow
	}
	rows(threads, tx*ty, func(n0, n1 int) {
		t := tiles.Get().(*rcdTile)
		defer tiles.Put(t)
		for n := n0; n < n1; n++ {
			tx0, ty0 := gx+n%tx*tile, gy+n/tx*tile
			x0, y0 := max(tx0, lo.X), max(ty0, lo.Y)
			x1, y1 := min(tx0+tile, hi.X), min(ty0+tile, hi.Y)
			t.out = func(t *rcdTile) {
				R, G, B := t.rgb[0], t.rgb[1], t.rgb[2]
				for y := y0; y < y1; y++ {
					i := (y-t.y0)*span + x0 - t.x0
					d := base + (x0-ox)*dx + (y-oy)*dy
					for x := x0; x < x1; x++ {
						o := dst[3*d : 3*d+3 : 3*d+3]
						o[0], o[1], o[2] = R[i], G[i], B[i]
						i++
						d += dx
					}
				}
			}
			t.run(&b.c, tx0, ty0, nil)
			t.out = nil
		}
	})
	b.next = y1
	if b.c.Done != nil && b.flip&6 == 0 {
		// The next band reads from its first row less the margin.
		if y1 == b.H {
			b.c.Done(b.c.H)
		} else {
			b.c.Done(max(0, oy+y1-margin))
		}
	}
	return nil
}
