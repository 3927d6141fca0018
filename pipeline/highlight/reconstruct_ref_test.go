package highlight

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// refReconstructor is Reconstructor as it was before the box sums were
// kept per column and restricted to the columns near clipped pixels:
// float64 horizontal box sums of whole rows (a prefix sum each) whenever
// a clipped row is within the radius, summed vertically by adding and
// subtracting rows. Reconstructor's results are compared with it
// (TestReconstructorMatchesReference).

type refReconstructor struct {
	w, h, r int
	thr     float32
	// flagged rows (0..flagged−1) have clippedRow set: the row has a
	// pixel at or above the threshold.
	clippedRow []bool
	flagged    int
	// next is the first row not finished.
	next int
	// The box sums (see Reconstruct): ring holds the horizontal sums of
	// the rows in the window (valid marks those computed; a row is
	// computed only when a clipped row lies within r of it, since only a
	// clipped pixel reads the sums), vert their running vertical sum,
	// inWin how many rows in it are valid; added is the next row to enter
	// the window.
	ring   [][][5]float64
	valid  []bool
	prefix [][5]float64
	vert   [][5]float64
	inWin  int
	added  int
	// orig holds rows y−1 and y as the demosaic made them while row y is
	// finished: sceneLevel reads the 3×3 neighbourhood.
	orig [2][]float32
}

// NewrefReconstructor returns the row-by-row Reconstruct of a w×h image
// (w, h > 0) with the given threshold.
func newRefReconstructor(w, h int, threshold float32) *refReconstructor {
	return &refReconstructor{w: w, h: h, r: ReconstructRadius(w, h), thr: threshold, clippedRow: make([]bool, h)}
}

// Lookahead is how many rows below the last row a call of Rows finishes
// it reads: twice ReconstructRadius (the box's rows, and whether the rows
// of their boxes are clipped).
func (rc *refReconstructor) Lookahead() int { return 2 * rc.r }

// Next is the first row not finished yet.
func (rc *refReconstructor) Next() int { return rc.next }

// Rows finishes rows Next() to y1−1 in place. row(y) returns row y of the
// image (3·w float32, white-balanced camera RGB, clip level 1) for every
// y from Next() to min(h, y1+Lookahead())−1, as the demosaic made it (rows
// at or after Next() are not yet changed); rows above Next() are not read
// again.
func (rc *refReconstructor) Rows(y1 int, row func(y int) []float32) {
	y1 = min(y1, rc.h)
	if rc.orig[0] == nil {
		rc.orig = [2][]float32{make([]float32, 3*rc.w), make([]float32, 3*rc.w)}
	}
	for y := rc.next; y < y1; y++ {
		rc.flag(min(rc.h, y+2*rc.r+1), row)
		rc.slide(y, row)
		// orig[0] is row y−1 as the demosaic made it (row y at the
		// top), orig[1] row y.
		cur := row(y)
		copy(rc.orig[1], cur)
		if y == 0 {
			copy(rc.orig[0], cur)
		}
		if rc.clippedRow[y] {
			below := rc.orig[1]
			if y+1 < rc.h {
				below = row(y + 1)
			}
			rc.finish(y, cur, [3][]float32{rc.orig[0], rc.orig[1], below})
		}
		rc.orig[0], rc.orig[1] = rc.orig[1], rc.orig[0]
	}
	rc.next = max(rc.next, y1)
}

// flag sets clippedRow of the rows up to y1−1.
func (rc *refReconstructor) flag(y1 int, row func(y int) []float32) {
	for ; rc.flagged < y1; rc.flagged++ {
		p := row(rc.flagged)
		for i := 0; i+2 < len(p); i += 3 {
			if max(p[i], p[i+1], p[i+2]) > rc.thr-blendBand {
				rc.clippedRow[rc.flagged] = true
				break
			}
		}
	}
}

// nearClipped reports whether a row within r of y is clipped (all of
// them flagged).
func (rc *refReconstructor) nearClipped(y int) bool {
	for k := max(0, y-rc.r); k <= min(rc.h-1, y+rc.r); k++ {
		if rc.clippedRow[k] {
			return true
		}
	}
	return false
}

// slide moves the box window to rows y−r .. y+r (those that exist).
func (rc *refReconstructor) slide(y int, row func(y int) []float32) {
	win := 2*rc.r + 1
	if rc.ring == nil {
		rc.valid = make([]bool, win)
		rc.vert = make([][5]float64, rc.w)
		rc.prefix = make([][5]float64, rc.w+1)
		rc.ring = make([][][5]float64, win)
	}
	for ; rc.added <= min(y+rc.r, rc.h-1); rc.added++ {
		in := rc.added
		if out := in - win; out >= 0 && rc.valid[out%win] {
			rc.addRow(rc.ring[out%win], -1)
			rc.valid[out%win] = false
			rc.inWin--
			if rc.inWin == 0 {
				clear(rc.vert) // nothing left: exactly zero again
			}
		}
		if !rc.nearClipped(in) {
			continue
		}
		k := in % win
		if rc.ring[k] == nil {
			rc.ring[k] = make([][5]float64, rc.w)
		}
		rc.rowSums(row(in), rc.ring[k])
		rc.addRow(rc.ring[k], 1)
		rc.valid[k] = true
		rc.inWin++
	}
	// The row leaving the window when y+r is past the last row.
	if out := y - rc.r - 1; out >= 0 && out+win >= rc.added && rc.valid[out%win] {
		rc.addRow(rc.ring[out%win], -1)
		rc.valid[out%win] = false
		rc.inWin--
		if rc.inWin == 0 {
			clear(rc.vert)
		}
	}
}

// rowSums sets dst to the horizontal box sums of row p: the chromaticity
// of unclipped bright pixels (3), their count, and the count of unclipped
// pixels.
func (rc *refReconstructor) rowSums(p []float32, dst [][5]float64) {
	w, r, prefix := rc.w, rc.r, rc.prefix
	for x := range w {
		var f [5]float64
		q := p[3*x : 3*x+3 : 3*x+3]
		if !(q[0] >= rc.thr || q[1] >= rc.thr || q[2] >= rc.thr) {
			f[4] = 1
			if m := max(q[0], q[1], q[2]); m > minChromaLevel {
				for c := range 3 {
					f[c] = float64(max(q[c], 0) / m)
				}
				f[3] = 1
			}
		}
		for k := range f {
			prefix[x+1][k] = prefix[x][k] + f[k]
		}
	}
	for x := range w {
		x0, x1 := max(0, x-r), min(w-1, x+r)
		for k := range 5 {
			dst[x][k] = prefix[x1+1][k] - prefix[x0][k]
		}
	}
}

func (rc *refReconstructor) addRow(row [][5]float64, sign float64) {
	for x := range rc.vert {
		for k := range 5 {
			rc.vert[x][k] += sign * row[x][k]
		}
	}
}

// finish reconstructs the pixels of row y (pix) near or above the
// threshold from the window's sums. The chromaticity comes only from
// unclipped pixels (all channels below the threshold), which keep their
// values up to the blend (see Reconstruct), and the sums were taken from
// the rows before any change, so working in place is safe.
func (rc *refReconstructor) finish(y int, pix []float32, nb [3][]float32) {
	w, h, r := rc.w, rc.h, rc.r
	lo := rc.thr - blendBand
	y0, y1 := max(0, y-r), min(h-1, y+r)
	for x := range w {
		p := pix[3*x : 3*x+3 : 3*x+3]
		peak := max(p[0], p[1], p[2])
		if !(peak > lo) {
			continue
		}
		x0, x1 := max(0, x-r), min(w-1, x+r)
		s := rc.vert[x]
		var rho [3]float64
		a := 0.0
		if s[3] > 0 {
			rho = [3]float64{s[0] / s[3], s[1] / s[3], s[2] / s[3]}
			if m := math.Max(rho[0], math.Max(rho[1], rho[2])); m > 0 {
				for c := range rho {
					rho[c] /= m
				}
				area := float64((x1 - x0 + 1) * (y1 - y0 + 1))
				a = math.Min(1, 2*s[4]/area)
			}
		}
		rec := reconstructPixel(p, rho, a, rc.thr)
		// The neighbours' colour counts fully from minChromaCount
		// contributing pixels on, less with fewer (a box sum: it changes
		// by at most one row or column a pixel, so the result has no edge
		// where the last unclipped pixel leaves the box).
		if nw := s[3] / minChromaCount(r); nw < 1 {
			own := reconstructPixel(p, [3]float64{}, 0, rc.thr)
			for c := range 3 {
				rec[c] = nw*rec[c] + (1-nw)*own[c]
			}
		}
		// t: how far the pixel is into the clipping, 0 at lo, 1 at
		// the threshold (smoothstep), so the result is continuous in the
		// pixel's values and noise around the threshold makes no step.
		t := math.Min(1, (float64(peak)-float64(lo))/float64(blendBand))
		t = t * t * (3 - 2*t)
		var q [3]float64
		for c := range 3 {
			orig := float64(min(max(p[c], 0), 1))
			q[c] = (1-t)*orig + t*rec[c]
		}
		q = shoulder(q, sceneLevel(nb, x, q, rc.thr))
		// A pixel near the clip among neighbours that are not (a hot
		// photosite, a noise spike) is no highlight: kept as clip keeps
		// it, fully from at most one such neighbour, the reconstruction
		// fully from four (isolatedWeight).
		if iw := isolatedWeight(nb, x, lo); iw < 1 {
			all := true
			for c := range 3 {
				cl := float64(min(max(p[c], 0), 1))
				all = all && cl >= float64(rc.thr)
				q[c] = iw*q[c] + (1-iw)*cl
			}
			if all {
				q = [3]float64{1, 1, 1}
			}
		}
		for c := range 3 {
			p[c] = float32(q[c])
		}
	}
}

// refReconstruct is Reconstruct through refReconstructor.
func refReconstruct(pix []float32, w, h int, threshold float32) []float32 {
	r := newRefReconstructor(w, h, threshold)
	r.Rows(h, func(y int) []float32 { return pix[3*y*w : 3*(y+1)*w : 3*(y+1)*w] })
	return pix
}

// glints is a w×h image of coloured noise (some values negative, as a
// demosaic leaves them) with n small bright spots at random places, the
// image's corners and the edges of Reconstructor's blocks of columns:
// some clipped in every channel, some in one, some only in the fade-in
// band below the threshold.
func glints(w, h, n int, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 11))
	pix := make([]float32, w*h*3)
	for i := range pix {
		pix[i] = 0.02 + 0.7*rng.Float32()*rng.Float32() - 0.03*rng.Float32()
	}
	spot := func(cx, cy, kind int) {
		rad := 1 + rng.IntN(4)
		for y := max(0, cy-rad); y < min(h, cy+rad); y++ {
			for x := max(0, cx-rad); x < min(w, cx+rad); x++ {
				p := pix[(y*w+x)*3 : (y*w+x)*3+3]
				switch kind {
				case 0:
					p[0], p[1], p[2] = 1, 1, 1
				case 1:
					p[rng.IntN(3)] = 1
				default:
					p[rng.IntN(3)] = DefaultThreshold - blendBand*rng.Float32()
				}
			}
		}
	}
	for range n {
		spot(rng.IntN(w), rng.IntN(h), rng.IntN(3))
	}
	for _, c := range [][2]int{{0, 0}, {w - 1, 0}, {0, h - 1}, {w - 1, h - 1}} {
		spot(c[0], c[1], 0)
	}
	// 3×3 clipped squares ending on either side of a boundary between
	// words of blocks (64 blocks) and between two blocks.
	square := func(x0 int) {
		y0 := rng.IntN(h - 2)
		for y := y0; y < y0+3; y++ {
			for x := max(0, x0); x < min(w, x0+3); x++ {
				p := pix[(y*w+x)*3 : (y*w+x)*3+3]
				p[0], p[1], p[2] = 1, 1, 1
			}
		}
	}
	for x := 64 * blockW; x <= w; x += 64 * blockW {
		square(x - 3)
		square(x)
		square(x - 32*blockW - 3)
		square(x - 32*blockW)
	}
	return pix
}

// TestReconstructorMatchesReference: Reconstruct (column sums restricted
// to the columns near clipped pixels, in integers) gives
// refReconstructor's values (whole-row float64 box sums) within 1e-6 a
// sample, and most samples bit for bit, on clipped discs, ragged
// highlights and scattered glints (rows of several words of blocks,
// widths not a multiple of the block), for any split into bands.
func TestReconstructorMatchesReference(t *testing.T) {
	cases := []struct {
		name string
		w, h int
		pix  []float32
	}{
		{"discs", 160, 300, blobs(160, 300, []int{0, 40, 41, 150, 299})},
		{"ragged", 160, 160, raggedClip(160, [3]float64{0.35, 0.6, 1}, 5)},
		{"disc", 150, 150, disc(150, [3]float64{0.3, 0.25, 0.1}, [3]float64{1, 0.9, 1})},
		{"glints", 2100, 90, glints(2100, 90, 60, 1)},
		{"glints-narrow", 37, 200, glints(37, 200, 12, 2)},
		{"glints-sparse", 2100, 150, glints(2100, 150, 0, 4)},
		{"glints-dense", 1031, 70, glints(1031, 70, 400, 3)},
	}
	for _, tc := range cases {
		want := refReconstruct(slices.Clone(tc.pix), tc.w, tc.h, DefaultThreshold)
		if slices.Equal(want, tc.pix) {
			t.Fatalf("%s: the reference reconstructed nothing", tc.name)
		}
		for _, band := range []int{tc.h, 5} {
			got := slices.Clone(tc.pix)
			rc := NewReconstructor(tc.w, tc.h, DefaultThreshold)
			for y := 0; y < tc.h; y += band {
				rc.Rows(y+band, func(y int) []float32 { return got[3*y*tc.w : 3*(y+1)*tc.w] })
			}
			worst, same := 0.0, 0
			for i := range got {
				d := math.Abs(float64(got[i] - want[i]))
				worst = max(worst, d)
				if got[i] == want[i] {
					same++
				}
			}
			if worst > 1e-6 {
				t.Errorf("%s, bands of %d: differs from the reference by up to %g, want ≤ 1e-6", tc.name, band, worst)
			}
			if frac := float64(same) / float64(len(got)); frac < 0.999 {
				t.Errorf("%s, bands of %d: %.4f of the samples bit-identical to the reference, want ≥ 0.999", tc.name, band, frac)
			}
			t.Logf("%s, bands of %d: max |difference| %g, %d of %d samples differ", tc.name, band, worst, len(got)-same, len(got))
		}
	}
}
