package look

import (
	"fmt"
	"math"
	"sort"

	"github.com/rawbatch/rawbatch/pipeline/colour"
)

// Constants of the camera look fit (docs/look.md).
const (
	// MaxCameraResidual is the largest cross-validated mean ΔE2000 of an
	// acceptable camera look fit; above it a stage falls back to the
	// default look (a residual mean ΔE on the fit grid above about 8).
	MaxCameraResidual = 8
	// toneBinEV is the width of the log-luminance bins of the tone fit,
	// toneMinEV the lowest bin's lower edge (scene-linear, 1 = clip).
	toneBinEV, toneMinEV = 0.5, -10.0
	// toneShrink is the pseudo-count of the default curve in each bin:
	// a bin of n cells keeps n/(n+toneShrink) of its own (isotonic) value.
	toneShrink = 20.0
	// cvBlock is the side, in cells, of the checkerboard blocks that
	// split the grid into the fit half and the scoring half (blocks rather
	// than single cells, because neighbouring cells are nearly equal).
	cvBlock = 8
	// satMin, satMax, satStep: the saturation search.
	satMin, satMax, satStep = 0.5, 2.0, 0.05
	fitMaxCells             = 4000
	// curveBlendStep is the step of the search of CameraLook.CurveWeight,
	// matrixBlendStep that of CameraLook.MatrixWeight.
	curveBlendStep, matrixBlendStep = 0.1, 0.1
	// blendKnotEV is the spacing, in EV, of the knots of a blended curve
	// (from 2^toneMinEV to 1): dense enough that the spline through them
	// follows DefaultCurve within 0.002.
	blendKnotEV = 0.25
)

// blendCurve is the curve whose lightness is (1−w)·L*(DefaultCurve(x)) +
// w·L*(fitted(x)), as a Table through knots every blendKnotEV from
// 2^toneMinEV to 1 (and (0, 0)); monotone because both curves are and the
// mix of non-decreasing functions is.
func blendCurve(fitted *Table, w float64) (*Table, error) {
	xs, ys := []float64{0}, []float64{0}
	for e := toneMinEV; e < -1e-9; e += blendKnotEV {
		x := math.Exp2(e)
		l := (1-w)*lightness(DefaultCurve.Apply(x)) + w*lightness(fitted.Apply(x))
		xs, ys = append(xs, x), append(ys, clamp01(max(lightnessInv(l), ys[len(ys)-1])))
	}
	xs, ys = append(xs, 1), append(ys, 1)
	return NewTable(xs, ys)
}

// CameraLook is a per-file look fitted to the embedded preview by
// FitCamera: render a white-balanced scene-linear pixel s (in the
// preview's space) as
//
//	s' = Matrix · 2^EV · toSpace·diag(Gains)·camera,
//	s'' = Y + Saturation·(s' − Y)   (Y = luminance of s'),
//	out = gamut-compressed RGBTone(Curve, s'').
type CameraLook struct {
	Gains      [3]float64 // camera R, G, B multipliers, G = 1
	EV         float64    // exposure in EV
	Curve      *Table     // fitted monotone tone curve, scene-linear → display-linear
	Saturation float64    // factor about luminance, 1 = unchanged
	// CurveWeight is the weight in [0, 1] of the curve fitted to the
	// preview against DefaultCurve in Curve (blended in L*; 0 = the
	// default curve).
	CurveWeight float64
	// Residual is the cross-validated mean ΔE2000 on the scoring half of
	// the grid (cells not used by the fit); FitResidual the same on the
	// fit half. Cells counts the scoring cells.
	Residual, FitResidual float64
	Cells                 int
	// ToneSpace is the space the curve is applied in (Cells.ToneSpace
	// of the fit; nil: the preview's space).
	ToneSpace *colour.Space
	// Matrix is the colour correction applied after the gains, the
	// camera matrix and the exposure, before the saturation, in Space (the preview's linear
	// space): rows sum to 1, so neutral stays neutral; the zero value
	// is the identity. MatrixWeight in [0, 1] is how far it was taken
	// from the identity toward the least-squares fit (matrixFit), chosen
	// on the fit half by the mean ΔE2000 as CurveWeight is.
	Matrix       colour.Mat3
	MatrixWeight float64
	Space        *colour.Space
}

// matrix is l.Matrix, the identity for the zero value.
func (l CameraLook) matrix() colour.Mat3 {
	if l.Matrix == (colour.Mat3{}) {
		return colour.Identity3
	}
	return l.Matrix
}

// MatrixIn is l.Matrix expressed in the linear space in (for a stage
// that works in another space than the preview's): C⁻¹·Matrix·C with C
// the conversion from in to l.Space; the identity when there is none.
func (l CameraLook) MatrixIn(in *colour.Space) colour.Mat3 {
	m := l.matrix()
	if l.Space == nil || in == nil || in == l.Space || m == colour.Identity3 {
		return m
	}
	return colour.ConvertMatrix(l.Space, in).Mul(m).Mul(colour.ConvertMatrix(in, l.Space))
}

// Acceptable reports Residual ≤ MaxCameraResidual.
func (l CameraLook) Acceptable() bool { return l.Residual <= MaxCameraResidual }

// Render applies the look to one camera-RGB value (scene-linear, not white
// balanced) and returns display-linear RGB in [0, 1] in the preview's
// space; toSpace, space and lum as given to FitCamera (the curve in
// l.ToneSpace).
func (l CameraLook) Render(toSpace colour.Mat3, space *colour.Space, lum [3]float64, camera [3]float64) [3]float64 {
	return renderCell(l.matrix().Mul(toSpace), newRenderModel(space, l.ToneSpace, lum), camera, l.Gains, l.EV, l.Saturation, l.Curve)
}

func renderCell(toSpace colour.Mat3, model renderModel, cam, gains [3]float64, ev, sat float64, curve Curve) [3]float64 {
	lum := model.lum
	k := math.Exp2(ev)
	s := toSpace.Apply([3]float64{cam[0] * gains[0] * k, cam[1] * gains[1] * k, cam[2] * gains[2] * k})
	y := luminance(s, lum)
	for i := range s {
		s[i] = y + sat*(s[i]-y)
	}
	return model.render(curve, s)
}

// FitOptions are the inputs of FitCamera besides the grids.
type FitOptions struct {
	// Gains, when non-zero, are the white balance to use (as-shot
	// multipliers relative to green); zero fits them with FitWB.
	Gains [3]float64
	// Sub, when set (ReduceSub of the image the camera grid was reduced
	// from, to the same grid and scale), is what the curve, saturation
	// and residual render: every sub-cell, averaged display-linear per
	// cell, as the look score reduces the conversion's output; without
	// it each cell's mean is rendered.
	Sub SubGrid
	// Reference, when set, fits with the direct implementations
	// (FitWBReference, AnchorExposureDeltaEReference, every objective
	// rendered cell by cell through renderCell and colour.DeltaE2000, no
	// early stop): the reference of the prepared objectives (tests;
	// TestCameraFitMatchesReference).
	Reference bool
}

// CVMask returns the fit half of the cross-validation split of a w×h grid
// (true = fit, false = score): a checkerboard of 8×8-cell blocks.
func CVMask(w, h int) []bool {
	m := make([]bool, w*h)
	for y := range h {
		for x := range w {
			m[y*w+x] = (x/cvBlock+y/cvBlock)%2 == 0
		}
	}
	return m
}

// FitCamera fits the camera look of one file to its preview: camera is
// the camera-RGB grid (scene-linear, not white balanced, W×H×3), toSpace
// maps white-balanced camera RGB to the preview's linear space, space is
// that space (for ΔE2000), c.Preview, c.Clipped, c.Lum as for
// AnchorExposure (c.Scene is ignored). On the fit half of CVMask it fits
// in turn the gains (FitWB with DefaultCurve, unless opts.Gains is set),
// the exposure (AnchorExposure with DefaultCurve, unclamped median), a
// tone curve (weighted isotonic regression of the preview's luminance on
// 0.5 EV bins of scene log-luminance, each bin shrunk toward DefaultCurve
// with a pseudo-count of 20 cells, interpolated by a monotone spline
// through (0,0) and (1,1)) blended with DefaultCurve (CurveWeight), one
// saturation factor in [0.5, 2] (grid search by 0.05 on the mean
// ΔE2000) and a white-preserving colour matrix (Matrix, MatrixWeight);
// the ΔE2000 objectives render opts.Sub's sub-cells when given. It then
// scores the mean ΔE2000 on every cell of the other half (Residual).
// Errors: mismatched grids, too few usable cells for the gains or the
// exposure.
func FitCamera(camera Image, toSpace colour.Mat3, space *colour.Space, c Cells, opts FitOptions) (CameraLook, error) {
	c.Scene = camera
	if err := c.check(); err != nil {
		return CameraLook{}, err
	}
	n := camera.W * camera.H
	fitMask := CVMask(camera.W, camera.H)
	l := CameraLook{ToneSpace: c.ToneSpace, Matrix: colour.Identity3, Space: space}
	model := newRenderModel(space, c.ToneSpace, c.Lum)
	l.Gains = opts.Gains
	if l.Gains == ([3]float64{}) {
		fitWB := FitWB
		if opts.Reference {
			fitWB = FitWBReference
		}
		wb, err := fitWB(camera, toSpace, c, DefaultCurve, fitMask)
		if err != nil {
			return CameraLook{}, err
		}
		l.Gains = wb.Gains
	}
	// The white-balanced scene grid in the preview's space.
	scene := Image{W: camera.W, H: camera.H, Pix: make([]float32, 3*n)}
	for k := range n {
		cam := camera.cell(k)
		s := toSpace.Apply([3]float64{cam[0] * l.Gains[0], cam[1] * l.Gains[1], cam[2] * l.Gains[2]})
		scene.Pix[3*k], scene.Pix[3*k+1], scene.Pix[3*k+2] = float32(s[0]), float32(s[1]), float32(s[2])
	}
	c.Scene = scene
	ex, err := anchorExposureDeltaE(c, DefaultCurve, space, fitMask, opts.Reference)
	if err != nil {
		return CameraLook{}, err
	}
	if ex.Cells < MinAnchorCells {
		return CameraLook{}, fmt.Errorf("look: camera fit: %d usable exposure cells, need %d", ex.Cells, MinAnchorCells)
	}
	l.EV = ex.Raw

	// Cells that inform the fit and the score: unclipped in the raw and
	// above the noise.
	valid := make([]bool, n)
	for k := range n {
		valid[k] = (c.Clipped == nil || c.Clipped[k] <= MaxClippedFraction) && luminance(scene.cell(k), c.Lum) >= MinSceneLum
	}
	// The fit uses the valid cells of its half; the score takes every
	// cell of the other half, as ScorePreview takes every cell of the
	// output (clipped and dark cells too: they are rendered through the
	// same model, and leaving them out made the residual 0.26 lower than
	// the conversion's score on the D30, docs/look.md).
	var fitCells, scoreCells []int
	for k := range n {
		switch {
		case !fitMask[k]:
			scoreCells = append(scoreCells, k)
		case valid[k]:
			fitCells = append(fitCells, k)
		}
	}
	if len(fitCells) == 0 || len(scoreCells) == 0 {
		return CameraLook{}, fmt.Errorf("look: camera fit: %d fit and %d scoring cells", len(fitCells), len(scoreCells))
	}
	fitted, err := fitTone(scene, c, fitCells, math.Exp2(l.EV))
	if err != nil {
		return CameraLook{}, err
	}
	sub := thin(fitCells, fitMaxCells)
	useSub := opts.Sub.ok(camera.W, camera.H)
	// meanDE is the objective: the mean ΔE2000 over cells of the look
	// with l's matrix, curve, gains and EV at saturation sat; +Inf once it
	// is sure to be at least bound (the searches keep only a strictly
	// lower one).
	fast := newCamRender(camera, opts.Sub, useSub, model, space, c.Preview, c.Threads)
	meanDE := func(cells []int, sat, bound float64) float64 {
		return fast.meanDE(cells, l.Matrix.Mul(toSpace), l.Gains, l.EV, sat, l.Curve, bound)
	}
	if opts.Reference {
		render := func(m colour.Mat3, k int, sat float64) [3]float64 {
			if !useSub {
				return renderCell(m, model, camera.cell(k), l.Gains, l.EV, sat, l.Curve)
			}
			var out [3]float64
			opts.Sub.each(k, func(v [3]float64, w float64) {
				r := renderCell(m, model, v, l.Gains, l.EV, sat, l.Curve)
				out[0], out[1], out[2] = out[0]+w*r[0], out[1]+w*r[1], out[2]+w*r[2]
			})
			return out
		}
		meanDE = func(cells []int, sat, _ float64) float64 {
			m := l.Matrix.Mul(toSpace)
			var s float64
			for _, k := range cells {
				s += colour.DeltaE2000(space.LinearToLab(render(m, k, sat)), space.LinearToLab(clampCube(c.Preview.cell(k))))
			}
			return s / float64(len(cells))
		}
	}
	// The curve: the fitted one blended in L* with DefaultCurve, the
	// weight chosen on the fit half by the mean ΔE2000 (weight 0 is the
	// default look's curve, so the fit is never worse than it there);
	// then the saturation; then the weight again at that saturation.
	blends := make([]*Table, 0, int(1/curveBlendStep)+1)
	for w := 0.0; w <= 1+1e-9; w += curveBlendStep {
		t, err := blendCurve(fitted, w)
		if err != nil {
			return CameraLook{}, err
		}
		blends = append(blends, t)
	}
	chooseCurve := func() {
		seed := int(math.Round(l.CurveWeight / curveBlendStep))
		i, _ := argminFirst(len(blends), seed, func(i int, bound float64) float64 {
			l.Curve = blends[i]
			return meanDE(sub, l.Saturation, bound)
		})
		l.CurveWeight = float64(i) * curveBlendStep
		l.Curve = blends[i]
	}
	var sats []float64
	for sat := satMin; sat <= satMax+1e-9; sat += satStep {
		sats = append(sats, sat)
	}
	chooseSat := func() {
		seed := 0
		for i, sat := range sats {
			if math.Abs(sat-l.Saturation) < math.Abs(sats[seed]-l.Saturation) {
				seed = i
			}
		}
		i, _ := argminFirst(len(sats), seed, func(i int, bound float64) float64 {
			return meanDE(sub, sats[i], bound)
		})
		l.Saturation = sats[i]
	}
	l.Saturation = 1
	chooseCurve()
	chooseSat()
	chooseCurve()
	// The colour matrix, shrunk toward the identity by a weight chosen
	// on the fit half; then the saturation and the curve again.
	if d := l.fitMatrix(scene, c, fitCells, model); d != (colour.Mat3{}) {
		best := meanDE(sub, l.Saturation, math.Inf(1))
		for i := 1; i <= int(math.Round(1/matrixBlendStep)); i++ {
			w := float64(i) * matrixBlendStep
			l.Matrix = blendMatrix(d, w)
			if v := meanDE(sub, l.Saturation, best); v < best {
				best, l.MatrixWeight = v, w
			}
		}
		l.Matrix = blendMatrix(d, l.MatrixWeight)
		if l.MatrixWeight > 0 {
			chooseSat()
			chooseCurve()
		}
	}
	l.FitResidual = meanDE(fitCells, l.Saturation, math.Inf(1))
	l.Residual = meanDE(scoreCells, l.Saturation, math.Inf(1))
	l.Cells = len(scoreCells)
	return l, nil
}

// argminFirst returns the first index of the lowest of f(0) … f(n−1) and
// that value, as a loop over i keeping only strictly lower values finds
// them, evaluating f(seed) first so that its value bounds the early stops
// of the others: f(i, bound) may return +Inf once its value is sure to be
// at least bound, and the bound is what i must beat (strictly below the
// best so far; before the seed, also at most the seed's value, which it
// ties to win: bound is then a hair above the seed's value, and a stop
// there means above it).
func argminFirst(n, seed int, f func(i int, bound float64) float64) (int, float64) {
	vs := f(seed, math.Inf(1))
	best, bestV := -1, math.Inf(1)
	for i := range n {
		v := vs
		if i != seed {
			bound := bestV
			if i < seed {
				bound = min(bound, vs*(1+1e-12))
			}
			v = f(i, bound)
		}
		if v < bestV || best < 0 && i == seed {
			best, bestV = i, v
		}
	}
	return best, bestV
}

// fitMatrix returns the least-squares colour correction D (matrixFit)
// on the usable fit cells: s = 2^EV·scene, u = the preview taken back
// through model with l.Curve, its saturation l.Saturation undone.
func (l CameraLook) fitMatrix(scene Image, c Cells, cells []int, model renderModel) colour.Mat3 {
	k := math.Exp2(l.EV)
	var ss, us [][3]float64
	for _, i := range cells {
		if !c.usable(i) {
			continue
		}
		p := clampCube(c.Preview.cell(i))
		var t [3]float64
		if model.convert {
			t = model.fromTone.Apply(InverseRGBTone(l.Curve, model.toTone.Apply(p)))
		} else {
			t = InverseRGBTone(l.Curve, p)
		}
		y := luminance(t, c.Lum)
		if !(y > 0) {
			continue
		}
		for r := range 3 {
			t[r] = y + (t[r]-y)/l.Saturation
		}
		sc := scene.cell(i)
		ss = append(ss, [3]float64{k * sc[0], k * sc[1], k * sc[2]})
		us = append(us, t)
	}
	return matrixFit(ss, us, c.Lum)
}

// fitTone fits the monotone tone curve on the given cells: x = k·Ys
// (scene luminance after exposure), y = Yp (preview luminance). Each bin
// averages log2 x (the bins are in EV) and the preview's lightness L*
// (the score's scale: a mean of linear Y would let the brightest cells of
// a bin pull its value up, and a least-squares fit in Y weighs highlight
// errors far above the ΔE2000 they make); the isotonic regression and the
// shrink toward DefaultCurve are in L* too, and the knots go back to Y.
func fitTone(scene Image, c Cells, cells []int, k float64) (*Table, error) {
	nb := int(-toneMinEV / toneBinEV)
	sx, sy, cnt := make([]float64, nb), make([]float64, nb), make([]float64, nb)
	for _, i := range cells {
		x := k * luminance(scene.cell(i), c.Lum)
		if x <= 0 || x >= 1 {
			continue
		}
		b := int((math.Log2(x) - toneMinEV) / toneBinEV)
		if b < 0 || b >= nb {
			continue
		}
		sx[b] += math.Log2(x)
		sy[b] += lightness(luminance(clampCube(c.Preview.cell(i)), c.Lum))
		cnt[b]++
	}
	var bx, by, bw []float64
	for b := range nb {
		if cnt[b] > 0 {
			bx = append(bx, math.Exp2(sx[b]/cnt[b]))
			by = append(by, sy[b]/cnt[b])
			bw = append(bw, cnt[b])
		}
	}
	iso := isotonic(by, bw)
	xs, ys := []float64{0}, []float64{0}
	for i := range bx {
		l := (bw[i]*iso[i] + toneShrink*lightness(DefaultCurve.Apply(bx[i]))) / (bw[i] + toneShrink)
		y := lightnessInv(l)
		if bx[i] <= xs[len(xs)-1]+1e-9 || bx[i] >= 1-1e-9 {
			continue
		}
		xs, ys = append(xs, bx[i]), append(ys, clamp01(max(y, ys[len(ys)-1])))
	}
	xs, ys = append(xs, 1), append(ys, 1)
	return NewTable(xs, ys)
}

// isotonic is weighted isotonic (non-decreasing) least-squares regression
// by the pool-adjacent-violators algorithm (Ayer et al. 1955).
func isotonic(y, w []float64) []float64 {
	type block struct {
		v, w float64
		n    int
	}
	var st []block
	for i := range y {
		st = append(st, block{y[i], w[i], 1})
		for len(st) > 1 && st[len(st)-2].v > st[len(st)-1].v {
			a, b := st[len(st)-2], st[len(st)-1]
			st = st[:len(st)-2]
			st = append(st, block{(a.v*a.w + b.v*b.w) / (a.w + b.w), a.w + b.w, a.n + b.n})
		}
	}
	out := make([]float64, 0, len(y))
	for _, b := range st {
		for range b.n {
			out = append(out, b.v)
		}
	}
	return out
}

// thin returns at most m evenly spaced elements of s.
func thin(s []int, m int) []int {
	if len(s) <= m {
		return s
	}
	out := make([]int, m)
	for i := range out {
		out[i] = s[i*len(s)/m]
	}
	sort.Ints(out)
	return out
}
