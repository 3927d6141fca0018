package highlight

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bayer is the RGGB colour index of a photosite (0 R, 1 G, 2 B, 3 G2).
func bayer(row, col int) int { return [4]int{0, 1, 3, 2}[(row&1)*2+(col&1)] }

// cfaScene returns w×h raw data: the left half a noisy gradient from black
// to leftMax, the right half clipped at clip (or the gradient continued
// when clip is 0), plus hot photosites at hotValue.
func cfaScene(w, h int, black, leftMax, clip float64, hot int, hotValue uint16) []uint16 {
	rng := rand.New(rand.NewPCG(1, 2))
	raw := make([]uint16, w*h)
	for y := range h {
		for x := range w {
			v := black + (leftMax-black)*float64(x)/float64(w/2) + rng.NormFloat64()*8
			if x >= w/2 && clip > 0 {
				v = clip
			}
			raw[y*w+x] = uint16(min(max(v, 0), 65535))
		}
	}
	for i := range hot {
		raw[rng.IntN(h)*w+rng.IntN(w/2)] = hotValue
		_ = i
	}
	return raw
}

func histogram(raw []uint16, w, h int) (hist [4][]uint32) {
	for k := range hist {
		hist[k] = make([]uint32, 65536)
	}
	for y := range h {
		for x := range w {
			hist[bayer(y, x)][raw[y*w+x]]++
		}
	}
	return hist
}

var black4 = func(b float64) [4]float64 { return [4]float64{b, b, b, b} }

func TestWhiteLevelsClippedHalfWithHotPixels(t *testing.T) {
	const w, h = 256, 128
	raw := cfaScene(w, h, 512, 12000, 13500, 20, 16383)
	levels, found := WhiteLevels(histogram(raw, w, h), 16383, black4(512))
	for k := range 4 {
		if !found[k] || levels[k] != 13500 {
			t.Errorf("colour %d: level %d found %v, want 13500 found", k, levels[k], found[k])
		}
	}
}

func TestWhiteLevelsUnclippedKeepsTagged(t *testing.T) {
	const w, h = 256, 128
	// A gradient reaching 95 % of the range everywhere, with hot pixels:
	// nothing piles up.
	raw := cfaScene(w, h, 512, 512+0.95*(16383-512), 0, 20, 16383)
	levels, found := WhiteLevels(histogram(raw, w, h), 16383, black4(512))
	for k := range 4 {
		if found[k] || levels[k] != 16383 {
			t.Errorf("colour %d: level %d found %v, want the tagged 16383, not found", k, levels[k], found[k])
		}
	}
}

func TestWhiteLevelsCanonD30Case(t *testing.T) {
	// D30: tagged 4095, black 128, the data saturates in a pile at 3800
	// and a single photosite reads 3868 (LibRaw's adjust_maximum takes it).
	const w, h = 256, 128
	raw := cfaScene(w, h, 128, 3500, 3800, 0, 0)
	raw[5*w+3] = 3868
	levels, found := WhiteLevels(histogram(raw, w, h), 4095, black4(128))
	for k := range 4 {
		if !found[k] || levels[k] != 3800 {
			t.Errorf("colour %d: level %d found %v, want 3800", k, levels[k], found[k])
		}
	}
}

func TestWhiteLevelsIgnoresPileBelowSearchRange(t *testing.T) {
	// A flat area at 50 % of the range is not a clipping pile.
	const w, h = 256, 128
	raw := cfaScene(w, h, 0, 6000, 8000, 0, 0)
	_, found := WhiteLevels(histogram(raw, w, h), 16383, black4(0))
	if found != [4]bool{} {
		t.Errorf("found a pile at 49 %% of the range: %v", found)
	}
}

func TestEqualiseClipsEveryChannelAtOneLevel(t *testing.T) {
	// Green and blue clip at 13500, red at 12000 (per-channel saturation),
	// G2 found nothing; black 512 with a per-channel offset on blue.
	black := [4]float64{512, 512, 520, 512}
	levels := [4]int{12000, 13500, 13500, 16383}
	found := [4]bool{true, true, true, false}
	r := Equalise(levels, found, [4]bool{true, true, true, true}, black)
	if r.White != 13500 {
		t.Fatalf("White %d, want 13500", r.White)
	}
	b0 := 512.0
	for k, lv := range []int{12000, 13500, 13500, 12000} { // G2 takes the lowest found
		got := (float64(lv) - black[k]) * r.Gain[k] / (float64(r.White) - b0)
		if got < 0.9999 || got > 1.0001 {
			t.Errorf("colour %d: its clip point maps to %.5f of the white level, want 1", k, got)
		}
		if clipTo := (float64(r.Clip[k]) - black[k]) / (float64(r.White) - b0); clipTo < 0.9999 || clipTo > 1.0001 {
			t.Errorf("colour %d: clamp at %.5f of the white level, want 1", k, clipTo)
		}
	}
	// Apply in Go: a hot photosite is clamped to the clip level.
	raw := []uint16{16383, 13500, 13500, 12000}
	col := func(row, c int) int { return [4]int{1, 2, 3, 0}[c] }
	r.Apply(raw, 4, 1, col)
	for i, want := range []uint16{uint16(r.Clip[1]), uint16(r.Clip[2]), uint16(r.Clip[3]), uint16(r.Clip[0])} {
		if d := int(raw[i]) - int(want); d < -1 || d > 1 {
			t.Errorf("photosite %d: %d after Apply, want %d", i, raw[i], want)
		}
	}
}

// whiteLevelRef is whiteLevel with prefix sums over the whole histogram
// (the table it searches, kept as the reference of the trimmed sums).
func whiteLevelRef(hist []uint32, tagged int, black float64) (int, bool) {
	n := len(hist)
	rng := float64(tagged) - black
	if n == 0 || !(rng > 0) {
		return tagged, false
	}
	cum := make([]uint64, n+1)
	for v, c := range hist {
		cum[v+1] = cum[v] + uint64(c)
	}
	total := cum[n]
	if total == 0 {
		return tagged, false
	}
	sum := func(a, b int) uint64 {
		a, b = max(a, 0), min(b, n-1)
		if a > b {
			return 0
		}
		return cum[b+1] - cum[a]
	}
	w := max(2, int(rng/256))
	lo := int(math.Ceil(black + SearchFrom*rng))
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
		return tagged, false
	}
	a := max(best-w, 0)
	target := cum[a] + uint64(math.Ceil(PileEdgeQuantile*float64(bestCount)))
	for v := a; v <= min(best+w, n-1); v++ {
		if cum[v+1] >= target {
			return v, true
		}
	}
	return best, true
}

// TestWhiteLevelsMatchWholeTableSums: the prefix sums trimmed to the
// values a sum can reach find the same levels as sums over the whole
// table, on histograms of a random background with piles of random
// widths, heights and places (near the search's start, the table's top,
// each other), blacks near 0 and few photosites.
func TestWhiteLevelsMatchWholeTableSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	found, missed := 0, 0
	hist := make([]uint32, 65536)
	for range 800 {
		clear(hist)
		black := float64(rng.IntN(3) * rng.IntN(2048))
		tagged := int(black) + 256 + rng.IntN(65535-int(black)-256)
		rngDN := float64(tagged) - black
		w := max(2, int(rngDN/256))
		lo := int(math.Ceil(black + SearchFrom*rngDN))
		// A background from black to a random top, of a random density.
		top := int(black) + rng.IntN(min(65535, tagged+8*w)-int(black)+1)
		density := rng.IntN(4)
		for v := int(black); v <= top; v++ {
			if density > 0 && rng.IntN(density+1) != 0 {
				hist[v] += uint32(rng.IntN(4 * density))
			}
		}
		// Piles about the search's start and above, of random widths and
		// heights about the contrast and count thresholds.
		for range rng.IntN(4) {
			c := lo - 6*w + rng.IntN(min(65535, tagged+6*w)-lo+6*w+1)
			half := rng.IntN(2*w + 1)
			height := 1 + rng.IntN(64)
			for v := max(c-half, 0); v <= min(c+half, 65535); v++ {
				hist[v] += uint32(height + rng.IntN(height))
			}
		}
		switch rng.IntN(3) {
		case 0:
			// A pile just above the search's start on a background whose
			// density is about the contrast threshold's.
			c := lo + rng.IntN(w+1)
			b := 1 + rng.IntN(8)
			for v := max(c-6*w, 0); v < c-w; v++ {
				hist[v] += uint32(b)
			}
			height := int(float64(b) * PileContrast * (0.6 + 0.8*rng.Float64()))
			for v := max(c-w, 0); v <= min(c+w, 65535); v++ {
				hist[v] += uint32(height)
			}
		case 1:
			// Hot photosites at one value above everything else, about as
			// many as a pile holds.
			hot := min(65535, top+1+rng.IntN(8*w+1))
			hist[hot] += uint32(rng.IntN(2 * (2*w + 1) * 64))
		}
		var blacks [4]float64
		for k := range blacks {
			blacks[k] = black + float64(rng.IntN(3))
		}
		levels, f := WhiteLevels([4][]uint32{hist}, tagged, blacks)
		lv, fr := whiteLevelRef(hist, tagged, blacks[0])
		if levels[0] != lv || f[0] != fr {
			t.Fatalf("black %v tagged %d: level %d found %v, whole-table sums %d %v", blacks[0], tagged, levels[0], f[0], lv, fr)
		}
		if fr {
			found++
		} else {
			missed++
		}
	}
	if found < 100 || missed < 100 {
		t.Errorf("%d histograms with a pile found, %d without: the cases miss one side of the search", found, missed)
	}
}
