package dngopcode_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/dngopcode"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

func sampleList() []byte {
	gains := []float32{1, 2, 3, 4, 5, 6}
	return synthdng.OpcodeList(
		synthdng.VignetteOpcode([5]float64{0.5, 0.25, 0, 0, 0.125}, 0.5, 0.4),
		synthdng.WarpOpcode([][6]float64{{1, 0.01, 0, 0, 0.001, 0}, {0.99, 0, 0, 0, 0, 0}, {1.01, 0, 0, 0, 0, 0.002}}, 0.5, 0.5),
		synthdng.GainMapOpcode(synthdng.GainMapArea{Top: 1, Left: 0, Bottom: 10, Right: 20, Planes: 1, RowPitch: 2, ColPitch: 2},
			2, 3, 1, 0.5, 0, 0, 1, gains),
		synthdng.Opcode{ID: 99, Flags: 1, Params: []byte{1, 2, 3}},
		synthdng.Opcode{ID: 8, Params: make([]byte, 36)},
	)
}

func TestParseRoundTrip(t *testing.T) {
	l, err := dngopcode.Parse(sampleList())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range l {
		names = append(names, o.ID.Name())
	}
	if got := strings.Join(names, ","); got != "FixVignetteRadial,WarpRectilinear,GainMap,opcode 99,MapPolynomial" {
		t.Fatalf("names %s", got)
	}
	v := l[0].Vignette
	if v == nil || v.K != [5]float64{0.5, 0.25, 0, 0, 0.125} || v.CX != 0.5 || v.CY != 0.4 {
		t.Errorf("vignette %+v", v)
	}
	w := l[1].Warp
	if w == nil || len(w.Planes) != 3 || w.Planes[0].Kr[1] != 0.01 || w.Planes[0].Kt[0] != 0.001 || w.Planes[2].Kt[1] != 0.002 {
		t.Errorf("warp %+v", w)
	}
	g := l[2].GainMap
	if g == nil || g.Top != 1 || g.Bottom != 10 || g.Right != 20 || g.RowPitch != 2 || g.PointsV != 2 || g.PointsH != 3 || g.SpacingH != 0.5 || len(g.Gains) != 6 || g.Gains[5] != 6 {
		t.Errorf("gain map %+v", g)
	}
	if !l[3].Optional() || l[3].ID.Implemented() || len(l[3].Params) != 3 || l[4].ID.Implemented() {
		t.Errorf("unknown opcode %+v", l[3])
	}
	if !dngopcode.GainMap.Implemented() || !dngopcode.WarpRectilinear.Implemented() || !dngopcode.FixVignetteRadial.Implemented() {
		t.Error("implemented opcodes")
	}
}

// TestParseTruncated: every truncation of a valid list is an error
// wrapping ErrCorrupt (or, cut at an opcode boundary with the count
// patched, fine); none panics, and a cut inside an opcode names it.
func TestParseTruncated(t *testing.T) {
	b := sampleList()
	for n := 1; n < len(b); n++ {
		l, err := dngopcode.Parse(b[:n])
		if err == nil {
			t.Fatalf("%d of %d bytes: no error", n, len(b))
		}
		if !errors.Is(err, dngopcode.ErrCorrupt) {
			t.Fatalf("%d bytes: %v does not wrap ErrCorrupt", n, err)
		}
		if len(l) > 5 {
			t.Fatalf("%d bytes: %d opcodes", n, len(l))
		}
	}
	// Cut inside the GainMap's gains: the error names it, the two before
	// are returned.
	l, err := dngopcode.Parse(b[:len(b)-(16+36)-(16+3)-10])
	if err == nil || !strings.Contains(err.Error(), "opcode 3 of 5 (GainMap)") {
		t.Fatalf("error %v", err)
	}
	if len(l) < 2 {
		t.Fatalf("%d opcodes before the bad one", len(l))
	}
}

func TestParseBadParams(t *testing.T) {
	for name, op := range map[string]synthdng.Opcode{
		"FixVignetteRadial": {ID: 3, Params: make([]byte, 40)},
		"WarpRectilinear":   {ID: 1, Params: []byte{0, 0, 0, 9}},
		"GainMap":           synthdng.GainMapOpcode(synthdng.GainMapArea{Bottom: 4, Right: 4, Planes: 1, RowPitch: 0, ColPitch: 1}, 1, 1, 1, 1, 0, 0, 1, []float32{1}),
	} {
		_, err := dngopcode.Parse(synthdng.OpcodeList(op))
		if err == nil || !strings.Contains(err.Error(), name) || !errors.Is(err, dngopcode.ErrCorrupt) {
			t.Errorf("%s: error %v", name, err)
		}
	}
	if _, err := dngopcode.Parse([]byte{0xff, 0xff, 0xff, 0xff, 0, 0}); err == nil {
		t.Error("huge count accepted")
	}
}

func FuzzParse(f *testing.F) {
	f.Add(sampleList())
	f.Add(synthdng.OpcodeList(synthdng.VignetteOpcode([5]float64{1}, 0.5, 0.5)))
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 9, 1, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := dngopcode.Parse(b)
		if err != nil && !errors.Is(err, dngopcode.ErrCorrupt) {
			t.Fatalf("error %v does not wrap ErrCorrupt", err)
		}
		for _, o := range l {
			if g := o.GainMap; g != nil {
				img := make([]float32, 8*6*3)
				g.ApplyImage(img, 8, 6, 3, dngopcode.Area{Width: 8, Height: 6})
			}
		}
	})
}

func TestVignetteUndoesFalloff(t *testing.T) {
	v := &dngopcode.VignetteParams{K: [5]float64{0.6, 0.3}, CX: 0.5, CY: 0.5}
	const w, h = 40, 30
	img := make([]float32, w*h)
	m := math.Hypot(w/2, h/2)
	for y := range h {
		for x := range w {
			img[y*w+x] = float32(0.3 / v.Gain(math.Hypot(float64(x)+0.5-w/2, float64(y)+0.5-h/2)/m))
		}
	}
	corner := img[0]
	v.ApplyImage(img, w, h, 1, dngopcode.Area{Width: w, Height: h})
	for i, p := range img {
		if math.Abs(float64(p)-0.3) > 1e-5 {
			t.Fatalf("pixel %d: %g after, want 0.3", i, p)
		}
	}
	if corner > 0.2 {
		t.Fatalf("corner %g: the test's falloff is too weak", corner)
	}
	if g := v.Gain(1); math.Abs(g-1.9) > 1e-12 {
		t.Fatalf("gain at the corner %g", g)
	}
}

// TestGainMapBilinear: a map linear in both directions is reproduced
// exactly (bilinear interpolation) inside the map and held at its edge
// outside; only the selected planes, rows and columns change.
func TestGainMapBilinear(t *testing.T) {
	const w, h, c = 20, 10, 3
	// 3 × 5 points covering v 0.25..0.75, h 0..1.
	gains := make([]float32, 3*5)
	gain := func(v, hh float64) float64 { return 1 + v + 2*hh }
	for i := range 3 {
		for j := range 5 {
			gains[i*5+j] = float32(gain(0.25+0.25*float64(i), 0.25*float64(j)))
		}
	}
	l, err := dngopcode.Parse(synthdng.OpcodeList(synthdng.GainMapOpcode(
		synthdng.GainMapArea{Top: 0, Left: 1, Bottom: h, Right: w, Plane: 1, Planes: 1, RowPitch: 1, ColPitch: 2},
		3, 5, 0.25, 0.25, 0.25, 0, 1, gains)))
	if err != nil {
		t.Fatal(err)
	}
	img := make([]float32, w*h*c)
	for i := range img {
		img[i] = 1
	}
	l[0].GainMap.ApplyImage(img, w, h, c, dngopcode.Area{Width: w, Height: h})
	for y := range h {
		for x := range w {
			for p := range c {
				got := float64(img[(y*w+x)*c+p])
				want := 1.0
				if p == 1 && x%2 == 1 {
					v := min(max((float64(y)+0.5)/h, 0.25), 0.75)
					want = gain(v, (float64(x)+0.5)/w)
				}
				if math.Abs(got-want) > 1e-5 {
					t.Fatalf("(%d,%d) plane %d: %g, want %g", x, y, p, got, want)
				}
			}
		}
	}
}

// TestGainMapCFA: on CFA data the gain scales the signal above black,
// at the pitch's sites only, and clamps at 65535.
func TestGainMapCFA(t *testing.T) {
	const w, h = 8, 6
	g := &dngopcode.GainMapParams{Top: 1, Left: 0, Bottom: h, Right: w, Planes: 1, RowPitch: 2, ColPitch: 2,
		PointsV: 1, PointsH: 1, SpacingV: 1, SpacingH: 1, MapPlanes: 1, Gains: []float32{2}}
	raw := make([]uint16, w*h)
	for i := range raw {
		raw[i] = 1100
	}
	raw[1*w+2] = 60000
	raw[3*w+4] = 900
	g.ApplyCFA(raw, w, h, dngopcode.Area{Width: w, Height: h}, func(int, int) float64 { return 1000 })
	for y := range h {
		for x := range w {
			want := uint16(1100)
			if y%2 == 1 && x%2 == 0 {
				want = 1200
			}
			switch {
			case y == 1 && x == 2:
				want = 65535
			case y == 3 && x == 4:
				want = 900
			}
			if raw[y*w+x] != want {
				t.Fatalf("(%d,%d): %d, want %d", x, y, raw[y*w+x], want)
			}
		}
	}
	// An Area offset (OpcodeList1: the buffer is the active area) moves
	// the selected rows: image row 1 is buffer row 0.
	raw2 := make([]uint16, w*h)
	for i := range raw2 {
		raw2[i] = 1100
	}
	g.ApplyCFA(raw2, w, h, dngopcode.Area{Top: 1, Width: w, Height: h + 1}, func(int, int) float64 { return 1000 })
	if raw2[0] != 1200 || raw2[w] != 1100 {
		t.Fatalf("offset area: rows 0, 1 = %d, %d", raw2[0], raw2[w])
	}
}

// TestWarpMoves: the identity warp changes nothing; a radial scale kr0
// takes each output pixel from kr0 times its distance from the centre,
// per plane.
func TestWarpMoves(t *testing.T) {
	const w, h, c = 41, 31, 2
	img := make([]float32, w*h*c)
	for y := range h {
		for x := range w {
			img[(y*w+x)*c] = float32(x)
			img[(y*w+x)*c+1] = float32(y)
		}
	}
	a := dngopcode.Area{Width: w, Height: h}
	id := &dngopcode.WarpParams{Planes: []dngopcode.WarpPlane{{Kr: [4]float64{1}}}, CX: 0.5, CY: 0.5}
	out := id.ApplyImage(img, w, h, c, a)
	for i := range out {
		if math.Abs(float64(out[i]-img[i])) > 1e-4 {
			t.Fatalf("identity warp moved value %d: %g → %g", i, img[i], out[i])
		}
	}
	sc := &dngopcode.WarpParams{Planes: []dngopcode.WarpPlane{{Kr: [4]float64{0.5}}, {Kr: [4]float64{0.8}}}, CX: 0.5, CY: 0.5}
	out = sc.ApplyImage(img, w, h, c, a)
	// Pixel centre x+0.5 takes 20.5 + k·(x+0.5−20.5) in continuous
	// coordinates, i.e. pixel-centre coordinate 20 + k·(x−20).
	for y := range h {
		for x := range w {
			if got, want := out[(y*w+x)*c], 20+0.5*float32(x-20); math.Abs(float64(got-want)) > 1e-3 {
				t.Fatalf("plane 0 at (%d,%d): %g, want %g", x, y, got, want)
			}
			if got, want := out[(y*w+x)*c+1], 15+0.8*float32(y-15); math.Abs(float64(got-want)) > 1e-3 {
				t.Fatalf("plane 1 at (%d,%d): %g, want %g", x, y, got, want)
			}
		}
	}
	sx, sy := sc.Source(0, 0, 0, a)
	if math.Abs(sx-10.25) > 1e-12 || math.Abs(sy-7.75) > 1e-12 {
		t.Fatalf("Source(0, 0) = %g, %g", sx, sy)
	}
}
