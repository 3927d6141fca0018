package dngopcode

import (
	"fmt"
	"math"

	"github.com/rawbatch/rawbatch/pipeline/internal/par"
)

// VignetteParams are the parameters of FixVignetteRadial (ID 3, DNG 1.4
// §6.2.2): every sample of every plane is multiplied by
//
//	g(r) = 1 + K[0]·r² + K[1]·r⁴ + K[2]·r⁶ + K[3]·r⁸ + K[4]·r¹⁰,
//
// r being the distance from the optical centre divided by the distance
// from it to the farthest image corner (0 at the centre, 1 there).
type VignetteParams struct {
	K [5]float64
	// CX, CY: the optical centre as a fraction of the image's width and
	// height (0.5, 0.5 is the middle).
	CX, CY float64
}

func parseVignette(b []byte) (*VignetteParams, error) {
	if len(b) != vignetteParamBytes {
		return nil, fmt.Errorf("%d parameter bytes, want %d", len(b), vignetteParamBytes)
	}
	r := &reader{b: b}
	v := &VignetteParams{}
	for i := range v.K {
		v.K[i] = r.f64()
	}
	v.CX, v.CY = r.f64(), r.f64()
	if !finite(append(v.K[:], v.CX, v.CY)...) {
		return nil, fmt.Errorf("coefficients or centre not finite")
	}
	return v, nil
}

// geometry is the optical centre and the normalising radius of an opcode
// on an image of a.Width × a.Height pixels, in continuous image
// coordinates (pixel (x, y) covers [x, x+1) × [y, y+1), its centre at
// x+0.5, y+0.5), as DNG §6.2.2 defines them for WarpRectilinear and
// FixVignetteRadial.
type geometry struct {
	cx, cy, m float64
}

func geometryOf(a Area, cx, cy float64) geometry {
	g := geometry{cx: cx * float64(a.Width), cy: cy * float64(a.Height)}
	dx := math.Max(g.cx, float64(a.Width)-g.cx)
	dy := math.Max(g.cy, float64(a.Height)-g.cy)
	g.m = math.Hypot(dx, dy)
	if !(g.m > 0) {
		g.m = 1
	}
	return g
}

// Gain returns g(r) at the normalised radius r (0 centre, 1 the farthest
// corner).
func (v *VignetteParams) Gain(r float64) float64 {
	r2 := r * r
	g, p := 1.0, r2
	for _, k := range v.K {
		g += k * p
		p *= r2
	}
	return g
}

// ApplyImage multiplies every sample of img (w×h pixels, c interleaved
// float32 planes, in place) by the gain at its pixel's centre, the buffer
// placed in the image by a. Values are not clipped.
func (v *VignetteParams) ApplyImage(img []float32, w, h, c int, a Area) {
	geo := geometryOf(a, v.CX, v.CY)
	par.Rows(h, func(lo, hi int) {
		for y := lo; y < hi; y++ {
			dy := (float64(y+a.Top) + 0.5 - geo.cy) / geo.m
			row := img[y*w*c : (y+1)*w*c]
			for x := range w {
				dx := (float64(x+a.Left) + 0.5 - geo.cx) / geo.m
				g := float32(v.Gain(math.Hypot(dx, dy)))
				for p := range c {
					row[x*c+p] *= g
				}
			}
		}
	})
}

// MaxGain is the largest vignetting gain rawbatch applies: 16 (4 EV). A
// real lens's corners need at most about 3 EV at full aperture (the EF
// 24-105 at 24 mm f/4, lensfun's profile: gain 6.3); more, or a gain ≤ 0,
// NaN or Inf, is a broken profile or opcode, which would blow the corners
// out or turn the frame black outside a circle.
const MaxGain = 16

// PlausibleGain says why the gain g is not one to apply ("" when it is):
// ≤ 0, not finite, or above MaxGain.
func PlausibleGain(g float64) string {
	switch {
	case math.IsNaN(g) || math.IsInf(g, 0):
		return "gain not finite"
	case g <= 0:
		return "gain ≤ 0"
	case g > MaxGain:
		return fmt.Sprintf("gain above %d (4 EV)", MaxGain)
	}
	return ""
}

// CheckGains returns an error saying where g(r) is implausible
// (PlausibleGain) for r from 0 to 1 (the farthest corner of the frame,
// in 1/4096 steps): "gain ≤ 0 at the corners (from r = 0.45)"; nil when it
// is plausible everywhere. The polynomial is smooth and of degree 10, so
// the steps do not miss a dip below 0 of any extent that matters.
func (v *VignetteParams) CheckGains() error {
	const steps = 4096
	for i := 0; i <= steps; i++ {
		r := float64(i) / steps
		if why := PlausibleGain(v.Gain(r)); why != "" {
			where := fmt.Sprintf("from r = %.2f of the farthest corner", r)
			if r > 0.7 {
				where = fmt.Sprintf("at the corners (from r = %.2f)", r)
			}
			return fmt.Errorf("%s %s", why, where)
		}
	}
	return nil
}
