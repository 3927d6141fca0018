package pipeline

// FlipFromEXIF returns LibRaw's flip code for an EXIF/TIFF Orientation value
// 1..8 (LibRaw's tiff parser: "50132467"[o&7]-'0'); 0 for anything else.
func FlipFromEXIF(o int) int {
	if o < 1 || o > 8 {
		return 0
	}
	return int("50132467"[o&7] - '0')
}

// Orient returns src rotated and mirrored upright according to LibRaw's flip
// code (libraw_image_sizes_t.flip): bit 2 transposes rows and columns, then
// bit 1 mirrors vertically and bit 0 mirrors horizontally. This is dcraw's
// flip_index, which LibRaw uses when it writes a rotated image: output pixel
// (row r, column c) comes from source (r', c') where (r', c') = (c, r) when
// flip&4 and (r, c) otherwise, then r' = H-1-r' when flip&2 and
// c' = W-1-c' when flip&1 (W, H: the source size).
//
// For flip 0 it returns src itself; otherwise it allocates a new image of
// the output size (H×W when flip&4).
func Orient(src Image, flip int) Image {
	flip &= 7
	if flip == 0 {
		return src
	}
	ow, oh := src.W, src.H
	if flip&4 != 0 {
		ow, oh = src.H, src.W
	}
	dst := Image{W: ow, H: oh, Pix: make([]float32, len(src.Pix))}
	for r := 0; r < oh; r++ {
		out := dst.Pix[r*ow*3 : (r+1)*ow*3]
		for c := 0; c < ow; c++ {
			sr, sc := r, c
			if flip&4 != 0 {
				sr, sc = c, r
			}
			if flip&2 != 0 {
				sr = src.H - 1 - sr
			}
			if flip&1 != 0 {
				sc = src.W - 1 - sc
			}
			i := (sr*src.W + sc) * 3
			copy(out[c*3:c*3+3], src.Pix[i:i+3])
		}
	}
	return dst
}
