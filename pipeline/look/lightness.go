package look

import "math"

// lightness is CIE 1976 L* of a relative luminance y (white = 1; CIE
// 15:2004 §8.2.1: 116·y^(1/3) − 16 above (6/29)³, linear below), the
// scale in which the camera look's tone fit averages and regresses, as
// its score (ΔE2000) measures lightness differences there.
func lightness(y float64) float64 {
	const eps = 216.0 / 24389
	if y > eps {
		return 116*math.Cbrt(y) - 16
	}
	return y * 24389 / 27
}

// lightnessInv is the inverse of lightness: the relative luminance of L*.
func lightnessInv(l float64) float64 {
	if l > 8 {
		f := (l + 16) / 116
		return f * f * f
	}
	return l * 27 / 24389
}
