package pipeline

// FlipFromEXIF returns LibRaw's flip code for an EXIF/TIFF Orientation value
// 1..8 (LibRaw's tiff parser: "50132467"[o&7]-'0'); 0 for anything else.
func FlipFromEXIF(o int) int {
	if o < 1 || o > 8 {
		return 0
	}
	return int("50132467"[o&7] - '0')
}

// Oriented is a read-only view of an image rotated and mirrored upright by
// LibRaw's flip code (libraw_image_sizes_t.flip), without copying it: bit 2
// transposes rows and columns, then bit 1 mirrors vertically and bit 0
// mirrors horizontally. This is dcraw's flip_index, which LibRaw uses when it
// writes a rotated image: output pixel (row r, column c) comes from source
// (r', c') where (r', c') = (c, r) when flip&4 and (r, c) otherwise, then
// r' = H-1-r' when flip&2 and c' = W-1-c' when flip&1 (W, H: the source
// size).
type Oriented struct {
	Src  Image
	Flip int
	// W, H are the output size: Src's, swapped when Flip&4.
	W, H int
}

// NewOriented returns the upright view of src for flip.
func NewOriented(src Image, flip int) Oriented {
	flip &= 7
	o := Oriented{Src: src, Flip: flip, W: src.W, H: src.H}
	if flip&4 != 0 {
		o.W, o.H = src.H, src.W
	}
	return o
}

// Row copies output row r (W pixels × 3 channels) into dst, which must hold
// W*3 values.
func (o Oriented) Row(r int, dst []float32) {
	src, flip := o.Src, o.Flip
	if flip == 0 {
		copy(dst[:o.W*3], src.Pix[r*src.W*3:(r+1)*src.W*3])
		return
	}
	for c := 0; c < o.W; c++ {
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
		copy(dst[c*3:c*3+3], src.Pix[i:i+3])
	}
}

// RowView returns output row r: a slice of the source when nothing is
// rotated or mirrored (read it, do not write it), else buf filled by Row.
func (o Oriented) RowView(r int, buf []float32) []float32 {
	if o.Flip == 0 {
		return o.Src.Pix[r*o.Src.W*3 : (r+1)*o.Src.W*3]
	}
	o.Row(r, buf)
	return buf
}

// Orient returns a new image holding the upright view of src for flip
// (see Oriented); for flip 0 it returns src itself.
func Orient(src Image, flip int) Image {
	if flip&7 == 0 {
		return src
	}
	o := NewOriented(src, flip)
	dst := Image{W: o.W, H: o.H, Pix: make([]float32, len(src.Pix))}
	for r := 0; r < o.H; r++ {
		o.Row(r, dst.Pix[r*o.W*3:(r+1)*o.W*3])
	}
	return dst
}
