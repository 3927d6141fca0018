package colour

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDeltaE2000RefMatches: DeltaE2000Ref.To equals DeltaE2000 within
// 1e-9 on Sharma's table (both orders) and on random pairs: any colours,
// close colours, near-neutral ones and nearly opposite hues.
func TestDeltaE2000RefMatches(t *testing.T) {
	check := func(a, b Lab) {
		t.Helper()
		want := DeltaE2000(a, b)
		if got := NewDeltaE2000Ref(b).To(a); !(math.Abs(got-want) <= 1e-9*max(1, want)) {
			t.Fatalf("DeltaE2000Ref(%v).To(%v) = %.12f, DeltaE2000 %.12f", b, a, got, want)
		}
	}
	for _, r := range sharmaData {
		a, b := Lab{r[0], r[1], r[2]}, Lab{r[3], r[4], r[5]}
		check(a, b)
		check(b, a)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	lab := func(c float64) Lab {
		return Lab{100 * rng.Float64(), c * (2*rng.Float64() - 1), c * (2*rng.Float64() - 1)}
	}
	for range 200000 {
		a := lab(128)
		check(a, lab(128))
		// Close colours (the fits' case), near-neutral, opposite hues.
		d := math.Pow(10, -6*rng.Float64())
		check(a, Lab{a[0] + d*rng.NormFloat64(), a[1] + d*rng.NormFloat64(), a[2] + d*rng.NormFloat64()})
		check(lab(1e-3), lab(2))
		h := 2 * math.Pi * rng.Float64()
		dh := math.Pi + 1e-2*rng.NormFloat64()
		c1, c2 := 60*rng.Float64(), 60*rng.Float64()
		check(Lab{50, c1 * math.Cos(h), c1 * math.Sin(h)}, Lab{55, c2 * math.Cos(h+dh), c2 * math.Sin(h+dh)})
	}
	check(Lab{50, 0, 0}, Lab{60, 0, 0})
	check(Lab{50, 0, 0}, Lab{60, 3, -4})
}

func BenchmarkDeltaE2000(b *testing.B) {
	x, y := Lab{50, 20, -30}, Lab{52, 22, -27}
	b.Run("DeltaE2000", func(b *testing.B) {
		var s float64
		for b.Loop() {
			s += DeltaE2000(x, y)
		}
	})
	b.Run("Ref", func(b *testing.B) {
		r := NewDeltaE2000Ref(y)
		var s float64
		for b.Loop() {
			s += r.To(x)
		}
	})
}
