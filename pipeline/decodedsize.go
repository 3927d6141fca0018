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

// halfSizeTier reports whether the file described by fi is decoded at half
// size for the variants vs under s (the half-size tier, s.HalfSizeTier
// auto, without --half-size): when every variant has a size in pixels
// (size=N or WxH; a percentage scales the decoded image, so it would
// shrink with it) that fits within half the full decoded picture
// (DecodedSize without HalfSize, after the camera crop): each variant's
// long edge at most half the picture's. Such a variant is made from a
// quarter of the pixels at its own size: LibRaw's half_size decode (each
// 2×2 CFA block one pixel, the two greens averaged, no demosaic) is the
// superpixel decode, and every later stage (crop, opcodes, lens, denoise,
// capture sharpening) already follows HalfSize. A file with its own crop
// (Settings.Edit.Crop) is not taken: its variants are sized from the cut
// picture, which half the decode could leave smaller than they ask.
func halfSizeTier(fi FileInfo, s Settings, vs []Variant) bool {
	if s.HalfSize || s.HalfSizeTier != "auto" || !sizedInPixels(vs) || s.Edit.Crop != nil {
		return false
	}
	fw, fh := plannedCropSize(fi.Header, s, fi.Width, fi.Height)
	long := max(fw, fh)
	if long <= 0 {
		return false
	}
	for _, v := range vs {
		w, h := v.Fit(fw, fh)
		if 2*max(w, h) > long {
			return false
		}
	}
	return true
}

// tierPossible reports whether the half-size tier may take some file
// under s: it is on (auto), the decode is not at half size already, and
// every variant has a size in pixels (halfSizeTier's conditions that do
// not depend on the file). Where it cannot, auto makes the pictures of off.
func tierPossible(s Settings) bool {
	return !s.HalfSize && s.HalfSizeTier == "auto" && sizedInPixels(s.OutputVariants())
}

// sizedInPixels reports whether there are variants and every one has a
// size in pixels (size=N or WxH; a percentage scales the decoded image,
// so it would shrink with it).
func sizedInPixels(vs []Variant) bool {
	for _, v := range vs {
		if v.Percent > 0 || !v.hasSize() {
			return false
		}
	}
	return len(vs) > 0
}

// WithHalfSizeTier returns s with HalfSize set when the half-size tier
// takes the file described by fi for the variants vs (halfSizeTier), and
// whether it did: the settings the file is converted, planned and
// estimated with.
func WithHalfSizeTier(fi FileInfo, s Settings, vs []Variant) (Settings, bool) {
	if halfSizeTier(fi, s, vs) {
		s.HalfSize = true
		return s, true
	}
	return s, false
}
