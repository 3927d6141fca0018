package look

// toneLUTSize is the number of intervals of the table through which a
// curve is applied; with linear interpolation the error is below 1e-5
// above x = 0.002 (the default curve's toe is flat below).
const toneLUTSize = 1 << 14

// ToneLUT tabulates curve c on [0, 1] for ToneRows at toneLUTSize+1
// points (and one more, a copy of the last, for the interpolation at
// x = 1).
func ToneLUT(c Curve) []float32 {
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
