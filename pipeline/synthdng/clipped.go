package synthdng

// The synthetic highlight DNG: ClippedW×ClippedH photosites,
// 14-bit (black ClippedBlack, tagged white ClippedWhite), the right half
// saturated at ClippedSaturation in every channel, a dim warm gradient on
// the left, as-shot multipliers 2.0 / 1.0 / 1.4 (AsShotNeutral 0.5, 1,
// 1/1.4).
const (
	ClippedW, ClippedH = 256, 128
	ClippedBlack       = 512
	ClippedWhite       = 16383
	ClippedSaturation  = 13500
)

// ClippedHalf returns the Spec of the highlight DNG, with 20 hot
// photosites at the tagged white in its left half when hot (they must not
// move the white level found in the data).
func ClippedHalf(hot bool) Spec {
	hotAt := map[[2]int]bool{}
	for i := range 20 {
		hotAt[[2]int{(i*37 + 11) % (ClippedW / 2), (i*53 + 7) % ClippedH}] = true
	}
	rng := float64(ClippedWhite - ClippedBlack)
	return Spec{
		Width: ClippedW, Height: ClippedH, BlackLevel: ClippedBlack, WhiteLevel: ClippedWhite, Orientation: 1,
		AsShotNeutral: [3]float64{0.5, 1, 1 / 1.4},
		Scene: func(x, y, c int) float64 {
			if x >= ClippedW/2 {
				return (ClippedSaturation - ClippedBlack) / rng
			}
			if hot && hotAt[[2]int{x, y}] {
				return 1
			}
			return []float64{0.12, 0.2, 0.1}[c] * (0.2 + float64(x)/float64(ClippedW/2))
		},
	}
}
