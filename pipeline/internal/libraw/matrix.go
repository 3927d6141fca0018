package libraw

// HasColourMatrix reports whether LibRaw has colour data for the camera:
// false when its camera-to-sRGB matrix (color.rgb_cam) is the identity
// with a zero fourth column, which is what LibRaw leaves when neither the
// file (DNG ColorMatrix) nor its own table (adobe_coeff) gives a matrix.
// Camera RGB is then taken as sRGB and the colours are wrong.
func (in Info) HasColourMatrix() bool {
	for i := range 3 {
		for j := range 4 {
			want := 0.0
			if i == j {
				want = 1
			}
			if d := in.RGBCam[i][j] - want; d > 1e-6 || d < -1e-6 {
				return true
			}
		}
	}
	return false
}
