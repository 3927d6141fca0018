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
// each photosite up (an image of at least the table's entries) or maps
// each photosite directly (a smaller one), gives exactly the per-photosite
// formula on values spread over the whole 16-bit range, with fractional
// blacks and gains (rounding ties included), clamps below 65535, and a
// width that is not a multiple of the colour pattern's 48-column period;
// on one goroutine and on bands of rows on three (the 280-row image).
func TestRescaleRawTable(t *testing.T) {
	for _, c := range [][3]int{{1000, 280, 1}, {1000, 280, 3}, {1000, 64, 3}, {202, 22, 1}} {
		w, h, threads := c[0], c[1], c[2]
		if table := w*h >= rescaleTableEntries; table != (h == 280) {
			t.Fatalf("%d×%d: table %v, the case wants the other path", w, h, table)
		}
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
		if err := hd.RescaleRaw(threads, black, gain, clip, 60000); err != nil {
			t.Fatal(err)
		}
		after, _, _, _ := hd.CopyRaw(nil)
		for y := range h {
			for x := range w {
				k := pat[(y%2)*2+x%2] & 3
				want := rescaleFormula(before[y*w+x], black[k], gain[k], clip[k])
				if got := after[y*w+x]; got != want {
					t.Fatalf("%d×%d on %d threads (%d,%d) colour %d: %d became %d, want %d", w, h, threads, x, y, k, before[y*w+x], got, want)
				}
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

// TestLevelsAndHistogramInto: a histogram counted into the caller's
// zeroed buffer is that buffer, with the counts and levels counted into a
// new one; a buffer of another length is not used.
func TestLevelsAndHistogramInto(t *testing.T) {
	hd := openSynth(t, synthdng.Spec{
		Width: 96, Height: 200, BlackLevel: 0, WhiteLevel: 65535,
		Scene: func(x, y, c int) float64 { return float64((x*977+y*65519)%4096) / 4096 },
	})
	if err := hd.Unpack(); err != nil {
		t.Fatal(err)
	}
	for _, th := range []int{1, 3} {
		wantLv, want, err := hd.LevelsAndHistogram(th)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]uint32, HistogramCounters)
		lv, got, err := hd.LevelsAndHistogramInto(th, buf)
		if err != nil {
			t.Fatal(err)
		}
		if &got[0][0] != &buf[0] || &got[3][0] != &buf[3*65536] {
			t.Errorf("%d threads: the histogram is not the buffer given", th)
		}
		if lv.DataMaximum != wantLv.DataMaximum || lv.White != wantLv.White {
			t.Errorf("%d threads: levels %+v, want %+v", th, lv, wantLv)
		}
		for k := range 4 {
			if !slices.Equal(got[k], want[k]) {
				t.Fatalf("%d threads: colour %d differs from a count into a new buffer", th, k)
			}
		}
	}
	short := make([]uint32, 100)
	if _, got, _ := hd.LevelsAndHistogramInto(1, short); len(got[0]) != 65536 {
		t.Errorf("a buffer of %d counters gave a histogram of %d a colour", len(short), len(got[0]))
	}
}
