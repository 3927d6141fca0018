package resize

import (
	"fmt"

	"github.com/rawbatch/rawbatch/pipeline/internal/par"
)

// Rows is Downscale done band by band: the source rows are pushed in
// order (Push) and each output row is written as soon as the source rows
// under its kernel are in, so that only the box sums of one reduced row
// and the horizontally resampled rows the vertical kernel still needs are
// held (about 6·ReducingGap + the rows of one push, each dw×c float32),
// never the source or its reduction whole. Every output value is computed
// by the same operations in the same order as Downscale's, so the result
// equals Downscale's for the same sizes.
type Rows struct {
	w, h, c, dw, dh int
	kx, ky          int
	rw, rh          int // the box-reduced size (w, h without a reduction)
	hw, vw          weights
	hpass, vpass    bool
	dst             func(y int) []float32

	// in: source rows pushed so far; acc: the box sums of reduced row
	// in/ky (its rows pushed so far); red: the reduced row made from them.
	in  int
	acc []float64
	red []float32
	// ring holds the horizontally resampled reduced rows from base on;
	// spare, rows no longer read, for reuse; made: reduced rows made so
	// far; out: output rows written so far.
	ring  [][]float32
	spare [][]float32
	base  int
	made  int
	out   int
	// pend: reduced rows made by the current push, resampled together.
	pend [][]float32
}

// NewRows returns a band-wise Downscale of an interleaved w×h×c float32
// image (linear light) to dw×dh: Push hands it the source rows in order,
// and output row y (dw×c float32) is written into dst(y) once the rows
// under its kernel are in. dst may be called from several goroutines at
// once, for different rows. It panics on a size Downscale refuses.
func NewRows(w, h, c, dw, dh int, dst func(y int) []float32) *Rows {
	if w <= 0 || h <= 0 || c <= 0 || dw <= 0 || dh <= 0 {
		panic(fmt.Sprintf("resize: invalid sizes %dx%dx%d -> %dx%d", w, h, c, dw, dh))
	}
	r := &Rows{w: w, h: h, c: c, dw: dw, dh: dh, dst: dst}
	r.kx = max(1, int(float64(w)/float64(dw)/ReducingGap))
	r.ky = max(1, int(float64(h)/float64(dh)/ReducingGap))
	r.rw, r.rh = (w+r.kx-1)/r.kx, (h+r.ky-1)/r.ky
	ew, eh := float64(w), float64(h)
	if r.kx > 1 || r.ky > 1 {
		ew, eh = float64(w)/float64(r.kx), float64(h)/float64(r.ky)
	}
	r.hpass = dw != r.rw || ew != float64(r.rw)
	r.vpass = dh != r.rh || eh != float64(r.rh)
	if r.hpass {
		r.hw = makeWeightsExtent(r.rw, ew, dw)
	}
	if r.vpass {
		r.vw = makeWeightsExtent(r.rh, eh, dh)
	}
	if r.kx > 1 || r.ky > 1 {
		r.acc = make([]float64, r.rw*c)
	}
	return r
}

// Done reports whether every output row has been written.
func (r *Rows) Done() bool { return r.out == r.dh }

// Push hands over the next source rows: rows holds whole rows (w×c
// float32 each), the first being the row after those pushed before. It
// writes the output rows they complete. rows is not kept.
func (r *Rows) Push(rows []float32) {
	n := r.w * r.c
	if len(rows)%n != 0 || r.in+len(rows)/n > r.h {
		panic(fmt.Sprintf("resize: pushed %d samples after %d of %d rows of %d", len(rows), r.in, r.h, n))
	}
	r.pend = r.pend[:0]
	if r.acc == nil {
		// No reduction: each source row is a reduced row.
		for lo := 0; lo < len(rows); lo += n {
			r.pend = append(r.pend, rows[lo:lo+n])
			r.in++
		}
	} else {
		for lo := 0; lo < len(rows); {
			// The source rows of the current reduced row in this push.
			ry := r.in / r.ky
			end := min((ry+1)*r.ky, r.h)
			k := min(end-r.in, (len(rows)-lo)/n)
			r.boxAdd(rows[lo : lo+k*n])
			lo += k * n
			r.in += k
			if r.in == end {
				r.pend = append(r.pend, r.boxRow(end-ry*r.ky))
				clear(r.acc)
			}
		}
	}
	r.resample()
	r.emit()
}

// boxAdd adds whole source rows to the box sums, as boxReduce sums them:
// float32 along one box row, float64 across rows.
func (r *Rows) boxAdd(rows []float32) {
	w, c, kx := r.w, r.c, r.kx
	par.Rows(r.rw, func(lo, hi int) {
		for y := 0; y < len(rows)/(w*c); y++ {
			boxAddRow(r.acc, rows[y*w*c:(y+1)*w*c], w, c, kx, lo, hi)
		}
	})
}

// boxRow returns the reduced row of the box sums of rows source rows (a
// new slice: the resampling reads it after later sums).
func (r *Rows) boxRow(rows int) []float32 {
	c, kx := r.c, r.kx
	out := make([]float32, r.rw*c)
	for rx := 0; rx < r.rw; rx++ {
		nb := float64(rows * (min(rx*kx+kx, r.w) - rx*kx))
		for ch := 0; ch < c; ch++ {
			out[rx*c+ch] = float32(r.acc[rx*c+ch] / nb)
		}
	}
	return out
}

// resample puts the pending reduced rows through the horizontal pass into
// the ring.
func (r *Rows) resample() {
	rl := r.dw * r.c
	start := len(r.ring)
	for range r.pend {
		var b []float32
		if k := len(r.spare); k > 0 {
			b, r.spare = r.spare[k-1], r.spare[:k-1]
		} else {
			b = make([]float32, rl)
		}
		r.ring = append(r.ring, b)
	}
	pend := r.pend
	par.Rows(len(pend), func(lo, hi int) {
		if r.hpass {
			horizontalRows(r.ring[start+lo:start+hi], pend[lo:hi], r.c, &r.hw)
			return
		}
		for i := lo; i < hi; i++ {
			copy(r.ring[start+i], pend[i])
		}
	})
	r.made += len(pend)
	clear(r.pend)
	r.pend = r.pend[:0]
}

// emit writes the output rows whose vertical taps are all made, then lets
// go of the ring's rows no later output row reads.
func (r *Rows) emit() {
	y0 := r.out
	y1 := y0
	for y1 < r.dh && r.last(y1) <= r.made {
		y1++
	}
	if y1 == y0 {
		return
	}
	rl := r.dw * r.c
	par.Rows(y1-y0, func(lo, hi int) {
		for y := y0 + lo; y < y0+hi; y++ {
			dst := r.dst(y)[:rl]
			if !r.vpass {
				copy(dst, r.ring[y-r.base])
				continue
			}
			s := r.vw.start[y] - r.base
			verticalRow(dst, &r.vw, y, func(k int) []float32 { return r.ring[s+k] })
		}
	})
	r.out = y1
	// The first reduced row a later output row reads.
	keep := r.made
	if y1 < r.dh {
		keep = y1
		if r.vpass {
			keep = r.vw.start[y1]
			for y := y1 + 1; y < r.dh && r.vw.start[y] < keep; y++ {
				keep = r.vw.start[y]
			}
		}
	}
	for r.base < keep && len(r.ring) > 0 {
		r.spare = append(r.spare, r.ring[0])
		r.ring[0] = nil
		r.ring = r.ring[1:]
		r.base++
	}
}

// last is one past the last reduced row output row y reads.
func (r *Rows) last(y int) int {
	if !r.vpass {
		return y + 1
	}
	return r.vw.start[y] + r.vw.n[y]
}
