package look

import (
	"fmt"
	"math"
	"sort"
)

// Curve is a monotone tone curve from scene-linear to display-linear
// values: Apply maps x ≥ 0 to [0, 1] (non-decreasing, Apply(0) = 0), and
// Inverse(y) for y in [0, 1] returns the smallest x with Apply(x) = y
// (Inverse(1) is the curve's white point).
type Curve interface {
	Apply(x float64) float64
	Inverse(y float64) float64
}

// Parametric is rawbatch's own default tone curve, a soft-toe,
// long-shoulder curve in the family of the DNG default rendering:
//
//	f(x) = (1+K)·u/(u+K),  u = (x/White)^Gamma,  for 0 ≤ x ≤ White,
//	f(x) = 1 above White,
//
// so f(0) = 0, f(White) = 1, f is strictly increasing and C¹ on (0, White)
// with f′(0) = 0 for Gamma > 1 (the toe) and slope Gamma·K/(1+K)/White at
// the white point (the shoulder). K is chosen from the mid-grey anchor:
// f(Grey) = GreyOut, K = GreyOut·u₀/(1−GreyOut)… solved exactly by
// NewParametric. The inverse is closed-form: x = White·(K·y/(1+K−y))^(1/Gamma).
type Parametric struct {
	Gamma, K, White float64
}

// DefaultCurve is the default look's tone curve: toe exponent Gamma 1.6,
// white point 1 (the raw clip level after white balance), mid grey
// 0.18 → 0.39 display-linear (the DNG default rendering's anchor). Its control points, computed from the formula (tone_test.go
// checks them): K ≈ 0.1205, f(0.01) ≈ 0.0058, f(0.05) ≈ 0.0721,
// f(0.18) = 0.39, f(0.5) ≈ 0.821, f(1) = 1; slope ≈ 0.17 at white. The
// exponent 1.6 was chosen among 1.1–1.7 as a toe strong enough that camera
// JPEGs' mid-tones follow the curve (interquartile spread of the anchored
// exposure ≤ 0.5 EV on the 6D and D30 files; docs/look.md has the
// sweep); check it on further files before fixing it.
var DefaultCurve = NewParametric(1.6, 0.18, 0.39, 1)

// NewParametric returns the Parametric curve with the given toe exponent
// gamma (≥ 1), white point white (> grey) and mid-grey anchor
// f(grey) = greyOut (0 < greyOut < 1, greyOut > (grey/white)^gamma so that
// K > 0). It panics on parameters outside these ranges (they are constants
// of the program, not user input).
func NewParametric(gamma, grey, greyOut, white float64) Parametric {
	u := math.Pow(grey/white, gamma)
	if gamma < 1 || white <= grey || greyOut <= u || greyOut >= 1 {
		panic(fmt.Sprintf("look: bad tone curve parameters gamma %g grey %g→%g white %g", gamma, grey, greyOut, white))
	}
	// (1+K)u/(u+K) = g  ⇔  K = u(1−g)/(g−u).
	return Parametric{Gamma: gamma, K: u * (1 - greyOut) / (greyOut - u), White: white}
}

// Apply implements Curve.
func (p Parametric) Apply(x float64) float64 {
	if x <= 0 {
		return 0
	}
	if x >= p.White {
		return 1
	}
	u := math.Pow(x/p.White, p.Gamma)
	return (1 + p.K) * u / (u + p.K)
}

// Inverse implements Curve.
func (p Parametric) Inverse(y float64) float64 {
	if y <= 0 {
		return 0
	}
	if y >= 1 {
		return p.White
	}
	return p.White * math.Pow(p.K*y/(1+p.K-y), 1/p.Gamma)
}

// Table is a tone curve given by points (X[i], Y[i]), X strictly
// increasing from 0 to 1, Y non-decreasing in [0, 1]: a DNG
// ProfileToneCurve (tag 50940, pairs of float32 in [0, 1], first (0, 0),
// last (1, 1), DNG 1.6 §6.2 "ProfileToneCurve") or a fitted curve. It is
// interpolated by monotone cubic Hermite splines (Fritsch–Carlson slopes),
// so it is C¹ and keeps monotonicity; inputs above the last X give the
// last Y.
type Table struct {
	X, Y []float64
	m    []float64 // Hermite slopes at the points
	// seg[b] is the last point below the start of bucket b of
	// tableBuckets equal buckets of [X[0], X[n−1]] (where Apply starts
	// looking for x's segment), scale the buckets per unit of x.
	seg   []int32
	scale float64
}

// tableBuckets is the number of buckets of Table.seg.
const tableBuckets = 1024

// NewTable builds a Table from the points. Errors: fewer than 2 points,
// different lengths, X not strictly increasing or outside [0, 1], Y
// decreasing or outside [0, 1].
func NewTable(x, y []float64) (*Table, error) {
	n := len(x)
	if n < 2 || len(y) != n {
		return nil, fmt.Errorf("look: tone table of %d x and %d y values", len(x), len(y))
	}
	for i := range n {
		if x[i] < 0 || x[i] > 1 || y[i] < 0 || y[i] > 1 {
			return nil, fmt.Errorf("look: tone table point %d (%g, %g) outside [0,1]", i, x[i], y[i])
		}
		if i > 0 && (x[i] <= x[i-1] || y[i] < y[i-1]) {
			return nil, fmt.Errorf("look: tone table not increasing at point %d", i)
		}
	}
	t := &Table{X: append([]float64(nil), x...), Y: append([]float64(nil), y...)}
	t.m = hermiteSlopes(t.X, t.Y)
	t.scale = tableBuckets / (t.X[n-1] - t.X[0])
	t.seg = make([]int32, tableBuckets)
	i := 0
	for b := range t.seg {
		start := t.X[0] + float64(b)/t.scale
		for i+1 < n-1 && t.X[i+1] < start {
			i++
		}
		t.seg[b] = int32(i)
	}
	return t, nil
}

// ProfileToneCurve builds a Table from a DNG ProfileToneCurve tag value:
// interleaved (input, output) pairs.
func ProfileToneCurve(pairs []float32) (*Table, error) {
	if len(pairs)%2 != 0 {
		return nil, fmt.Errorf("look: ProfileToneCurve has %d values, want pairs", len(pairs))
	}
	x, y := make([]float64, len(pairs)/2), make([]float64, len(pairs)/2)
	for i := range x {
		x[i], y[i] = float64(pairs[2*i]), float64(pairs[2*i+1])
	}
	return NewTable(x, y)
}

// hermiteSlopes returns Fritsch–Carlson monotone slopes (F. N. Fritsch,
// R. E. Carlson, "Monotone piecewise cubic interpolation", SIAM J. Numer.
// Anal. 17(2), 1980): secant means, zero at flat segments or extrema,
// limited so that α²+β² ≤ 9.
func hermiteSlopes(x, y []float64) []float64 {
	n := len(x)
	d := make([]float64, n-1)
	for i := range d {
		d[i] = (y[i+1] - y[i]) / (x[i+1] - x[i])
	}
	m := make([]float64, n)
	m[0], m[n-1] = d[0], d[n-2]
	for i := 1; i < n-1; i++ {
		if d[i-1]*d[i] <= 0 {
			m[i] = 0
		} else {
			m[i] = (d[i-1] + d[i]) / 2
		}
	}
	for i := range d {
		if d[i] == 0 {
			m[i], m[i+1] = 0, 0
			continue
		}
		a, b := m[i]/d[i], m[i+1]/d[i]
		if s := a*a + b*b; s > 9 {
			t := 3 / math.Sqrt(s)
			m[i], m[i+1] = t*a*d[i], t*b*d[i]
		}
	}
	return m
}

// Apply implements Curve.
func (t *Table) Apply(x float64) float64 {
	n := len(t.X)
	if x <= t.X[0] {
		return t.Y[0]
	}
	if x >= t.X[n-1] {
		return t.Y[n-1]
	}
	// The segment: the last point below x (sort.SearchFloat64s(t.X, x)
	// − 1), from its bucket's.
	i := 0
	if t.seg != nil {
		i = int(t.seg[min(int((x-t.X[0])*t.scale), tableBuckets-1)])
		for i > 0 && t.X[i] >= x {
			i--
		}
	}
	for t.X[i+1] < x {
		i++
	}
	h := t.X[i+1] - t.X[i]
	s := (x - t.X[i]) / h
	s2, s3 := s*s, s*s*s
	return (2*s3-3*s2+1)*t.Y[i] + (s3-2*s2+s)*h*t.m[i] + (-2*s3+3*s2)*t.Y[i+1] + (s3-s2)*h*t.m[i+1]
}

// Inverse implements Curve by bisection on the monotone spline (to 1e-12
// in x).
func (t *Table) Inverse(y float64) float64 {
	n := len(t.X)
	if y <= t.Y[0] {
		return t.X[0]
	}
	if y >= t.Y[n-1] {
		lo := sort.SearchFloat64s(t.Y, t.Y[n-1])
		return t.X[lo]
	}
	lo, hi := t.X[0], t.X[n-1]
	for hi-lo > 1e-12 {
		mid := (lo + hi) / 2
		if t.Apply(mid) < y {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// RGBTone applies c to one linear RGB triple hue-preservingly, the DNG
// SDK's "RGB tone" method: the largest and smallest channels go through
// the curve, the middle one is placed between them at the same fraction
// as before, mid' = min' + (max'−min')·(mid−min)/(max−min), so the ratios
// that fix hue are kept. Negative inputs count as 0.
func RGBTone(c Curve, rgb [3]float64) [3]float64 {
	hi, mid, lo := order3(rgb)
	var out [3]float64
	vh, vl := c.Apply(max(rgb[hi], 0)), c.Apply(max(rgb[lo], 0))
	out[hi], out[lo] = vh, vl
	if d := rgb[hi] - rgb[lo]; d > 0 {
		out[mid] = vl + (vh-vl)*(rgb[mid]-rgb[lo])/d
	} else {
		out[mid] = vl
	}
	return out
}

// InverseRGBTone is the exact inverse of RGBTone for display-linear RGB in
// [0, 1]: the largest and smallest channels through c.Inverse, the middle
// one at the same fraction between them.
func InverseRGBTone(c Curve, rgb [3]float64) [3]float64 {
	hi, mid, lo := order3(rgb)
	var out [3]float64
	vh, vl := c.Inverse(clamp01(rgb[hi])), c.Inverse(clamp01(rgb[lo]))
	out[hi], out[lo] = vh, vl
	if d := rgb[hi] - rgb[lo]; d > 0 {
		out[mid] = vl + (vh-vl)*(rgb[mid]-rgb[lo])/d
	} else {
		out[mid] = vl
	}
	return out
}

// ApplyRGBTone applies RGBTone in place to every pixel of m (W×H×3 linear,
// scene-linear in, display-linear out).
func ApplyRGBTone(c Curve, m Image) {
	for i := 0; i+2 < len(m.Pix); i += 3 {
		o := RGBTone(c, [3]float64{float64(m.Pix[i]), float64(m.Pix[i+1]), float64(m.Pix[i+2])})
		m.Pix[i], m.Pix[i+1], m.Pix[i+2] = float32(o[0]), float32(o[1]), float32(o[2])
	}
}

// order3 returns the indices of the largest, middle and smallest of v
// (ties keep index order).
func order3(v [3]float64) (hi, mid, lo int) {
	hi, mid, lo = 0, 1, 2
	if v[mid] > v[hi] {
		hi, mid = mid, hi
	}
	if v[lo] > v[hi] {
		hi, lo = lo, hi
	}
	if v[lo] > v[mid] {
		mid, lo = lo, mid
	}
	return
}

func clamp01(v float64) float64 { return min(max(v, 0), 1) }
