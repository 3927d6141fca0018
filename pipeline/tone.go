package pipeline

import (
	"fmt"
	"math"

	"github.com/rawbatch/rawbatch/pipeline/look"
)

// ToneCurve names a tone curve applied to scene-referred linear RGB.
type ToneCurve string

const (
	// ToneNone leaves scene-referred values as they are (values above 1
	// clip at the output).
	ToneNone ToneCurve = "none"
	// ToneDefault is the file's DNG ProfileToneCurve when it has one, else
	// look.DefaultCurve (soft toe, mid grey 0.18 → 0.39, long shoulder),
	// applied hue-preservingly (DNG "RGB tone") in the working space.
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

// toneCurve returns the curve the default tone applies to the file: its
// DNG ProfileToneCurve (tag 50940, as the header read it) when it has a
// valid one, else look.DefaultCurve; nil for ToneNone.
func (j *job) toneCurve() look.Curve {
	if j.settings.Tone != ToneDefault {
		return nil
	}
	if j.cameraLook != nil {
		return j.cameraLook.Curve
	}
	if j.hdr != nil && len(j.hdr.ProfileToneCurve) >= 4 {
		if t, err := look.ProfileToneCurve(j.hdr.ProfileToneCurve); err == nil {
			return t
		}
	}
	return look.DefaultCurve
}

// toneDefault is look.DefaultCurve: rawbatch's parametric curve
// f(x) = (1+K)·u/(u+K), u = x^1.6, mid grey 0.18 → 0.39 (docs/pipeline.md
// lists its control points).
func toneDefault(x float64) float64 { return look.DefaultCurve.Apply(x) }

// toneLUTSize is the number of intervals of the table through which a
// curve is applied; with linear interpolation the error is below 1e-5
// above x = 0.002 (the default curve's toe is flat below).
const toneLUTSize = 1 << 14

// toneLUT tabulates c on [0, 1] at toneLUTSize+1 points (and one more, a
// copy of the last, for the interpolation at x = 1).
func toneLUT(c look.Curve) []float32 {
	t := make([]float32, toneLUTSize+2)
	for i := range toneLUTSize + 1 {
		t[i] = float32(c.Apply(float64(i) / toneLUTSize))
	}
	t[toneLUTSize+1] = t[toneLUTSize]
	return t
}

// lutAt interpolates lut at v, clamping v to [0, 1] (NaN → 0).
func lutAt(lut []float32, v float32) float32 {
	if !(v > 0) {
		return lut[0]
	}
	if v >= 1 {
		return lut[toneLUTSize]
	}
	f := v * toneLUTSize
	k := int(f)
	fr := f - float32(k)
	return lut[k] + fr*(lut[k+1]-lut[k])
}

// applyTone applies curve c (nil: nothing) in place to every pixel of img
// by the DNG "RGB tone" method (look.RGBTone): the largest and smallest
// channel through c, the middle one at the same fraction between them,
// which keeps the hue. Inputs below 0 count as 0 and above 1 (the raw's
// clip level, the curve's white) as 1 for the curve; NaN becomes 0. The
// result is display-linear in [0, 1].
func applyTone(img Image, c look.Curve) {
	if c == nil {
		return
	}
	lut := toneLUT(c)
	img.parallel(func(pix []float32) { toneRows(lut, pix) })
}

// toneFinite bounds the channels toneRows works with: an infinite channel
// counts as ±toneFinite, so that the middle channel's fraction between the
// others stays a number (∞/∞ would be NaN) and the result stays in [0, 1].
const toneFinite = 1e30

// toneRows applies the curve tabulated in lut (toneLUT) in place to the
// pixels pix (interleaved RGB) as applyTone describes (an infinite channel
// counts as a very large one).
func toneRows(lut []float32, pix []float32) {
	for i := 0; i+2 < len(pix); i += 3 {
		p := pix[i : i+3 : i+3]
		for k, v := range p {
			if !(v >= -toneFinite && v <= toneFinite) { // NaN or beyond ±toneFinite
				switch {
				case v > 0:
					p[k] = toneFinite
				case v < 0:
					p[k] = -toneFinite
				default:
					p[k] = 0
				}
			}
		}
		hi, mid, lo := 0, 1, 2
		if p[hi] < p[mid] {
			hi, mid = mid, hi
		}
		if p[mid] < p[lo] {
			mid, lo = lo, mid
		}
		if p[hi] < p[mid] {
			hi, mid = mid, hi
		}
		vh, vl := lutAt(lut, p[hi]), lutAt(lut, p[lo])
		vm := vl
		if d := p[hi] - p[lo]; d > 0 {
			vm = vl + (vh-vl)*(p[mid]-p[lo])/d
		}
		p[hi], p[mid], p[lo] = vh, vm, vl
	}
}

// exposureGain returns 2^ev, the linear gain of an exposure change of ev EV.
func exposureGain(ev float64) float32 { return float32(math.Exp2(ev)) }
