// Package highlight holds the raw-level algorithms that make
// highlights come out right: the white level of each CFA channel found in
// the data (WhiteLevels, Equalise), the reconstruction of clipped areas
// after demosaic (Clip, Reconstruct), and the white balance used when a
// file's as-shot multipliers are missing or unusable (ChooseWB).
//
// It is pure Go and works on plain slices: the caller reads the histogram
// and levels from LibRaw (pipeline/internal/libraw's RawHistogram, Levels)
// and applies the result there (RescaleRaw). docs/highlights.md says how a
// stage calls it.
package highlight

import "math"

// Pile-detection thresholds (docs/highlights.md).
const (
	// SearchFrom is the fraction of the tagged range (white − black) above
	// which a clipping pile is looked for.
	SearchFrom = 0.75
	// PileContrast is how many times denser (photosites per raw value) the
	// pile's band must be than its neighbourhood on both sides.
	PileContrast = 8.0
	// PileMinFraction and PileMinCount: a pile holds at least this fraction
	// of the channel's photosites and at least this many, so that a few hot
	// photosites at one value are not a pile.
	PileMinFraction = 0.0005
	PileMinCount    = 32
	// PileEdgeQuantile is the quantile of the pile's photosites taken as the
	// white level: the pile's lower edge, so that nearly all of it clips.
	PileEdgeQuantile = 0.02
)

// WhiteLevels finds, for each CFA colour index k (0..3, as LibRaw's
// COLOR), the raw value (DN, including black) at which the channel clips,
// from hist[k][v], the number of photosites of colour k with raw value v
// (any length up to 65536; nil or all-zero for a colour the sensor does not
// have). tagged is the white level the file declares (DN, including black)
// and black[k] the channel's black level (DN).
//
// A clipping pile is a narrow band of values above black + SearchFrom ·
// (tagged − black) holding at least PileMinCount photosites and
// PileMinFraction of the channel, PileContrast times denser than the
// values around it, with fewer photosites above it than in it. The densest
// such band wins, and its PileEdgeQuantile quantile is the level: hot
// photosites (a few at one value) and a single brightest value cannot move
// it. Where no pile exists, levels[k] = tagged and found[k] = false.
func WhiteLevels(hist [4][]uint32, tagged int, black [4]float64) (levels [4]int, found [4]bool) {
	var cum []uint64 // prefix sums, reused from channel to channel
	for k := range 4 {
		levels[k], found[k], cum = whiteLevel(hist[k], tagged, black[k], cum)
	}
	return levels, found
}

// whiteLevel is WhiteLevels for one channel's histogram; cum is scratch
// for its prefix sums (returned, grown as needed, for the next channel).
// The prefix sums span only the values a sum can reach, from the
// neighbourhood below the search's start to the highest value present
// (the values above it count nothing), so that a file whose values take a
// few thousand of the 65536 costs that much, not the whole table.
func whiteLevel(hist []uint32, tagged int, black float64, cum []uint64) (int, bool, []uint64) {
	n := len(hist)
	rng := float64(tagged) - black
	if n == 0 || !(rng > 0) {
		return tagged, false, cum
	}
	var total uint64
	for _, c := range hist {
		total += uint64(c)
	}
	if total == 0 {
		return tagged, false, cum
	}
	for hist[n-1] == 0 {
		n-- // no photosite above: every sum stops at the highest value present
	}
	// The band is ±w values: 1/256 of the range (±16 DN at 12 bits, ±64 at
	// 14), wide enough for a pile spread by read noise, narrow against the
	// range. The neighbourhood is 4w on each side of the band.
	w := max(2, int(rng/256))
	lo := int(math.Ceil(black + SearchFrom*rng))
	if lo >= n {
		return tagged, false, cum
	}
	// Prefix sums from s on: cum[i] = photosites with a value in s..s+i−1.
	// No sum starts below the lowest band's neighbourhood, v − 5w for
	// v ≥ lo (nor below 0).
	s := max(lo-5*w, 0)
	if cap(cum) < n-s+1 {
		cum = make([]uint64, n-s+1)
	}
	cum = cum[:n-s+1]
	cum[0] = 0
	for v, c := range hist[s:n] {
		cum[v+1] = cum[v] + uint64(c)
	}
	sum := func(a, b int) uint64 { // values a..b inclusive, clamped
		a, b = max(a, s), min(b, n-1)
		if a > b {
			return 0
		}
		return cum[b+1-s] - cum[a-s]
	}
	minCount := max(uint64(PileMinCount), uint64(math.Ceil(PileMinFraction*float64(total))))
	best, bestCount := -1, uint64(0)
	for v := max(lo, 0); v < n; v++ {
		if hist[v] == 0 {
			continue
		}
		band := sum(v-w, v+w)
		if band < minCount || band <= bestCount {
			continue
		}
		below := sum(v-5*w, v-w-1)
		above := sum(v+w+1, v+5*w)
		bandDensity := float64(band) / float64(2*w+1)
		if bandDensity < PileContrast*float64(below)/float64(4*w) ||
			bandDensity < PileContrast*float64(above)/float64(4*w) {
			continue
		}
		if sum(v+w+1, n-1) >= band {
			continue
		}
		best, bestCount = v, band
	}
	if best < 0 {
		return tagged, false, cum
	}
	// The level: the PileEdgeQuantile quantile of the band's photosites.
	a := max(best-w, s)
	target := cum[a-s] + uint64(math.Ceil(PileEdgeQuantile*float64(bestCount)))
	for v := a; v <= min(best+w, n-1); v++ {
		if cum[v+1-s] >= target {
			return v, true, cum
		}
	}
	return best, true, cum
}

// Rescale is how to change the raw data so that every CFA channel clips at
// one level (the arguments of libraw's RescaleRaw): a photosite of colour k
// with value v > Black[k] becomes Black[k] + (v − Black[k])·Gain[k],
// clamped to Clip[k]; White becomes the white level of the decode. All in
// DN, including black.
type Rescale struct {
	Black [4]float64
	Gain  [4]float64
	Clip  [4]int
	White int
}

// Equalise turns per-channel white levels (from WhiteLevels, DN including
// black) into the Rescale that makes all channels clip at one level, so
// that clipped areas come out neutral after white balance: LibRaw scales
// channel k by m_k · 65535 / (White − B0), B0 = min_k black[k] (its common
// black), with white-balance multipliers m_k ≥ 1, so a channel whose clip
// point maps to White − B0 above its black ends at 65535 whatever m_k is.
//
// White = the highest level among the channels present; Gain[k] =
// (White − B0) / (levels[k] − black[k]) and Clip[k] = black[k] + White − B0
// (at most 65535). present[k] false (a colour the sensor lacks) gives gain
// 1 and no clamp. A channel whose pile was not found (found[k] false)
// takes the lowest level found in another channel when that is lower than
// its own: sensor saturation is one photosite limit, and a channel that
// never reached it in this picture clips there too.
func Equalise(levels [4]int, found, present [4]bool, black [4]float64) Rescale {
	lowestFound := math.MaxInt
	for k := range 4 {
		if present[k] && found[k] {
			lowestFound = min(lowestFound, levels[k])
		}
	}
	var r Rescale
	b0 := math.Inf(1)
	white := 0
	for k := range 4 {
		if !present[k] {
			continue
		}
		if !found[k] && lowestFound < levels[k] {
			levels[k] = lowestFound
		}
		b0 = math.Min(b0, black[k])
		white = max(white, levels[k])
	}
	r.Black = black
	r.White = white
	for k := range 4 {
		r.Gain[k], r.Clip[k] = 1, 65535
		if !present[k] || white == 0 {
			continue
		}
		span := float64(levels[k]) - black[k]
		if !(span > 0) {
			continue
		}
		r.Gain[k] = (float64(white) - b0) / span
		r.Clip[k] = min(65535, int(math.Round(black[k]+float64(white)-b0)))
	}
	return r
}

// Apply applies r to raw CFA data in Go, as libraw's RescaleRaw does in C:
// raw is w×h row-major DN, colour(row, col) the CFA colour index 0..3 of a
// photosite. For tests and for data already copied out of LibRaw.
func (r Rescale) Apply(raw []uint16, w, h int, colour func(row, col int) int) {
	for y := range h {
		for x := range w {
			k := colour(y, x) & 3
			v := float64(raw[y*w+x])
			if v > r.Black[k] {
				v = r.Black[k] + (v-r.Black[k])*r.Gain[k]
			}
			v = math.Min(v, float64(r.Clip[k]))
			raw[y*w+x] = uint16(v + 0.5)
		}
	}
}

// RescaleFromHistogram is WhiteLevels then Equalise on one raw
// histogram (hist[k][v] as WhiteLevels takes it): the rescale that makes
// every CFA colour present in hist (one with any photosite) clip at one
// level, with the levels found. tagged and black as for WhiteLevels.
func RescaleFromHistogram(hist [4][]uint32, tagged int, black [4]float64) Rescale {
	levels, found := WhiteLevels(hist, tagged, black)
	var present [4]bool
	for k := range 4 {
		for _, n := range hist[k] {
			if n != 0 {
				present[k] = true
				break
			}
		}
	}
	return Equalise(levels, found, present, black)
}
