package pipeline

// gamutInto brings one linear RGB pixel p (the output space's, any values)
// into [0, 1]³ by desaturating it toward its own luminance Y = lum·p, as
// look.CompressGamut does: p' = Y + t·(p − Y) with the largest t in [0, 1]
// that puts every channel inside, so hue (in linear RGB about the neutral)
// and luminance are kept where a per-channel clip would shift both. Y ≤ 0
// gives black, Y ≥ 1 white; NaN channels count as 0.
func gamutInto(p []float32, lum [3]float32) {
	r, g, b := p[0], p[1], p[2]
	if r != r {
		r = 0
	}
	if g != g {
		g = 0
	}
	if b != b {
		b = 0
	}
	y := lum[0]*r + lum[1]*g + lum[2]*b
	switch {
	case !(y > 0):
		p[0], p[1], p[2] = 0, 0, 0
		return
	case y >= 1:
		p[0], p[1], p[2] = 1, 1, 1
		return
	}
	t := float32(1)
	for _, c := range [3]float32{r, g, b} {
		if c < 0 {
			t = min(t, y/(y-c))
		} else if c > 1 {
			t = min(t, (1-y)/(c-y))
		}
	}
	for k, c := range [3]float32{r, g, b} {
		p[k] = min(max(y+t*(c-y), 0), 1)
	}
}

// compressGamut reports whether the output-space stage desaturates
// out-of-gamut colours (gamutInto) instead of clipping each channel: with
// a tone curve; --tone none keeps the per-channel clip of the
// scene-referred reference rendering (the dcraw_emu comparisons).
func (s Settings) compressGamut() bool { return s.Tone != ToneNone }
