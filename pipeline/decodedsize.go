package pipeline

// This file is the one home of the half-size rule: what size the decode
// stage hands on, and what LibRaw itself allocates on the way.

// DecodedSize returns the width and height in pixels of the image the
// decode (demosaic) and crop stages hand on, before resize: the visible
// size fi.Width×fi.Height, and with s.HalfSize that size halved rounding
// up for every file, then with --crop camera the camera's picture area
// (crop.go: scaledCrop, halved with HalfSize; swapped when fi's size is
// the visible area rotated). LibRaw's half_size shrinks only mosaic (CFA)
// data; stageDemosaic halves the rest (linear DNG, Foveon, ...) after the
// copy, so --half-size means the same output size for every file. The
// estimate, the stage cache's entry size, the format limits, the dry run
// and the cache's size check all use it.
func DecodedSize(fi FileInfo, s Settings) (w, h int) {
	w, h = halvedIf(s.HalfSize, fi.Width, fi.Height)
	return plannedCropSize(fi.Header, s, w, h)
}

// libRawSize returns the width and height in pixels of the image LibRaw
// itself processes (its image buffer, the copy into Go memory): halved
// with s.HalfSize only for a CFA sensor, since LibRaw's half_size ignores
// other data (which then costs a full decode before stageDemosaic halves
// it).
func libRawSize(fi FileInfo, s Settings) (w, h int) {
	return halvedIf(s.HalfSize && fi.CFA, fi.Width, fi.Height)
}

// halvedIf returns w×h, halved rounding up (LibRaw's shrink, and halve's
// size) when half is true.
func halvedIf(half bool, w, h int) (int, int) {
	if half {
		return (w + 1) / 2, (h + 1) / 2
	}
	return w, h
}
