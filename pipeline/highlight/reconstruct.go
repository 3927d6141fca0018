package highlight

import "math"

// The highlight modes work on the demosaiced, white-balanced camera RGB that
// LibRaw's Process (highlight = 0, after RescaleRaw) and CopyImage give:
// interleaved float32, 3 channels, W×H, where every channel clips at 1.0.
// docs/highlights.md says why they run there and not on the CFA data.

// DefaultThreshold is the level (fraction of the clip level 1.0) from which
// a pixel counts as clipped: any channel at or above it. Below 1 because
// demosaicing (AHD) blends clipped photosites with their neighbours at the
// edge of a clipped area.
const DefaultThreshold float32 = 0.97

// Clip is the `clip` highlight mode, in place on pix (W×H×3 white-balanced
// camera RGB, clip level 1): every channel is clamped to [0, 1], and a pixel
// whose channels are all at or above threshold becomes exactly (1, 1, 1),
// removing what the demosaic left inside clipped areas. With the white
// level from the data (Equalise) all channels clip together, so clipped
// areas are neutral white; pixels with only some channels clipped keep them
// at 1 (the hue shift of per-channel clipping). It returns pix.
func Clip(pix []float32, w, h int, threshold float32) []float32 {
	for i := 0; i+2 < len(pix) && i < w*h*3; i += 3 {
		p := pix[i : i+3 : i+3]
		all := true
		for c := range p {
			p[c] = min(max(p[c], 0), 1)
			if p[c] < threshold {
				all = false
			}
		}
		if all {
			p[0], p[1], p[2] = 1, 1, 1
		}
	}
	return pix
}

// ReconstructRadius returns the radius in pixels of the neighbourhood
// Reconstruct takes colour from, which is also the width of its blend into
// white: 1/200 of the long edge, between 8 and 32 (a 6000-pixel image: 30).
func ReconstructRadius(w, h int) int { return min(32, max(8, max(w, h)/200)) }

// minChromaLevel is the brightness (max channel) below which an unclipped
// pixel gives no colour: the ratios of dark pixels are mostly noise.
const minChromaLevel = 0.05

// Reconstruct is the `reconstruct` highlight mode, in place on pix (W×H×3
// white-balanced camera RGB, clip level 1), after the idea of darktable's
// "inpaint opposed": a clipped pixel takes the colour of the unclipped
// pixels near it.
//
// A pixel is clipped when any channel is at or above threshold. For a
// pixel with peak V = max channel (at most 1), ρ is the mean, over the
// unclipped pixels brighter than minChromaLevel within ReconstructRadius
// r (a (2r+1)×(2r+1) box), of their chromaticity v / max(v), scaled again
// to a maximum of 1. Its weight a = min(1, 2·u), u the fraction of the box
// that is unclipped: 1 at the edge of a clipped area (half the box
// outside it), falling linearly to 0 at r pixels inside. own is the pixel
// with its clipped channels raised to V: neutral where every channel
// clipped, the ratio of its unclipped channels where only some did. The
// reconstruction is
//
//	rec = (1 − a)·own + a·V·ρ,
//
// taken with weight n/(2r+1) (n the count of pixels in ρ's mean, at most
// 1) against own, so a box with few bright unclipped pixels gives little
// colour. Its hue is the pixel's own unclipped one, neutral, or the
// neighbours', never another (no magenta or cyan from unequal clipping).
// It fades in over blendBand below the threshold: a pixel with peak P
// becomes (1 − t)·pixel + t·rec, t the smoothstep of (P − (threshold −
// blendBand)) / blendBand, so the result is continuous in the pixel's
// values and noise around the threshold leaves no isolated pixels; a
// pixel with peak at or below threshold − blendBand is not changed.
// Then the highlight shoulder: the pixel's scene peak m is estimated,
// above 1 where channels clipped, from the unclipped channels of its 3×3
// neighbourhood scaled by the reconstruction's chromaticity
// (sceneLevel), and the colour moves towards white as m rises past
// shoulderKnee (shoulder), as a camera's JPEG renders bright saturated
// light: the brightness a clipped channel lost comes back as lightness
// through the tone curve instead of a saturated flat patch.
// Values stay in [0, 1]. It returns pix.
func Reconstruct(pix []float32, w, h int, threshold float32) []float32 {
	n := w * h
	if n <= 0 || len(pix) < 3*n {
		return pix
	}
	r := NewReconstructor(w, h, threshold)
	r.Rows(h, func(y int) []float32 { return pix[3*y*w : 3*(y+1)*w : 3*(y+1)*w] })
	return pix
}

// Reconstructor is Reconstruct on an image given row by row, top to
// bottom, for a conversion that streams its image in row bands: Rows
// finishes the next rows in place, reading rows up to Lookahead below
// the last one, so only those rows need be held. The result is the same
// for any split of the image into calls of Rows. Memory: the clipped
// flag of each row (h bytes) and, once a clipped pixel is near, the box
// sums of 2·radius+1 rows (40 bytes a pixel of a row each) and two rows
// more, and two image rows as the demosaic made them (12 bytes a pixel of
// a row each) for the shoulder's 3×3 neighbourhood.
type Reconstructor struct {
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

// NewReconstructor returns the row-by-row Reconstruct of a w×h image
// (w, h > 0) with the given threshold.
func NewReconstructor(w, h int, threshold float32) *Reconstructor {
	return &Reconstructor{w: w, h: h, r: ReconstructRadius(w, h), thr: threshold, clippedRow: make([]bool, h)}
}

// Lookahead is how many rows below the last row a call of Rows finishes
// it reads: twice ReconstructRadius (the box's rows, and whether the rows
// of their boxes are clipped).
func (rc *Reconstructor) Lookahead() int { return 2 * rc.r }

// Next is the first row not finished yet.
func (rc *Reconstructor) Next() int { return rc.next }

// Rows finishes rows Next() to y1−1 in place. row(y) returns row y of the
// image (3·w float32, white-balanced camera RGB, clip level 1) for every
// y from Next() to min(h, y1+Lookahead())−1, as the demosaic made it (rows
// at or after Next() are not yet changed); rows above Next() are not read
// again.
func (rc *Reconstructor) Rows(y1 int, row func(y int) []float32) {
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
func (rc *Reconstructor) flag(y1 int, row func(y int) []float32) {
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
func (rc *Reconstructor) nearClipped(y int) bool {
	for k := max(0, y-rc.r); k <= min(rc.h-1, y+rc.r); k++ {
		if rc.clippedRow[k] {
			return true
		}
	}
	return false
}

// slide moves the box window to rows y−r .. y+r (those that exist).
func (rc *Reconstructor) slide(y int, row func(y int) []float32) {
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
func (rc *Reconstructor) rowSums(p []float32, dst [][5]float64) {
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

func (rc *Reconstructor) addRow(row [][5]float64, sign float64) {
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
func (rc *Reconstructor) finish(y int, pix []float32, nb [3][]float32) {
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

// isolatedWeight is the weight of the reconstruction of pixel x of a row
// whose 3×3 neighbourhood is nb (as sceneLevel's, edges replicated), from
// the count k of its eight neighbours with a channel above lo: (k − 1)/3
// within [0, 1]. A single clipped photosite among unclipped ones spreads
// by the demosaic into a pixel or two; the edge of a clipped area has
// three or more such neighbours.
func isolatedWeight(nb [3][]float32, x int, lo float32) float64 {
	k := 0
	for dy := range 3 {
		row := nb[dy]
		n := len(row) / 3
		for dx := -1; dx <= 1; dx++ {
			if dy == 1 && dx == 0 {
				continue
			}
			xx := min(max(x+dx, 0), n-1)
			if max(row[3*xx], row[3*xx+1], row[3*xx+2]) > lo {
				k++
			}
		}
	}
	return math.Min(1, math.Max(0, float64(k-1)/3))
}

// sceneLevel estimates the scene's peak at pixel x of a row whose
// reconstruction is q (at most 1), from the 3×3 neighbourhood of the
// pixel as the demosaic made it (nb: the rows above, of and below the
// pixel, 3 channels a pixel, clip level 1, clipping from thr on;
// mirrored at the image's edges): the neighbours' channels p scaled by
// q's chromaticity r = q / max(q), k = Σ u·p_c·r_c / Σ u·r_c² over the
// nine pixels and three channels, the least-squares scale of r to them
// weighted by how unclipped each value is: u = 1 − the smoothstep of
// (p_c − (thr − blendBand)) / blendBand, 1 below the blend band, 0 at
// thr. So the estimate moves continuously as a channel nears the clip,
// noise around the threshold makes no step, and one noisy pixel does not
// make it alone. Where the clipped channels' true values lie on r's
// ratios it is their scene value, above 1. The estimate counts in
// proportion to Σ u·r_c² up to 9·minSceneWeight, so that small unclipped
// channels (their noise divided by a small ratio) do not make it up
// alone; without any weight it is max(q). It is at least max(q) and at
// most maxSceneLevel.
func sceneLevel(nb [3][]float32, x int, q [3]float64, thr float32) float64 {
	m := max(q[0], q[1], q[2])
	if m <= 0 {
		return 0
	}
	var r [3]float64
	for c := range 3 {
		r[c] = q[c] / m
	}
	lo := float64(thr - blendBand)
	w := len(nb[1]) / 3
	var num, den float64
	for _, row := range nb {
		for _, xx := range [3]int{max(x-1, 0), x, min(x+1, w-1)} {
			p := row[3*xx : 3*xx+3 : 3*xx+3]
			for c := range 3 {
				t := math.Min(1, math.Max(0, (float64(p[c])-lo)/float64(blendBand)))
				u := 1 - t*t*(3-2*t)
				num += u * float64(max(p[c], 0)) * r[c]
				den += u * r[c] * r[c]
			}
		}
	}
	if den <= 0 {
		return m
	}
	k := num / den
	wt := math.Min(1, den/(9*minSceneWeight))
	return math.Min(maxSceneLevel, math.Max(m, wt*k+(1-wt)*m))
}

// minSceneWeight is the Σ r_u² of the unclipped channels from which
// sceneLevel's estimate counts fully: a channel at 0.2 of the peak
// (0.04), less than the green of a saturated blue.
const minSceneWeight = 0.04

// maxSceneLevel bounds sceneLevel: 3 EV above the clip level.
const maxSceneLevel = 8

// shoulderKnee is the level (fraction of the clip level) from which the
// shoulder desaturates: just above where Reconstruct's fade-in starts
// (threshold − blendBand), so that the rim of a clipped area, whose
// unclipped pixels the camera's JPEG already renders lighter, rolls off
// with it. With the knee at the threshold (0.97) the 6D reflection's mean
// ΔE2000 to the camera's JPEG is 6.7 instead of 5.0; at 0.87 the D30's
// neutral look table score is 0.01 worse.
const shoulderKnee = 0.88

// shoulder is the highlight roll-off of a pixel q (at most 1) whose
// scene peak is m (sceneLevel, possibly above 1): above shoulderKnee the
// pixel's colour moves towards neutral as m rises, the way a camera
// JPEG's per-channel curve renders brightening saturated light, instead
// of staying saturated at the clip: with r = q / max(q) and g =
// exp(−(m − shoulderKnee) / shoulderScale), the result is max(q)·(1 − (1
// − r)·g). g is 1 at the knee, so the result is continuous there, and
// falls towards 0 (white) as m grows, so a clipped area brightens
// smoothly from its rim inwards in the hue of its unclipped channels and
// its surroundings. The peak stays max(q) and the result in [0, 1].
func shoulder(q [3]float64, m float64) [3]float64 {
	mq := max(q[0], q[1], q[2])
	if m <= shoulderKnee || mq <= 0 {
		return q
	}
	g := math.Exp(-(m - shoulderKnee) / shoulderScale)
	var out [3]float64
	for c := range 3 {
		out[c] = mq * (1 - (1-q[c]/mq)*g)
	}
	return out
}

// shoulderScale is the rise of the scene peak (in clip levels) over which
// the shoulder's remaining saturation falls by the factor e. Fitted to
// the Canon 6D's own JPEG of its blue reflection (docs/highlights.md):
// its lightness against the scene peak estimated from the unclipped
// green rises from L 46 just below the clip to 60 at 1.4, 71 at 1.6 and
// 86 at 2.1; 2.5 gives a mean ΔE2000 of 5.0 there and leaves no more
// isolated pixels than clip (with the knee at 0.87, 2 gave 4.3 but 95
// isolated pixels against clip's 91; at 0.9, 3 gave 5.8 and 96).
const shoulderScale = 2.5

// reconstructPixel is the reconstructed value of pixel p (3 channels,
// clip level 1) whose neighbourhood has the chromaticity rho (maximum 1,
// or all 0 when it has no unclipped bright pixel) with weight a (see
// Reconstruct): (1 − a)·own + a·V·rho, V the pixel's peak (at most 1) and
// own the pixel clamped to [0, 1] with its clipped channels (at or above
// thr) raised to V. own keeps the ratio of the unclipped channels and is
// neutral where every channel clipped; rho is the neighbours' colour, so
// the result has no hue that neither the pixel nor its neighbours have.
func reconstructPixel(p []float32, rho [3]float64, a float64, thr float32) [3]float64 {
	var q [3]float64
	for c := range 3 {
		q[c] = float64(min(max(p[c], 0), 1))
	}
	v := max(q[0], q[1], q[2])
	for c := range 3 {
		if p[c] >= thr {
			q[c] = v
		}
		q[c] = (1-a)*q[c] + a*v*rho[c]
	}
	return q
}

// minChromaCount is how many unclipped bright pixels a box of radius r
// needs for its colour to count fully: one box side.
func minChromaCount(r int) float64 { return float64(2*r + 1) }

// blendBand is the width (fraction of the clip level) below the threshold
// over which Reconstruct fades in: a pixel whose peak is threshold −
// blendBand is unchanged, one at the threshold fully reconstructed.
const blendBand float32 = 0.1
