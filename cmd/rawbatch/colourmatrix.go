package main

// colourMatrixLine is inspect's "colour:" line: whether LibRaw has a
// colour matrix for the camera.
func colourMatrixLine(known bool) string {
	if known {
		return "camera colour matrix known to LibRaw"
	}
	return "no colour matrix for this camera in LibRaw: converted colours will be wrong (identity matrix)"
}
