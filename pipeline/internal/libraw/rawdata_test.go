package libraw

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// rawValue is the stored value of the synthetic DNG of TestRawData at
// photosite (x, y).
func rawValue(x, y int) int { return 1000 + 7*x + 131*y }

func TestRawData(t *testing.T) {
	const w, h = 64, 32 // LibRaw refuses images under 22 pixels a side
	hd := openSynth(t, synthdng.Spec{
		Width: w, Height: h, BlackLevel: 0, WhiteLevel: 65535,
		Scene: func(x, y, c int) float64 { return float64(rawValue(x, y)) / 65535 },
	})
	if _, _, _, err := hd.CopyRaw(nil); !errors.Is(err, ErrNoCFA) {
		t.Errorf("CopyRaw before Unpack: %v, want ErrNoCFA", err)
	}
	if err := hd.Unpack(); err != nil {
		t.Fatal(err)
	}
	raw, rw, rh, err := hd.CopyRaw(nil)
	if err != nil || rw != w || rh != h {
		t.Fatalf("CopyRaw: %dx%d, %v", rw, rh, err)
	}
	for y := range h {
		for x := range w {
			if got := int(raw[y*w+x]); got != rawValue(x, y) {
				t.Fatalf("raw (%d,%d) = %d, want %d", x, y, got, rawValue(x, y))
			}
		}
	}
	pat, err := hd.CFAPattern(2, 2)
	if err != nil {
		t.Fatal(err)
	}
	// RGGB: LibRaw numbers the second green 1 or 3.
	if pat[0] != 0 || pat[3] != 2 || (pat[1] != 1 && pat[1] != 3) || (pat[2] != 1 && pat[2] != 3) {
		t.Errorf("CFA pattern %v, want R G / G B", pat)
	}
	hist, err := hd.RawHistogram()
	if err != nil {
		t.Fatal(err)
	}
	for y := range h {
		for x := range w {
			k := pat[(y%2)*2+x%2]
			if hist[k][rawValue(x, y)] == 0 {
				t.Fatalf("histogram of colour %d has no count at %d", k, rawValue(x, y))
			}
		}
	}
	var total uint32
	for k := range 4 {
		for _, n := range hist[k] {
			total += n
		}
	}
	if total != w*h {
		t.Errorf("histogram holds %d photosites, want %d", total, w*h)
	}
	lv, err := hd.Levels()
	if err != nil {
		t.Fatal(err)
	}
	if want := rawValue(w-1, h-1); lv.DataMaximum != want || lv.White != 65535 || lv.Black != [4]float64{} {
		t.Errorf("levels %+v, want data maximum %d, white 65535, black 0", lv, want)
	}
	// Red doubled above black and clamped at 4000; the white level 4000.
	gain := [4]float64{2, 1, 1, 1}
	if err := hd.RescaleRaw(0, [4]float64{}, gain, [4]int{4000, 65535, 65535, 65535}, 4000); err != nil {
		t.Fatal(err)
	}
	raw2, _, _, _ := hd.CopyRaw(nil)
	for y := range h {
		for x := range w {
			want := rawValue(x, y)
			if pat[(y%2)*2+x%2] == 0 {
				want = min(2*want, 4000)
			}
			if got := int(raw2[y*w+x]); got != want {
				t.Fatalf("after RescaleRaw raw (%d,%d) = %d, want %d", x, y, got, want)
			}
		}
	}
	if lv, _ := hd.Levels(); lv.White != 4000 {
		t.Errorf("white level %d after RescaleRaw, want 4000", lv.White)
	}
	if err := hd.RescaleRaw(0, [4]float64{}, [4]float64{0, 1, 1, 1}, [4]int{1, 1, 1, 1}, 1); err == nil {
		t.Error("RescaleRaw accepted a zero gain")
	}
	// Process uses the new white level: red (doubled, clamped at the white
	// level 4000) comes out at 65535 wherever it was ≥ 2000.
	if err := hd.Process(Params{Demosaic: Linear, WB: WBUser, Multipliers: [4]float32{1, 1, 1, 1}}); err != nil {
		t.Fatal(err)
	}
	pix, _, _, _, err := hd.CopyImage(nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := pix[((h-1)*w+w-2)*3]; r < 0.999 {
		t.Errorf("red at the bottom right is %.4f, want 1 (the white level set by RescaleRaw)", r)
	}
}

func TestRawDataRefusesLinearDNG(t *testing.T) {
	hd := openFile(t, filepath.Join(testdata, "raw", "adobesdk_05_PGTM2_unsigned8.dng"))
	if err := hd.Unpack(); err != nil {
		t.Fatal(err)
	}
	if _, err := hd.RawHistogram(); !errors.Is(err, ErrNoCFA) {
		t.Errorf("RawHistogram of a linear DNG: %v, want ErrNoCFA", err)
	}
	if err := hd.RescaleRaw(0, [4]float64{}, [4]float64{1, 1, 1, 1}, [4]int{1, 1, 1, 1}, 1); !errors.Is(err, ErrNoCFA) {
		t.Errorf("RescaleRaw of a linear DNG: %v, want ErrNoCFA", err)
	}
}
