package colour

// MulRows multiplies every pixel of px (interleaved RGB float32, W×3 or
// any whole number of pixels) by m in place: (m[0][0]·r + m[0][1]·g +
// m[0][2]·b, …), each sum added left to right; eight pixels at a time
// where the build and CPU allow (matrixrows_simd.go, the same operations:
// the same values).
func MulRows(m *[3][3]float32, px []float32) {
	for i := 3 * vecMulRows(m, px); i+2 < len(px); i += 3 {
		r, g, b := px[i], px[i+1], px[i+2]
		px[i] = m[0][0]*r + m[0][1]*g + m[0][2]*b
		px[i+1] = m[1][0]*r + m[1][1]*g + m[1][2]*b
		px[i+2] = m[2][0]*r + m[2][1]*g + m[2][2]*b
	}
}

// ScaleRows multiplies every value of px by g in place (an exposure gain,
// say), eight at a time where the build and CPU allow (the same
// products).
func ScaleRows(px []float32, g float32) {
	for i := vecScaleRows(px, g); i < len(px); i++ {
		px[i] *= g
	}
}
