package pipeline

import (
	"fmt"
	"math"
)

// ToneCurve names a tone curve applied to scene-referred linear RGB.
type ToneCurve string

const (
	// ToneNone leaves scene-referred values as they are (values above 1
	// clip at the output).
	ToneNone ToneCurve = "none"
	// ToneDefault is a filmic curve with a soft highlight shoulder and a
	// gentle toe; see toneDefault.
	ToneDefault ToneCurve = "default"
)

// ParseToneCurve accepts "default" and "none".
func ParseToneCurve(s string) (ToneCurve, error) {
	switch ToneCurve(s) {
	case ToneDefault, ToneNone:
		return ToneCurve(s), nil
	}
	return "", fmt.Errorf("unknown tone curve %q (want default or none)", s)
}

// narkowicz is the rational fit of the ACES RRT+ODT filmic curve by
// Krzysztof Narkowicz ("ACES Filmic Tone Mapping Curve", 2016):
// f(x) = x(ax+b) / (x(cx+d)+e) with a=2.51, b=0.03, c=2.43, d=0.59, e=0.14.
func narkowicz(x float64) float64 {
	const a, b, c, d, e = 2.51, 0.03, 2.43, 0.59, 0.14
	return x * (a*x + b) / (x*(c*x+d) + e)
}

// toneWhite is f(1): the default curve is normalised so that linear 1.0,
// the decode's white level, maps to display white.
var toneWhite = narkowicz(1)

// toneDefault maps a scene-referred linear value to a display-referred
// linear value in [0, 1]: min(1, f(x)/f(1)) with f the Narkowicz curve, so
// 0 → 0 and 1 → 1, a toe (slope (b/e)/f(1) ≈ 0.27 at 0), a mid-tone lift
// (0.125, 3 EV under white, maps to 0.21) and a shoulder that reaches white
// at the white level. It is applied per channel in the linear
// working space.
func toneDefault(x float64) float64 {
	if x <= 0 {
		return 0
	}
	if x >= 1 {
		return 1
	}
	return narkowicz(x) / toneWhite
}

// toneLUTSize is the number of intervals of the table used to apply the
// default curve; with linear interpolation the error is below 2e-6.
const toneLUTSize = 1 << 14

var toneLUT = func() []float32 {
	t := make([]float32, toneLUTSize+2)
	for i := range t {
		t[i] = float32(toneDefault(float64(i) / toneLUTSize))
	}
	return t
}()

// applyTone applies curve c in place to every sample of img.
func applyTone(img Image, c ToneCurve) {
	if c != ToneDefault {
		return
	}
	img.parallel(func(pix []float32) {
		for i, v := range pix {
			if !(v > 0) { // also NaN
				pix[i] = 0
				continue
			}
			if v >= 1 {
				pix[i] = 1
				continue
			}
			f := v * toneLUTSize
			k := int(f)
			fr := f - float32(k)
			pix[i] = toneLUT[k] + fr*(toneLUT[k+1]-toneLUT[k])
		}
	})
}

// exposureGain returns 2^ev, the linear gain of an exposure change of ev EV.
func exposureGain(ev float64) float32 { return float32(math.Exp2(ev)) }
