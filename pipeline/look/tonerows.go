package look

import (
	"math"
	"sync"
)

// toneLUTSize is the number of intervals of the table through which a
// curve is applied; with linear interpolation the error is below 1e-5
// above x = 0.002 (the default curve's toe is flat below).
const toneLUTSize = 1 << 14

// ToneLUT tabulates curve c on [0, 1] for ToneRows at toneLUTSize+1
// points (and one more, a copy of the last, for the interpolation at
// x = 1). The table of DefaultCurve, which most files use, is made once
// per process and shared: callers only read a table.
func ToneLUT(c Curve) []float32 {
	if p, ok := c.(Parametric); ok && p == DefaultCurve {
		return defaultLUT()
	}
	return toneLUT(c)
}

// defaultLUT is DefaultCurve's table (16386 evaluations of the curve: a
// tiny file's whole tone stage costs less than making it).
var defaultLUT = sync.OnceValue(func() []float32 { return toneLUT(DefaultCurve) })

// toneLUT is ToneLUT making the table.
func toneLUT(c Curve) []float32 {
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

// toneFinite bounds the channels ToneRows works with: an infinite channel
// counts as ±toneFinite, so that the middle channel's fraction between the
// others stays a number (∞/∞ would be NaN) and the result stays in [0, 1].
const toneFinite = 1e30

// ToneRows applies the curve tabulated in lut (ToneLUT) in place to the
// pixels pix (interleaved RGB, float32) by the DNG "RGB tone" method
// (RGBTone): the largest and smallest channel through the curve, the
// middle one at the same fraction between them, which keeps the hue.
// Inputs below 0 count as 0 and above 1 as 1 for the curve, NaN as 0, an
// infinite channel as a very large one; the result is in [0, 1].
func ToneRows(lut []float32, pix []float32) {
	// Eight pixels at a time where the build and CPU allow
	// (tonerows_simd.go: the same operations, the same values).
	toneRowsScalar(lut, pix[3*vecToneRows(lut, pix):])
}

// toneRowsScalar is ToneRows one pixel at a time.
func toneRowsScalar(lut []float32, pix []float32) {
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
		hi, mid, lo := order3f(p)
		placeTone(p, hi, mid, lo, lutAt(lut, p[hi]), lutAt(lut, p[lo]))
	}
}

// toneExactEnds is whether interpolating lut at its ends gives the ends,
// as lutAt takes them for v ≤ 0 and v ≥ 1: lut[0] + ±0·(lut[1]−lut[0])
// is lut[0], and lut[toneLUTSize] + 0·0 is lut[toneLUTSize], when the
// differences are finite and neither end is −0 (−0 + 0 is +0). Then the
// vector passes look such v up at the table's first or last interval,
// fraction 0, and need not treat them apart.
func toneExactEnds(lut []float32) bool {
	a, b, c, d := lut[0], lut[1], lut[toneLUTSize], lut[toneLUTSize+1]
	finite := func(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }
	negZero := func(x float32) bool { return x == 0 && math.Signbit(float64(x)) }
	return finite(b-a) && d-c == 0 && !negZero(a) && !negZero(c)
}

// HDRTone is the HDR rendition of a tone curve T: the curve itself up to
// its knee, then linear light with the knee's gain, so that shadows and
// mid-tones look as in the SDR rendition and the light the shoulder
// compresses is kept above SDR white (1.0):
//
//	H(x) = T(x) for 0 ≤ x ≤ Knee,  H(x) = Gain·x above,  Gain = T(Knee)/Knee,
//
// Knee the x in [0.18, 1] where T(x)/x is largest: where T's log-log
// slope falls to 1 when that is above mid grey (0.194 for DefaultCurve,
// so H is C¹ there), mid grey when the curve is already compressing
// there. Above the knee T(x) ≤ H(x), so the HDR rendition is nowhere
// darker than the SDR one. H is applied by the DNG "RGB tone" method as
// ToneRows applies T.
type HDRTone struct {
	lut        []float32
	Knee, Gain float32
}

// hdrKneeSteps is the number of intervals of [0.18, 1] on which NewHDRTone
// looks for the knee (steps of 2·10⁻⁴).
const hdrKneeSteps = 4096

// NewHDRTone returns the HDR rendition of c.
func NewHDRTone(c Curve) HDRTone {
	const lo, hi = 0.18, 1.0
	knee, gain := lo, c.Apply(lo)/lo
	for i := 1; i <= hdrKneeSteps; i++ {
		x := lo + (hi-lo)*float64(i)/hdrKneeSteps
		if g := c.Apply(x) / x; g > gain {
			knee, gain = x, g
		}
	}
	return HDRTone{lut: ToneLUT(c), Knee: float32(knee), Gain: float32(gain)}
}

// LUT is T tabulated for ToneRows (ToneLUT of the curve), which the SDR
// rendition of the same image can share.
func (h HDRTone) LUT() []float32 { return h.lut }

// at returns H(v) for v ≥ 0.
func (h HDRTone) at(v float32) float32 {
	if v > h.Knee {
		return h.Gain * v
	}
	return lutAt(h.lut, v)
}

// Rows applies H in place to pix (interleaved RGB, float32, scene-referred
// linear in, display-referred linear relative to SDR white out, not
// clipped above): the largest and smallest channel through H, the middle
// one at the same fraction between them. Negative channels and NaN count
// as 0; a pixel whose channels are all above the knee is only scaled by
// Gain.
func (h HDRTone) Rows(pix []float32) {
	for i := 0; i+2 < len(pix); i += 3 {
		p := pix[i : i+3 : i+3]
		for k, v := range p {
			if !(v > 0) {
				p[k] = 0
			}
		}
		hi, mid, lo := order3f(p)
		placeTone(p, hi, mid, lo, h.at(p[hi]), h.at(p[lo]))
	}
}

// order3f returns the indices of the largest, middle and smallest channel
// of the pixel p.
func order3f(p []float32) (hi, mid, lo int) {
	hi, mid, lo = 0, 1, 2
	if p[hi] < p[mid] {
		hi, mid = mid, hi
	}
	if p[mid] < p[lo] {
		mid, lo = lo, mid
	}
	if p[hi] < p[mid] {
		hi, mid = mid, hi
	}
	return
}

// placeTone writes the "RGB tone" result into p: vh and vl, the curve's
// values of the largest and smallest channel, and the middle channel at
// its former fraction between them.
func placeTone(p []float32, hi, mid, lo int, vh, vl float32) {
	vm := vl
	if d := p[hi] - p[lo]; d > 0 {
		vm = vl + (vh-vl)*(p[mid]-p[lo])/d
	}
	p[hi], p[mid], p[lo] = vh, vm, vl
}
