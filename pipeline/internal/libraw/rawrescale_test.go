package libraw

import (
	"math"
	"slices"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// rescaleFormula is RescaleRaw's mapping of one value of colour k, as its
// documentation states it, evaluated per photosite.
func rescaleFormula(v uint16, black, gain float64, clip int) uint16 {
	x := float64(v)
	if x > black {
		x = black + (x-black)*gain
	}
	x = math.Min(x, float64(clip))
	return uint16(x + 0.5)
}

// TestRescaleRawTable: RescaleRaw, which tabulates its mapping and looks
// each photosite up, gives exactly the per-photosite formula on values
// spread over the whole 16-bit range, with fractional blacks and gains
// (rounding ties included), clamps below 65535, and a width that is not a
// multiple of the colour pattern's 48-column period.
func TestRescaleRawTable(t *testing.T) {
	const w, h = 1000, 64
	hd := openSynth(t, synthdng.Spec{
		Width: w, Height: h, BlackLevel: 0, WhiteLevel: 65535,
		Scene: func(x, y, c int) float64 { return float64((x*977+y*65519)%65536) / 65535 },
	})
	if err := hd.Unpack(); err != nil {
		t.Fatal(err)
	}
	before, _, _, err := hd.CopyRaw(nil)
	if err != nil {
		t.Fatal(err)
	}
	pat, err := hd.CFAPattern(2, 2)
	if err != nil {
		t.Fatal(err)
	}
	black := [4]float64{512.5, 500, 517.25, 499.75}
	gain := [4]float64{1.2345, 1, 1.5, 1.0000001}
	clip := [4]int{60001, 65535, 40000, 65535}
	if err := hd.RescaleRaw(black, gain, clip, 60000); err != nil {
		t.Fatal(err)
	}
	after, _, _, _ := hd.CopyRaw(nil)
	for y := range h {
		for x := range w {
			k := pat[(y%2)*2+x%2] & 3
			want := rescaleFormula(before[y*w+x], black[k], gain[k], clip[k])
			if got := after[y*w+x]; got != want {
				t.Fatalf("(%d,%d) colour %d: %d became %d, want %d", x, y, k, before[y*w+x], got, want)
			}
		}
	}
}

// TestRawHistogramOn: the histogram counted over bands of rows on several
// goroutines is the one counted in one pass, for band counts that do and
// do not divide the rows.
func TestRawHistogramOn(t *testing.T) {
	const w, h = 250, 390
	hd := openSynth(t, synthdng.Spec{
		Width: w, Height: h, BlackLevel: 0, WhiteLevel: 65535,
		Scene: func(x, y, c int) float64 { return float64((x*977+y*65519)%4096) / 4096 },
	})
	if err := hd.Unpack(); err != nil {
		t.Fatal(err)
	}
	want, err := hd.RawHistogram()
	if err != nil {
		t.Fatal(err)
	}
	var total int
	for k := range 4 {
		for _, n := range want[k] {
			total += int(n)
		}
	}
	if total != w*h {
		t.Fatalf("one pass counts %d photosites, want %d", total, w*h)
	}
	for _, th := range []int{2, 3, 5, 0} {
		got, err := hd.RawHistogramOn(th)
		if err != nil {
			t.Fatal(err)
		}
		for k := range 4 {
			if !slices.Equal(got[k], want[k]) {
				t.Fatalf("%d threads: colour %d differs from one pass", th, k)
			}
		}
	}
}
