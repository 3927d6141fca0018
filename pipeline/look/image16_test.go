package look

import (
	"math"
	"math/rand"
	"testing"
)

// turn16 stores the codes of the w×h float image pix upright by flip, as
// pipeline.Oriented reads an image: upright (column c, row r) is sensor
// (r, c) when flip&4 swaps, then mirrored by bits 1 and 0; in bands of
// band rows.
func turn16(pix []float32, w, h, flip int, scale float64, band int) Image16 {
	uw, uh := w, h
	if flip&4 != 0 {
		uw, uh = h, w
	}
	out := make([]uint16, 3*w*h)
	for r := range uh {
		for c := range uw {
			sr, sc := r, c
			if flip&4 != 0 {
				sr, sc = c, r
			}
			if flip&2 != 0 {
				sr = h - 1 - sr
			}
			if flip&1 != 0 {
				sc = w - 1 - sc
			}
			for k := range 3 {
				v := math.Round(float64(pix[3*(sr*w+sc)+k]) / scale)
				out[3*(r*uw+c)+k] = uint16(min(max(v, 0), 65535))
			}
		}
	}
	var rows [][]uint16
	for y := 0; y < uh; y += band {
		rows = append(rows, out[3*uw*y:3*uw*min(uh, y+band)])
	}
	return Image16{W: w, H: h, Rows: rows, Band: band, Scale: scale, Flip: flip}
}

// TestReduce16MatchesReduce: the 16-bit image's cells, sub-cells and
// clipped fractions, for every orientation it is stored in, are Reduce's
// of the float image within the codes' rounding (Scale/2 a value), and
// Reduce's of the decoded codes within float rounding.
func TestReduce16MatchesReduce(t *testing.T) {
	const w, h = 203, 137
	rng := rand.New(rand.NewSource(7))
	pix := make([]float32, 3*w*h)
	for i := range pix {
		pix[i] = float32(rng.Float64() * 1.2)
		if i%97 == 0 {
			pix[i] = 1
		}
	}
	scale := 2.0 / 65535
	dec := make([]float32, len(pix))
	for i, v := range pix {
		dec[i] = float32(math.Round(float64(v)/scale) * scale)
	}
	want, wantClip, err := Reduce(Image{W: w, H: h, Pix: pix}, 40, 27, 0.999)
	if err != nil {
		t.Fatal(err)
	}
	wantDec, wantDecClip, _ := Reduce(Image{W: w, H: h, Pix: dec}, 40, 27, 0.999)
	wantSub, _ := ReduceSub(Image{W: w, H: h, Pix: dec}, 40, 27, MaxSub)
	for flip := range 8 {
		m := turn16(pix, w, h, flip, scale, 1+5*flip)
		got, clip, err := Reduce16(m, 40, 27, 0.999)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got.Pix {
			if d := math.Abs(float64(got.Pix[i] - want.Pix[i])); d > scale/2+1e-6 {
				t.Fatalf("flip %d: cell value %d = %g, float image's %g", flip, i, got.Pix[i], want.Pix[i])
			}
			if d := math.Abs(float64(got.Pix[i] - wantDec.Pix[i])); d > 1e-6 {
				t.Fatalf("flip %d: cell value %d = %g, decoded image's %g", flip, i, got.Pix[i], wantDec.Pix[i])
			}
		}
		for i := range clip {
			if clip[i] != wantDecClip[i] || math.Abs(float64(clip[i]-wantClip[i])) > 0.02 {
				t.Fatalf("flip %d: clipped fraction %d = %g, want %g (float %g)", flip, i, clip[i], wantDecClip[i], wantClip[i])
			}
		}
		sub, err := ReduceSub16(m, 40, 27, MaxSub)
		if err != nil {
			t.Fatal(err)
		}
		if sub.Sub != wantSub.Sub || len(sub.Image.Pix) != len(wantSub.Image.Pix) {
			t.Fatalf("flip %d: sub-grid %d×%d of %d, want %d", flip, sub.Image.W, sub.Image.H, sub.Sub, wantSub.Sub)
		}
		for i := range sub.Image.Pix {
			if d := math.Abs(float64(sub.Image.Pix[i] - wantSub.Image.Pix[i])); d > 1e-6 {
				t.Fatalf("flip %d: sub-cell value %d = %g, want %g", flip, i, sub.Image.Pix[i], wantSub.Image.Pix[i])
			}
		}
	}
	if _, _, err := Reduce16(Image16{W: 2, H: 2, Rows: [][]uint16{make([]uint16, 12)}, Band: 2}, 1, 1, 0); err == nil {
		t.Error("Reduce16 with scale 0: no error")
	}
}
