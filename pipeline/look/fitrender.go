package look

import (
	"math"

	"github.com/rawbatch/rawbatch/pipeline/colour"
)

// camRender is FitCamera's objective, the mean ΔE2000 between a look's
// render of the camera grid (or of its sub-cells, averaged display-linear
// per cell) and the preview, computed as renderCell and renderModel.render
// do but with the per-look work done once per evaluation: the gains, the
// exposure, the colour matrix, toSpace, the saturation (a linear map,
// sat·s + (1 − sat)·Y(s)·(1,1,1)) and the conversion to the tone space are
// one 3×3 matrix A, and RGBTone's output taken back to the preview's space
// is vl·one + (vh − vl)·(F_hi + f·F_mid) (evRender explains), so a
// sub-cell costs one matrix product, two curve values and the cube step;
// the preview's CIELAB values are prepared once
// (colour.DeltaE2000Ref). The results equal the direct render's within
// rounding (TestCamRenderMatchesRender).
type camRender struct {
	camera  Image
	sub     SubGrid
	useSub  bool
	model   renderModel
	one     [3]float64 // fromTone·(1, 1, 1)
	from    colour.Mat3
	refs    []colour.DeltaE2000Ref
	space   *colour.Space
	threads int
	sums    []float64
}

// camChunk is how many cells one goroutine of camRender.meanDE renders at
// a time (chunkedMean; a cell is up to MaxSub² renders).
const camChunk = 128

func newCamRender(camera Image, sub SubGrid, useSub bool, model renderModel, space *colour.Space, preview Image, threads int) *camRender {
	r := &camRender{camera: camera, sub: sub, useSub: useSub, model: model, one: [3]float64{1, 1, 1}, from: colour.Identity3, space: space, threads: threads}
	if model.convert {
		r.from = model.fromTone
		r.one = model.fromTone.Apply([3]float64{1, 1, 1})
	}
	n := camera.W * camera.H
	r.refs = make([]colour.DeltaE2000Ref, n)
	for k := range n {
		r.refs[k] = colour.NewDeltaE2000Ref(space.LinearToLab(clampCube(preview.cell(k))))
	}
	return r
}

// meanDE is the mean ΔE2000 over cells of the look rendered with m (the
// colour matrix times toSpace), gains, 2^ev, sat and curve; +Inf once it
// is sure to be at least bound (chunkedMean).
func (r *camRender) meanDE(cells []int, m colour.Mat3, gains [3]float64, ev, sat float64, curve Curve, bound float64) float64 {
	k := math.Exp2(ev)
	lum := r.model.lum
	var s colour.Mat3
	for i := range 3 {
		for j := range 3 {
			s[i][j] = (1 - sat) * lum[j]
		}
		s[i][i] += sat
	}
	a := s.Mul(m)
	for i := range 3 {
		for j := range 3 {
			a[i][j] *= gains[j] * k
		}
	}
	if r.model.convert {
		a = r.model.toTone.Mul(a)
	}
	var mean float64
	mean, r.sums = chunkedMean(len(cells), camChunk, r.threads, bound, r.sums, func(i int) float64 {
		c := cells[i]
		var out [3]float64
		if !r.useSub {
			out = r.render(&a, curve, r.camera.cell(c))
		} else {
			// SubGrid.each, written out: through its closure the camera
			// look's fit is about 8 % slower (BenchmarkPreviewFits).
			g := r.sub
			x, y := c%g.W, c/g.W
			sw := g.Sub * g.W
			for b := range g.Sub {
				sy := g.Sub*y + b
				for a2 := range g.Sub {
					sx := g.Sub*x + a2
					p := r.render(&a, curve, g.Image.cell(sy*sw+sx))
					w := g.wx[sx] * g.wy[sy]
					out[0], out[1], out[2] = out[0]+w*p[0], out[1]+w*p[1], out[2]+w*p[2]
				}
			}
		}
		return r.refs[c].To(r.space.LinearToLab(out))
	})
	return mean
}

// render is one camera value through a (to the tone space), RGBTone with
// curve, back to the preview's space and into the cube.
func (r *camRender) render(a *colour.Mat3, curve Curve, v [3]float64) [3]float64 {
	t := a.Apply(v)
	hi, mid, lo := order3(t)
	vh, vl := curve.Apply(max(t[hi], 0)), curve.Apply(max(t[lo], 0))
	var f float64
	if d := t[hi] - t[lo]; d > 0 {
		f = (t[mid] - t[lo]) / d
	}
	d := vh - vl
	var p [3]float64
	for i := range 3 {
		p[i] = vl*r.one[i] + d*(r.from[i][hi]+f*r.from[i][mid])
	}
	return IntoCube(p, r.model.lum)
}
