package lens

import (
	"fmt"
	"math"

	"github.com/rawbatch/rawbatch/pipeline/dngopcode"
)

// ImplausibleVignetting is NodeGainsCompact's refusal of a profile whose
// gains are implausible somewhere in the frame (dngopcode.PlausibleGain:
// ≤ 0, not finite, or above dngopcode.MaxGain = 16, 4 EV); the image is
// left as it was.
type ImplausibleVignetting struct{ why string }

func (e *ImplausibleVignetting) Error() string { return e.why }

// checkGains looks at every gain of the node rows ys (gains: one
// row of w×3 float32 a node row, of a w×h image) and returns an
// *ImplausibleVignetting saying what and where ("gain ≤ 0 at the
// corners (from r = 0.80)", r the distance from the centre over the half
// diagonal) for the first implausible gain nearest the centre; nil when
// all are plausible.
func checkGains(gains []float32, ys []int, w, h int) error {
	return checkGainsN(gains, 3, ys, w, h)
}

// checkGainsN is checkGains for gains of gc values a
// pixel (1: one gain for the three channels; 3).
func checkGainsN(gains []float32, gc int, ys []int, w, h int) error {
	if plausibleAll(gains[:len(ys)*w*gc]) {
		return nil
	}
	cx, cy := float64(w-1)/2, float64(h-1)/2
	half := math.Hypot(cx, cy)
	if !(half > 0) {
		half = 1
	}
	why, rmin := "", math.Inf(1)
	for k, y := range ys {
		row := gains[k*w*gc : (k+1)*w*gc]
		for i, g := range row {
			if s := dngopcode.PlausibleGain(float64(g)); s != "" {
				if r := math.Hypot(float64(i/gc)-cx, float64(y)-cy) / half; r < rmin {
					why, rmin = s, r
				}
			}
		}
	}
	if why == "" {
		return nil
	}
	if rmin > 0.7 {
		return &ImplausibleVignetting{fmt.Sprintf("%s at the corners (from r = %.2f)", why, rmin)}
	}
	return &ImplausibleVignetting{fmt.Sprintf("%s from r = %.2f of the half diagonal", why, rmin)}
}

// plausibleAll reports whether every gain of g is plausible
// (dngopcode.PlausibleGain: > 0 and at most dngopcode.MaxGain, which
// rules out NaN and the infinities as well), as checkGainsN's first
// look: only when one is not are the gains looked at one by one.
func plausibleAll(g []float32) bool {
	for _, v := range g {
		if !(v > 0 && v <= dngopcode.MaxGain) {
			return false
		}
	}
	return true
}
