package colour

// QuantiseLinear16 sets dst[i] to src[i]·inv rounded half up to a 16-bit
// code: ⌊src[i]·inv + 0.5⌋ clamped to [0, 65535], NaN giving 0 (a linear
// quantiser for images stored as codes of a scale 1/inv, such as a
// streamed conversion's stored rows). Eight values at a time where the
// build and CPU allow (linear16_simd.go), with the same operations: the
// codes are the same either way. It panics if len(dst) < len(src).
func QuantiseLinear16(dst []uint16, src []float32, inv float32) {
	dst = dst[:len(src)]
	i := vecQuantiseLinear16(dst, src, inv)
	for ; i < len(src); i++ {
		x := src[i]*inv + 0.5
		if !(x >= 0) {
			x = 0
		} else if x > 65535 {
			x = 65535
		}
		dst[i] = uint16(int32(x))
	}
}

// DequantiseLinear16 sets dst[i] to float32(src[i])·scale, the value of
// code src[i] (QuantiseLinear16's inverse up to the rounding), eight at a
// time where the build and CPU allow (exact either way). It panics if
// len(dst) < len(src).
func DequantiseLinear16(dst []float32, src []uint16, scale float32) {
	dst = dst[:len(src)]
	i := vecDequantiseLinear16(dst, src, scale)
	for ; i < len(src); i++ {
		dst[i] = float32(src[i]) * scale
	}
}
