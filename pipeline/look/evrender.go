package look

import (
	"math"
	"sync"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/internal/par"
)

// evRender renders a fixed set of scene cells through one curve at many
// exposures and scores them against their preview cells by the mean
// ΔE2000: what AnchorExposureDeltaE's search evaluates, as
// renderModel.render of 2^EV·scene would, with everything that does not
// depend on the exposure computed once per cell. RGBTone of g·t (t the
// cell in the tone space, g > 0) orders the channels as t does and puts the
// middle one at the same fraction between the others, so its output is
// vl·(1,1,1) + (vh − vl)·(e_hi + f·e_mid) with vh, vl the curve at g·max(t)
// and g·min(t) (each at least 0) and f that fraction; taken back to the
// preview's space this is vl·one + (vh − vl)·w with one and w fixed per
// cell. For the Parametric curve (the default look's) u = (g·x)^γ is
// g^γ·x^γ, so no power is taken per exposure either. The results equal
// the direct render's within rounding (TestEVRenderMatchesRender).
type evRender struct {
	cells []evCell
	one   [3]float64 // fromTone·(1, 1, 1)
	// toRel is the preview space's RGB → XYZ with each row divided by
	// the white's (colour.LabOfRelative's input); oneRel is toRel·one.
	toRel  colour.Mat3
	oneRel [3]float64
	curve  Curve
	par    Parametric
	isPar  bool
	space  *colour.Space
	lum    [3]float64
	// threads is how many goroutines score runs on (≤ 0: GOMAXPROCS);
	// sums holds the chunk sums of one score.
	threads int
	sums    []float64
}

// evChunk is how many cells one goroutine of evRender.score sums at a
// time (chunkedMean).
const evChunk = 1024

type evCell struct {
	xh, xl float64    // the largest and smallest channel in the tone space, ≥ 0
	uh, ul float64    // (x/White)^Gamma of them (Parametric)
	w      [3]float64 // fromTone·(e_hi + f·e_mid)
	wRel   [3]float64 // toRel·w
	ref    colour.DeltaE2000Ref
}

// newEVRender prepares the cells ks of scene (the preview's linear space)
// against the preview's cells (clamped to the cube, as the score does).
func newEVRender(scene, preview Image, ks []int, curve Curve, space *colour.Space, model renderModel, threads int) *evRender {
	r := &evRender{cells: make([]evCell, len(ks)), curve: curve, space: space, lum: model.lum, one: [3]float64{1, 1, 1}, threads: threads}
	r.par, r.isPar = curve.(Parametric)
	if model.convert {
		r.one = model.fromTone.Apply([3]float64{1, 1, 1})
	}
	for i := range 3 {
		for j := range 3 {
			r.toRel[i][j] = space.ToXYZ[i][j] / space.White[i]
		}
	}
	r.oneRel = r.toRel.Apply(r.one)
	for i, k := range ks {
		t := scene.cell(k)
		if model.convert {
			t = model.toTone.Apply(t)
		}
		hi, mid, lo := order3(t)
		var f float64
		if d := t[hi] - t[lo]; d > 0 {
			f = (t[mid] - t[lo]) / d
		}
		var w [3]float64
		w[hi] += 1
		w[mid] += f
		if model.convert {
			w = model.fromTone.Apply(w)
		}
		c := evCell{xh: max(t[hi], 0), xl: max(t[lo], 0), w: w, wRel: r.toRel.Apply(w),
			ref: colour.NewDeltaE2000Ref(space.LinearToLab(clampCube(preview.cell(k))))}
		if r.isPar {
			c.uh = math.Pow(c.xh/r.par.White, r.par.Gamma)
			c.ul = math.Pow(c.xl/r.par.White, r.par.Gamma)
		}
		r.cells[i] = c
	}
	return r
}

// apply is the curve at x = g·x0, with u0 = (x0/White)^Gamma and gg =
// g^Gamma for the Parametric curve.
func (r *evRender) apply(x, u0, gg float64) float64 {
	if !r.isPar {
		return r.curve.Apply(x)
	}
	p := r.par
	if x <= 0 {
		return 0
	}
	if x >= p.White {
		return 1
	}
	u := gg * u0
	return (1 + p.K) * u / (u + p.K)
}

// cellDE is the ΔE2000 of cell c rendered at gain g (gg = g^Gamma).
func (r *evRender) cellDE(c *evCell, g, gg float64) float64 {
	vh := r.apply(g*c.xh, c.uh, gg)
	vl := r.apply(g*c.xl, c.ul, gg)
	d := vh - vl
	p := [3]float64{vl*r.one[0] + d*c.w[0], vl*r.one[1] + d*c.w[1], vl*r.one[2] + d*c.w[2]}
	var t [3]float64
	if p[0] >= 0 && p[0] <= 1 && p[1] >= 0 && p[1] <= 1 && p[2] >= 0 && p[2] <= 1 {
		// Inside the cube (IntoCube leaves it): XYZ/white from the
		// prepared columns.
		t = [3]float64{vl*r.oneRel[0] + d*c.wRel[0], vl*r.oneRel[1] + d*c.wRel[1], vl*r.oneRel[2] + d*c.wRel[2]}
	} else {
		t = r.toRel.Apply(IntoCube(p, r.lum))
	}
	return c.ref.To(colour.LabOfRelative(t))
}

// score is the mean ΔE2000 of the cells rendered at 2^ev (chunkedMean:
// +Inf once it is sure to be at least bound).
func (r *evRender) score(ev, bound float64) float64 { return r.scoreEvery(ev, bound, 1) }

// scoreEvery is score over every k-th cell (the 0th, k-th, 2k-th …).
func (r *evRender) scoreEvery(ev, bound float64, k int) float64 {
	g := math.Exp2(ev)
	var gg float64
	if r.isPar {
		gg = math.Pow(g, r.par.Gamma)
	}
	var m float64
	m, r.sums = chunkedMean((len(r.cells)+k-1)/k, evChunk, r.threads, bound, r.sums, func(i int) float64 {
		return r.cellDE(&r.cells[i*k], g, gg)
	})
	return m
}

// chunkedMean is the mean of f(0) … f(n−1), non-negative terms, summed in
// chunks of chunk indexes on up to threads goroutines (≤ 0:
// GOMAXPROCS), the chunk sums added in chunk order, so that it is the
// same on any number of threads. It returns +Inf as soon as the mean is
// sure to be at least bound: a sum of non-negative terms never decreases,
// so the chunks done so far (added in whatever order they finished)
// bound the total from below up to rounding, which the margin of 1e-9
// covers; a search that keeps only a strictly lower mean loses nothing by
// stopping there. sums is scratch space for the chunk sums (returned,
// grown as needed).
func chunkedMean(n, chunk, threads int, bound float64, sums []float64, f func(i int) float64) (float64, []float64) {
	nc := (n + chunk - 1) / chunk
	if cap(sums) < nc {
		sums = make([]float64, nc)
	}
	sums = sums[:nc]
	limit := bound * float64(n)
	var mu sync.Mutex
	var done float64
	stop := false
	par.RangeOn(threads, nc, 1, func(lo, hi int) {
		for ci := lo; ci < hi; ci++ {
			mu.Lock()
			s := stop
			mu.Unlock()
			if s {
				return
			}
			var sum float64
			for i := ci * chunk; i < min(n, (ci+1)*chunk); i++ {
				sum += f(i)
			}
			sums[ci] = sum
			mu.Lock()
			done += sum
			if done*(1-1e-9) >= limit {
				stop = true
			}
			mu.Unlock()
		}
	})
	if stop {
		return math.Inf(1), sums
	}
	var sum float64
	for _, s := range sums {
		sum += s
	}
	return sum / float64(n), sums
}
