package look

import (
	"math"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/colour"
)

// TestEVRenderMatchesRender: the prepared render of evRender gives, cell
// by cell and at every exposure, the ΔE2000 of the direct render
// (renderModel.render of 2^EV·scene, colour.DeltaE2000) within 1e-9, for
// the Parametric default curve and a Table, with and without a tone space
// other than the preview's; and its score equals the reference score.
func TestEVRenderMatchesRender(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 4000
	scene, prev := Image{W: n, H: 1, Pix: make([]float32, 3*n)}, Image{W: n, H: 1, Pix: make([]float32, 3*n)}
	for i := range scene.Pix {
		scene.Pix[i] = float32(math.Exp2(-10*rng.Float64()) - 0.02*rng.Float64())
		prev.Pix[i] = float32(1.1*rng.Float64() - 0.05)
	}
	ks := make([]int, n)
	for i := range ks {
		ks[i] = i
	}
	table, err := NewTable([]float64{0, 0.05, 0.2, 0.6, 1}, []float64{0, 0.03, 0.3, 0.85, 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, curve := range []Curve{DefaultCurve, table} {
		for _, tone := range []*colour.Space{nil, colour.Rec2020} {
			space := colour.SRGB
			model := newRenderModel(space, tone, space.ToXYZ[1])
			r := newEVRender(scene, prev, ks, curve, space, model, 2)
			c := Cells{Scene: scene, Preview: prev}
			ref := referenceEVScore(c, ks, curve, space, model)
			for _, ev := range []float64{-3, -0.7, 0, 0.38, 2.5} {
				g := math.Exp2(ev)
				gg := math.Pow(g, DefaultCurve.Gamma)
				for i, k := range ks {
					s := scene.cell(k)
					want := colour.DeltaE2000(space.LinearToLab(model.render(curve, [3]float64{s[0] * g, s[1] * g, s[2] * g})), space.LinearToLab(clampCube(prev.cell(k))))
					if got := r.cellDE(&r.cells[i], g, gg); !(math.Abs(got-want) <= 1e-9*max(1, want)) {
						t.Fatalf("%T tone %v EV %g cell %d %v: ΔE %.12f, direct %.12f", curve, tone != nil, ev, k, s, got, want)
					}
				}
				if got, want := r.score(ev, math.Inf(1)), ref(ev, 0); math.Abs(got-want) > 1e-9 {
					t.Errorf("%T tone %v EV %g: score %.12f, reference %.12f", curve, tone != nil, ev, got, want)
				}
				r1 := newEVRender(scene, prev, ks, curve, space, model, 1)
				if a, b := r.score(ev, math.Inf(1)), r1.score(ev, math.Inf(1)); a != b {
					t.Errorf("%T tone %v EV %g: score %v on 2 threads, %v on 1", curve, tone != nil, ev, a, b)
				}
				if got := r.score(ev, ref(ev, 0)/2); !math.IsInf(got, 1) {
					t.Errorf("score with bound half the score: %g, want +Inf", got)
				}
			}
		}
	}
}

// BenchmarkEVRenderScore: one score of 43 776 random cells (a 256×171
// grid) on one thread, through the Rec. 2020 tone space.
func BenchmarkEVRenderScore(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 256 * 171
	scene, prev := Image{W: n, H: 1, Pix: make([]float32, 3*n)}, Image{W: n, H: 1, Pix: make([]float32, 3*n)}
	for i := range scene.Pix {
		scene.Pix[i] = float32(math.Exp2(-8 * rng.Float64()))
		prev.Pix[i] = float32(rng.Float64())
	}
	ks := make([]int, n)
	for i := range ks {
		ks[i] = i
	}
	r := newEVRender(scene, prev, ks, DefaultCurve, colour.SRGB, newRenderModel(colour.SRGB, colour.Rec2020, colour.SRGB.ToXYZ[1]), 1)
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	for b.Loop() {
		r.score(0.3, math.Inf(1))
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := ru1.Utime.Nano() - ru0.Utime.Nano() + ru1.Stime.Nano() - ru0.Stime.Nano()
	b.ReportMetric(float64(cpu)/float64(b.N)/n, "cpu-ns/cell")
}
