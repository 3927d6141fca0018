package pipeline

import "strings"

// inParens adds extra to s in parentheses, inside the parenthesis s already
// ends with if it does ("a (b)" + "c" → "a (b; c)", "a" + "c" → "a (c)"),
// so that the white balance's messages never stack parentheses.
func inParens(s, extra string) string {
	if strings.HasSuffix(s, ")") {
		return s[:len(s)-1] + "; " + extra + ")"
	}
	return s + " (" + extra + ")"
}

// daylightReason is the reason of the white balance highlight.ChooseWB
// falls back to last, daylight: why (the as-shot multipliers were not
// used), and what the daylight white came from: the camera's colour
// matrix, or, where LibRaw has none (hasMatrix false), camera RGB taken as
// sRGB (the identity matrix the conversion uses); and why there was no
// estimate from the picture: no mosaic data to estimate it from
// (estimated false), or none found in it.
func daylightReason(why string, hasMatrix, estimated bool) string {
	s := "daylight from the colour matrix: "
	if !hasMatrix {
		s = "daylight for camera RGB taken as sRGB (no colour matrix for this camera): "
	}
	s += why
	if estimated {
		return s + ", and the picture gives no estimate"
	}
	return s + ", and there is no mosaic data to estimate it from"
}
