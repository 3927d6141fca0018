package dngopcode

import (
	"fmt"

	"github.com/rawbatch/rawbatch/pipeline/warp"
)

// WarpParams are the parameters of WarpRectilinear (ID 1, DNG 1.4
// §6.2.2): a radial and tangential distortion model per plane that maps
// each pixel of the corrected image to the position in the uncorrected
// image it takes its value from. With (dx, dy) the pixel's offset from the
// optical centre divided by the distance from it to the farthest image
// corner, and r² = dx² + dy²:
//
//	f  = Kr[0] + Kr[1]·r² + Kr[2]·r⁴ + Kr[3]·r⁶
//	dx' = f·dx + Kt[0]·2·dx·dy + Kt[1]·(r² + 2·dx²)
//	dy' = f·dy + Kt[1]·2·dx·dy + Kt[0]·(r² + 2·dy²)
//
// and the source position is the centre plus (dx', dy') times that
// distance.
type WarpParams struct {
	// Planes holds one coefficient set for every plane, or one for all.
	Planes []WarpPlane
	// CX, CY: the optical centre as a fraction of the image's width and
	// height.
	CX, CY float64
}

// WarpPlane is one plane's coefficients: Kr radial, Kt tangential
// (dimensionless, in the normalised coordinates above).
type WarpPlane struct {
	Kr [4]float64
	Kt [2]float64
}

func parseWarp(b []byte) (*WarpParams, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("%d parameter bytes, too short", len(b))
	}
	r := &reader{b: b}
	n := r.u32()
	if n == 0 || n > maxWarpPlanes {
		return nil, fmt.Errorf("%d planes, want 1..%d", n, maxWarpPlanes)
	}
	if want := warpFixedParamBytes + int(n)*warpPlaneParamBytes; len(b) != want {
		return nil, fmt.Errorf("%d parameter bytes for %d planes, want %d", len(b), n, want)
	}
	w := &WarpParams{Planes: make([]WarpPlane, n)}
	for i := range w.Planes {
		p := &w.Planes[i]
		for k := range p.Kr {
			p.Kr[k] = r.f64()
		}
		p.Kt[0], p.Kt[1] = r.f64(), r.f64()
		if !finite(append(p.Kr[:], p.Kt[:]...)...) {
			return nil, fmt.Errorf("plane %d: coefficients not finite", i)
		}
	}
	w.CX, w.CY = r.f64(), r.f64()
	if !finite(w.CX, w.CY) {
		return nil, fmt.Errorf("centre not finite")
	}
	return w, nil
}

// Source returns the position in the uncorrected image (continuous image
// coordinates: pixel x covers [x, x+1)) that the corrected image's point
// (x, y) takes, for plane p's coefficients (the last set for planes
// beyond them), on an image placed by a.
func (w *WarpParams) Source(p int, x, y float64, a Area) (sx, sy float64) {
	return w.source(w.plane(p), geometryOf(a, w.CX, w.CY), x, y)
}

func (w *WarpParams) plane(p int) *WarpPlane {
	return &w.Planes[min(max(p, 0), len(w.Planes)-1)]
}

func (w *WarpParams) source(k *WarpPlane, g geometry, x, y float64) (sx, sy float64) {
	dx, dy := (x-g.cx)/g.m, (y-g.cy)/g.m
	r2 := dx*dx + dy*dy
	f := k.Kr[0] + r2*(k.Kr[1]+r2*(k.Kr[2]+r2*k.Kr[3]))
	tx := k.Kt[0]*2*dx*dy + k.Kt[1]*(r2+2*dx*dx)
	ty := k.Kt[1]*2*dx*dy + k.Kt[0]*(r2+2*dy*dy)
	return g.cx + g.m*(f*dx+tx), g.cy + g.m*(f*dy+ty)
}

// ApplyImage returns img (w×h pixels, c interleaved float32 planes)
// corrected: a new w×h×c image resampled through pipeline/warp (Keys
// bicubic, replicated border) at the positions Source gives, plane p with
// its own coefficients, the buffer placed in the image by a. img is not
// changed.
func (w *WarpParams) ApplyImage(img []float32, wd, h, c int, a Area) []float32 {
	g := geometryOf(a, w.CX, w.CY)
	return warp.Remap(img, wd, h, c, wd, h, func(y, ch int, sx, sy []float32) {
		k := w.plane(ch)
		py := float64(y+a.Top) + 0.5
		for i := range sx {
			x, yy := w.source(k, g, float64(i+a.Left)+0.5, py)
			// Back to the buffer's pixel-centre coordinates (centres at
			// integers) that warp.Remap takes.
			sx[i], sy[i] = float32(x-0.5-float64(a.Left)), float32(yy-0.5-float64(a.Top))
		}
	})
}
