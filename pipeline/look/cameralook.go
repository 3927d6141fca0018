package look

import "github.com/rawbatch/rawbatch/pipeline/colour"

// Into returns the camera-to-working matrix m (3×4: camera RGB and a
// fourth channel to the working space) with the look applied: diag(Gains)
// on camera RGB first, the look's colour matrix (MatrixIn working) last.
func (l CameraLook) Into(m [3][4]float64, working *colour.Space) [3][4]float64 {
	for i := range 3 {
		for k := range 3 {
			m[i][k] *= l.Gains[k]
		}
	}
	c := l.MatrixIn(working)
	var out [3][4]float64
	for i := range 3 {
		for k := range 4 {
			out[i][k] = c[i][0]*m[0][k] + c[i][1]*m[1][k] + c[i][2]*m[2][k]
		}
	}
	return out
}

// SaturateRows scales the chroma of the pixels pix (interleaved linear
// RGB, float32) about their luminance by factor k, in place:
// s' = Y + k·(s − Y), Y = lum·s. A linear map, the same in every RGB space
// that shares white and luminance, so applied in the working space it
// equals the fit's saturation (done in the preview's space).
func SaturateRows(pix []float32, k float32, lum [3]float32) {
	for i := 0; i+2 < len(pix); i += 3 {
		y := lum[0]*pix[i] + lum[1]*pix[i+1] + lum[2]*pix[i+2]
		for c := range 3 {
			pix[i+c] = y + k*(pix[i+c]-y)
		}
	}
}
