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
// for any split of the image into calls of Rows.
//
// The box sums: each pixel's features (its chromaticity when it is
// unclipped and bright, in fixed point, and the two counts) are summed
// down each column over the rows of the box (col: a row is added as it
// enters the window of 2r+1 rows and subtracted as it leaves), then
// across the box's columns for each pixel that reads them. The sums are
// integers, so they are exact whatever the order of the additions. Only
// pixels whose peak is above threshold − blendBand read them, so only
// the columns within r of such a pixel on a row within r are summed: the
// rows' blocks of blockW columns holding one are flagged (hot), and a
// row enters the column sums on the blocks within r of a flagged block of
// the rows within r of it (need).
//
// Memory: the flagged blocks of each row (h·⌈w/(64·blockW)⌉·8 bytes)
// and, once such a pixel is near, the features of 2r+1 rows (16 bytes a
// pixel of a row each), the column sums (32 bytes a pixel of a row), and
// two image rows as the demosaic made them (12 bytes a pixel of a row
// each) for the shoulder's 3×3 neighbourhood: ReconstructorBytes.
type Reconstructor struct {
	w, h, r int
	thr     float32
	// hot holds words bits a row for the flagged rows (0..flagged−1):
	// bit b is set when block b (columns b·blockW to (b+1)·blockW−1)
	// has a pixel whose peak is above thr − blendBand.
	hot     []uint64
	words   int
	flagged int
	// next is the first row not finished.
	next int
	// The window's rows removed..added−1 are summed in col. feat holds
	// the features of the rows in it (row k at k mod 2r+1) on the blocks
	// need (the same ring) marks, those on which the row is in col.
	feat           [][]feature
	need           [][]uint64
	col            []colSum
	added, removed int
	// union: scratch for need (words).
	union []uint64
	// orig holds rows y−1 and y as the demosaic made them while row y is
	// finished: sceneLevel reads the 3×3 neighbourhood.
	orig [2][]float32
}

// blockW is the width in columns of the blocks in which Reconstructor
// marks where pixels that read the box sums lie.
const blockW = 16

// fixOne is 1 in the fixed point of the features' chromaticities (at
// most 1): 2³⁰, so that a float32 chromaticity at or above 2⁻⁷ converts
// exactly and the sums of a box (at most 65² pixels) fit an int64 and
// convert exactly to float64.
const fixOne = 1 << 30

// feature is a pixel's contribution to the box sums: its chromaticity
// v / max(v) times fixOne (3), and the count of unclipped bright pixels
// plus countUnclipped times the count of unclipped pixels (each 0 or 1).
type feature [4]int32

// colSum is a sum of features: chromaticities and the two counts (a box
// holds at most 65² pixels, fewer than countUnclipped).
type colSum [4]int64

// countUnclipped is the place of the count of unclipped pixels in a
// feature's fourth value.
const countUnclipped = 1 << 16

// ReconstructorBytes is what a Reconstructor of a w×h image holds at
// most, in bytes (see Reconstructor).
func ReconstructorBytes(w, h int) int64 {
	r, w64 := int64(ReconstructRadius(w, h)), int64(w)
	words := int64((w + 64*blockW - 1) / (64 * blockW))
	return 8*words*(int64(h)+2*r+2) + 16*(2*r+1)*w64 + 32*w64 + 24*w64
}

// NewReconstructor returns the row-by-row Reconstruct of a w×h image
// (w, h > 0) with the given threshold.
func NewReconstructor(w, h int, threshold float32) *Reconstructor {
	words := (w + 64*blockW - 1) / (64 * blockW)
	return &Reconstructor{w: w, h: h, r: ReconstructRadius(w, h), thr: threshold, words: words, hot: make([]uint64, h*words)}
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
		if rc.clipped(y) {
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

// hotRow is row y's flagged blocks.
func (rc *Reconstructor) hotRow(y int) []uint64 {
	return rc.hot[y*rc.words : (y+1)*rc.words : (y+1)*rc.words]
}

// clipped reports whether row y has a pixel whose peak is above
// thr − blendBand.
func (rc *Reconstructor) clipped(y int) bool {
	for _, b := range rc.hotRow(y) {
		if b != 0 {
			return true
		}
	}
	return false
}

// flag marks the hot blocks of the rows up to y1−1.
func (rc *Reconstructor) flag(y1 int, row func(y int) []float32) {
	lo := rc.thr - blendBand
	nb := (rc.w + blockW - 1) / blockW
	for ; rc.flagged < y1; rc.flagged++ {
		p := row(rc.flagged)[:3*rc.w]
		bits := rc.hotRow(rc.flagged)
		// vecFlag does the blocks from b up to one it leaves to
		// hotBlock (see vecFlag), or all of them.
		for b := 0; b < nb; b++ {
			if b = vecFlag(p, bits, b, lo); b < nb && hotBlock(p[3*b*blockW:3*min(rc.w, (b+1)*blockW)], lo) {
				bits[b/64] |= 1 << (b % 64)
			}
		}
	}
}

// hotBlock reports whether one of the pixels q (3 values each) has a
// peak above lo.
func hotBlock(q []float32, lo float32) bool {
	for i := 0; i+2 < len(q); i += 3 {
		if max(q[i], q[i+1], q[i+2]) > lo {
			return true
		}
	}
	return false
}

// slide moves the window of the column sums to rows y−r .. y+r (those
// that exist).
func (rc *Reconstructor) slide(y int, row func(y int) []float32) {
	win := 2*rc.r + 1
	if rc.need == nil {
		rc.need = make([][]uint64, win)
		for k := range rc.need {
			rc.need[k] = make([]uint64, rc.words)
		}
		rc.feat = make([][]feature, win)
		rc.union = make([]uint64, rc.words)
	}
	// Rows leave before others take their place in the ring.
	for ; rc.removed < y-rc.r; rc.removed++ {
		k := rc.removed % win
		f := rc.feat[k]
		forRuns(rc.need[k], rc.w, func(x0, x1 int) { subFeatures(rc.col[x0:x1], f[x0:x1]) })
	}
	for ; rc.added <= min(y+rc.r, rc.h-1); rc.added++ {
		in := rc.added
		k := in % win
		need := rc.need[k]
		rc.needOf(in, need)
		if rc.feat[k] == nil && anySet(need) {
			rc.feat[k] = make([]feature, rc.w)
			if rc.col == nil {
				rc.col = make([]colSum, rc.w)
			}
		}
		f, p := rc.feat[k], row(in)
		forRuns(need, rc.w, func(x0, x1 int) {
			rc.features(p[3*x0:3*x1], f[x0:x1])
			addFeatures(rc.col[x0:x1], f[x0:x1])
		})
	}
}

// needOf sets need to the blocks on which row k enters the column sums:
// those within r columns of a hot block of a row within r of k.
func (rc *Reconstructor) needOf(k int, need []uint64) {
	u := rc.union
	clear(u)
	for y := max(0, k-rc.r); y <= min(rc.h-1, k+rc.r); y++ {
		for i, b := range rc.hotRow(y) {
			u[i] |= b
		}
	}
	// Blocks within r columns of block b: b − d … b + d.
	d := (rc.r + blockW - 1) / blockW
	n := len(u)
	for i := range need {
		v := u[i]
		for s := 1; s <= d; s++ {
			v |= u[i]<<s | u[i]>>s
			if i > 0 {
				v |= u[i-1] >> (64 - s)
			}
			if i+1 < n {
				v |= u[i+1] << (64 - s)
			}
		}
		need[i] = v
	}
}

func anySet(bits []uint64) bool {
	for _, b := range bits {
		if b != 0 {
			return true
		}
	}
	return false
}

// forRuns calls fn for each run of consecutive set blocks of bits, with
// its columns x0 to x1−1 (those below w).
func forRuns(bits []uint64, w int, fn func(x0, x1 int)) {
	nb := (w + blockW - 1) / blockW
	set := func(b int) bool { return bits[b/64]&(1<<(b%64)) != 0 }
	for b := 0; b < nb; {
		if bits[b/64]>>(b%64) == 0 {
			b = (b/64 + 1) * 64
			continue
		}
		if !set(b) {
			b++
			continue
		}
		e := b + 1
		for e < nb && set(e) {
			e++
		}
		fn(b*blockW, min(w, e*blockW))
		b = e
	}
}

// features sets f to the features of the pixels p (3 values each).
func (rc *Reconstructor) features(p []float32, f []feature) {
	p = p[:3*len(f)]
	for x := vecFeatures(p, f, rc.thr); x < len(f); x++ {
		f[x] = pixelFeature(p[3*x:3*x+3:3*x+3], rc.thr)
	}
}

// pixelFeature is the feature of pixel q (3 values) with threshold thr.
func pixelFeature(q []float32, thr float32) feature {
	var v feature
	if !(q[0] >= thr || q[1] >= thr || q[2] >= thr) {
		v[3] = countUnclipped
		if m := max(q[0], q[1], q[2]); m > minChromaLevel {
			v[0] = int32(max(q[0], 0) / m * fixOne)
			v[1] = int32(max(q[1], 0) / m * fixOne)
			v[2] = int32(max(q[2], 0) / m * fixOne)
			v[3] = countUnclipped + 1
		}
	}
	return v
}

// addFeatures adds the features f to the column sums col, pixel by
// pixel (f at least as long as col).
func addFeatures(col []colSum, f []feature) {
	f = f[:len(col)]
	for x := vecAddFeatures(col, f); x < len(col); x++ {
		c, v := &col[x], &f[x]
		c[0] += int64(v[0])
		c[1] += int64(v[1])
		c[2] += int64(v[2])
		c[3] += int64(v[3])
	}
}

// subFeatures subtracts the features f from the column sums col, pixel
// by pixel (f at least as long as col).
func subFeatures(col []colSum, f []feature) {
	f = f[:len(col)]
	for x := vecSubFeatures(col, f); x < len(col); x++ {
		c, v := &col[x], &f[x]
		c[0] -= int64(v[0])
		c[1] -= int64(v[1])
		c[2] -= int64(v[2])
		c[3] -= int64(v[3])
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
	col := rc.col
	// s is the box sum of column sx (−2: none yet): the next pixel's
	// is one column in and one out.
	var s colSum
	sx := -2
	forRuns(rc.hotRow(y), w, func(xa, xb int) {
		for x := xa; x < xb; x++ {
			p := pix[3*x : 3*x+3 : 3*x+3]
			peak := max(p[0], p[1], p[2])
			if !(peak > lo) {
				continue
			}
			x0, x1 := max(0, x-r), min(w-1, x+r)
			if sx == x-1 {
				if x+r <= w-1 {
					for k, v := range col[x+r] {
						s[k] += v
					}
				}
				if x-r-1 >= 0 {
					for k, v := range col[x-r-1] {
						s[k] -= v
					}
				}
			} else {
				s = colSum{}
				for _, c := range col[x0 : x1+1] {
					for k, v := range c {
						s[k] += v
					}
				}
			}
			sx = x
			rc.finishPixel(p, x, x1-x0+1, y1-y0+1, s, nb)
		}
	})
}

// finishPixel reconstructs pixel p (of column x) from the sums s of its
// box (bw×bh pixels) and its 3×3 neighbourhood nb.
func (rc *Reconstructor) finishPixel(p []float32, x, bw, bh int, s colSum, nb [3][]float32) {
	r := rc.r
	lo := rc.thr - blendBand
	peak := max(p[0], p[1], p[2])
	bright := float64(s[3] % countUnclipped)
	unclipped := float64(s[3] / countUnclipped)
	var rho [3]float64
	a := 0.0
	if bright > 0 {
		rho = [3]float64{float64(s[0]) / fixOne / bright, float64(s[1]) / fixOne / bright, float64(s[2]) / fixOne / bright}
		if m := math.Max(rho[0], math.Max(rho[1], rho[2])); m > 0 {
			for c := range rho {
				rho[c] /= m
			}
			a = math.Min(1, 2*unclipped/float64(bw*bh))
		}
	}
	rec := reconstructPixel(p, rho, a, rc.thr)
	// The neighbours' colour counts fully from minChromaCount
	// contributing pixels on, less with fewer (a box sum: it changes by
	// at most one row or column a pixel, so the result has no edge where
	// the last unclipped pixel leaves the box).
	if nw := bright / minChromaCount(r); nw < 1 {
		own := reconstructPixel(p, [3]float64{}, 0, rc.thr)
		for c := range 3 {
			rec[c] = nw*rec[c] + (1-nw)*own[c]
		}
	}
	// t: how far the pixel is into the clipping, 0 at lo, 1 at the
	// threshold (smoothstep), so the result is continuous in the pixel's
	// values and noise around the threshold makes no step.
	t := math.Min(1, (float64(peak)-float64(lo))/float64(blendBand))
	t = t * t * (3 - 2*t)
	var q [3]float64
	for c := range 3 {
		orig := float64(min(max(p[c], 0), 1))
		q[c] = (1-t)*orig + t*rec[c]
	}
	q = shoulder(q, sceneLevel(nb, x, q, rc.thr))
	// A pixel near the clip among neighbours that are not (a hot
	// photosite, a noise spike) is no highlight: kept as clip keeps it,
	// fully from at most one such neighbour, the reconstruction fully
	// from four (isolatedWeight).
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
