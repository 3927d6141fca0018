package look

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/colour"
)

// TestAnchorSearchScoresEachEVOnce: AnchorExposureDeltaE scores no EV
// twice (the start is not scored again on the coarse grid, nor the coarse
// best's neighbours by the fine steps: 20 coarse EVs after the start,
// then at most 4 fine steps each way), scores the EVs the reference
// scores, and finds the reference's EV and score.
func TestAnchorSearchScoresEachEVOnce(t *testing.T) {
	gw, gh := 32, 32
	c := Cells{Scene: Image{W: gw, H: gh, Pix: make([]float32, 3*gw*gh)}, Preview: Image{W: gw, H: gh, Pix: make([]float32, 3*gw*gh)}, Lum: colour.SRGB.ToXYZ[1]}
	other := NewParametric(1.2, 0.18, 0.45, 1)
	for k := range gw * gh {
		x := 0.01 + 0.5*float64(k)/float64(gw*gh)
		for i, tint := range [3]float64{1, 0.9, 0.8} {
			c.Scene.Pix[3*k+i] = float32(x * tint)
		}
		p := RGBTone(other, c.Scene.cell(k))
		for i := range 3 {
			c.Preview.Pix[3*k+i] = float32(p[i])
		}
	}
	var evs []float64
	anchorScoreHook = func(ev float64) { evs = append(evs, ev) }
	defer func() { anchorScoreHook = func(float64) {} }()
	got, err := AnchorExposureDeltaE(c, DefaultCurve, colour.SRGB, nil)
	if err != nil {
		t.Fatal(err)
	}
	prepared := evs
	for i := range evs {
		for j := range i {
			if math.Abs(evs[i]-evs[j]) < 1e-6 {
				t.Errorf("EV %.6f scored twice", evs[i])
			}
		}
	}
	evs = nil
	want, err := AnchorExposureDeltaEReference(c, DefaultCurve, colour.SRGB, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(prepared); n < 20+1 || n > 20+8 || !slices.Equal(prepared, evs) {
		t.Errorf("scored EVs %v after the start, reference %v: want the same 20 coarse and 1 to 8 fine", prepared, evs)
	}
	if math.Abs(got.Raw-want.Raw) > 1e-9 || math.Abs(got.Score-want.Score) > 1e-9 {
		t.Errorf("%v (ΔE %.9f), reference %v (ΔE %.9f)", got, got.Score, want, want.Score)
	}
}

// TestAnchorSearchMatchesGrid: on a 256×170 grid of varied cells (43 520,
// so the fine search scores a sample of every fifth and the coarse every
// fourth of that) whose preview is the scene through another curve, 0.37
// EV brighter, with noise, the search finds the EV that scoring every
// sampled cell at every 0.02 EV within ±1 EV of the start finds, and its
// score.
func TestAnchorSearchMatchesGrid(t *testing.T) {
	gw, gh := 256, 170
	c := Cells{Scene: Image{W: gw, H: gh, Pix: make([]float32, 3*gw*gh)}, Preview: Image{W: gw, H: gh, Pix: make([]float32, 3*gw*gh)}, Lum: colour.SRGB.ToXYZ[1]}
	other := NewParametric(1.3, 0.2, 0.4, 1)
	rng := rand.New(rand.NewPCG(1, 2))
	for k := range gw * gh {
		x, y := k%gw, k/gw
		base := 0.02 + 0.4*float64(x)/float64(gw)*(0.6+0.4*math.Sin(float64(y)/9))
		s := [3]float64{base * (0.6 + 0.8*rng.Float64()), base * (0.7 + 0.6*rng.Float64()), base * (0.5 + rng.Float64())}
		for i := range 3 {
			c.Scene.Pix[3*k+i] = float32(s[i])
		}
		p := RGBTone(other, [3]float64{s[0] * 1.2924, s[1] * 1.2924, s[2] * 1.2924})
		for i := range 3 {
			c.Preview.Pix[3*k+i] = float32(min(1, max(0, p[i]+0.01*rng.NormFloat64())))
		}
	}
	got, err := AnchorExposureDeltaE(c, DefaultCurve, colour.SRGB, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := AnchorExposure(c, DefaultCurve, nil)
	if err != nil {
		t.Fatal(err)
	}
	cells := scoredCells(c)
	if len(cells)/anchorCoarseCells < 2 {
		t.Fatalf("%d scored cells: the coarse search would score them all", len(cells))
	}
	best, bestScore := gridSearch(c, everyKth(cells, anchorFineCells), e.Raw)
	t.Logf("search %+.3f EV (ΔE %.5f), grid %+.3f EV (ΔE %.5f), median %+.3f", got.Raw, got.Score, best, bestScore, e.Raw)
	if math.Abs(got.Raw-best) > 1e-6 || math.Abs(got.Score-bestScore) > 1e-9 {
		t.Errorf("search %+.4f EV (ΔE %.6f), every sampled cell at every 0.02 EV %+.4f (ΔE %.6f)", got.Raw, got.Score, best, bestScore)
	}
}

// scoredCells lists the cells of c that AnchorExposureDeltaE scores.
func scoredCells(c Cells) []int {
	var cells []int
	for k := range c.Scene.W * c.Scene.H {
		if c.scored(k) {
			cells = append(cells, k)
		}
	}
	return cells
}

// gridSearch scores cells of c at every anchorFineEV within ±1 EV of
// start and returns the best EV and its mean ΔE2000.
func gridSearch(c Cells, cells []int, start float64) (float64, float64) {
	r := newEVRender(c.Scene, c.Preview, cells, DefaultCurve, colour.SRGB, newRenderModel(colour.SRGB, nil, c.Lum), 0)
	best, bestScore := start, math.Inf(1)
	for i := -50; i <= 50; i++ {
		ev := start + float64(i)*anchorFineEV
		if s := r.score(ev, math.Inf(1)); s < bestScore {
			best, bestScore = ev, s
		}
	}
	return best, bestScore
}

// TestAnchorSampleNearGrid: on 256×170 grids of varied, noisy cells
// whose preview is the scene through another curve at several
// exposures, the EV the search finds on its sample of anchorFineCells
// is within one fine step of the EV that scoring every cell at every
// 0.02 EV finds, and scores within 0.02 ΔE2000 of it over every cell.
func TestAnchorSampleNearGrid(t *testing.T) {
	gw, gh := 256, 170
	for seed, gain := range []float64{0.7, 1.2924, 2.1, 3.3} {
		c := Cells{Scene: Image{W: gw, H: gh, Pix: make([]float32, 3*gw*gh)}, Preview: Image{W: gw, H: gh, Pix: make([]float32, 3*gw*gh)}, Lum: colour.SRGB.ToXYZ[1]}
		other := NewParametric(1.1+0.1*float64(seed), 0.2, 0.4, 1)
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		for k := range gw * gh {
			x, y := k%gw, k/gw
			base := 0.01 + 0.5*float64(x)/float64(gw)*(0.5+0.5*math.Sin(float64(y)/(5+float64(seed))))
			s := [3]float64{base * (0.5 + rng.Float64()), base * (0.6 + 0.8*rng.Float64()), base * (0.4 + 1.2*rng.Float64())}
			for i := range 3 {
				c.Scene.Pix[3*k+i] = float32(s[i])
			}
			p := RGBTone(other, [3]float64{s[0] * gain, s[1] * gain, s[2] * gain})
			for i := range 3 {
				c.Preview.Pix[3*k+i] = float32(min(1, max(0, p[i]+0.02*rng.NormFloat64())))
			}
		}
		got, err := AnchorExposureDeltaE(c, DefaultCurve, colour.SRGB, nil)
		if err != nil {
			t.Fatal(err)
		}
		cells := scoredCells(c)
		if len(cells) < 2*anchorFineCells {
			t.Fatalf("%d scored cells: the fine search would score them all", len(cells))
		}
		best, bestScore := gridSearch(c, cells, got.Raw)
		r := newEVRender(c.Scene, c.Preview, cells, DefaultCurve, colour.SRGB, newRenderModel(colour.SRGB, nil, c.Lum), 0)
		all := r.score(got.Raw, math.Inf(1))
		t.Logf("gain %.2f: sample %+.3f EV (ΔE over all %.5f), all cells %+.3f EV (ΔE %.5f)", gain, got.Raw, all, best, bestScore)
		if math.Abs(got.Raw-best) > anchorFineEV+1e-6 || all-bestScore > 0.02 {
			t.Errorf("gain %.2f: sample %+.4f EV (ΔE over all %.6f), all cells %+.4f EV (ΔE %.6f)", gain, got.Raw, all, best, bestScore)
		}
	}
}
