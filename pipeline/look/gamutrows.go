package look

// GamutPixel brings one linear RGB pixel p (the output space's, any values)
// into [0, 1]³ (NaN channels count as 0): channels below 0 (a colour beyond
// the output's primaries) are clipped to 0, as camera JPEGs do, and a
// colour then brighter than white in some channel is desaturated toward
// its own luminance Y = lum·p, p' = Y + t·(p − Y) with the largest t in
// [0, 1] that puts every channel at or below 1 (CompressGamut's move),
// so the brightest channel no longer clips alone and shifts the hue; Y ≥ 1
// gives white. Why not desaturate the negative side too (CompressGamut
// does): on the 6D DNG's saturated blue LEDs that raises the mean ΔE2000
// against the camera's preview from 1.83 (per-channel clip) to 3.48; this
// rule gives 1.78, and 2.63 over the whole file (clip 2.64).
func GamutPixel(p []float32, lum [3]float32) { GamutRows(p[:3:3], lum) }

// GamutRows applies GamutPixel to every pixel of pix (interleaved RGB), in
// place. The shrink factor t comes from the largest channel alone: for
// y < 1, (1−y)/(c−y) falls as c rises (also after float rounding), so its
// minimum over the channels above 1 is the largest channel's, and one
// division serves the pixel.
func GamutRows(pix []float32, lum [3]float32) {
	// Eight pixels at a time where the build and CPU allow
	// (gamutrows_simd.go: the same operations, the same values).
	gamutRowsScalar(pix[3*vecGamutRows(pix, lum):], lum)
}

// gamutRowsScalar is GamutRows one pixel at a time.
func gamutRowsScalar(pix []float32, lum [3]float32) {
	l0, l1, l2 := lum[0], lum[1], lum[2]
	for i := 0; i+2 < len(pix); i += 3 {
		p := pix[i : i+3 : i+3]
		r, g, b := p[0], p[1], p[2]
		if !(r > 0) {
			r = 0
		}
		if !(g > 0) {
			g = 0
		}
		if !(b > 0) {
			b = 0
		}
		y := l0*r + l1*g + l2*b
		if y >= 1 {
			p[0], p[1], p[2] = 1, 1, 1
			continue
		}
		if r <= 1 && g <= 1 && b <= 1 { // t = 1
			p[0], p[1], p[2] = min(y+(r-y), 1), min(y+(g-y), 1), min(y+(b-y), 1)
			continue
		}
		t := (1 - y) / (max(r, g, b) - y) // ≤ 1, as 1−y ≤ c−y
		p[0], p[1], p[2] = min(y+t*(r-y), 1), min(y+t*(g-y), 1), min(y+t*(b-y), 1)
	}
}
