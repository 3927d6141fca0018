package pipeline

import (
	"runtime"
	"runtime/debug"

	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
	"github.com/rawbatch/rawbatch/pipeline/internal/par"
	"github.com/rawbatch/rawbatch/pipeline/internal/thp"
)

// Image is an RGB image of W×H pixels held as interleaved float32 samples:
// Pix[(y*W+x)*3+c] is channel c (R, G, B) of the pixel in column x, row y,
// rows top to bottom. What the numbers mean (scene-referred linear camera
// RGB, linear working space, linear output space) depends on the stage that
// produced it; 1.0 is the white level of the decode.
type Image struct {
	W, H int
	Pix  []float32
}

// NewImage allocates a black W×H×3 float32 image (12 bytes per pixel).
func NewImage(w, h int) Image { return Image{W: w, H: h, Pix: thp.Floats(w * h * 3)} }

// parallel calls f on disjoint runs of whole rows of m.Pix that together
// cover it, on up to GOMAXPROCS goroutines (par.Rows), for per-sample
// operations.
func (m Image) parallel(f func(pix []float32)) {
	row := m.W * 3
	par.Rows(m.H, func(lo, hi int) { f(m.Pix[lo*row : hi*row]) })
}

// Bytes returns the size of the pixel buffer in bytes.
func (m Image) Bytes() int64 { return int64(len(m.Pix)) * 4 }

// At returns the three channels of pixel (x, y).
func (m Image) At(x, y int) [3]float32 {
	i := (y*m.W + x) * 3
	return [3]float32{m.Pix[i], m.Pix[i+1], m.Pix[i+2]}
}

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
	dst := Image{W: o.W, H: o.H, Pix: thp.Floats(len(src.Pix))}
	for r := 0; r < o.H; r++ {
		o.Row(r, dst.Pix[r*o.W*3:(r+1)*o.W*3])
	}
	return dst
}

// minGiveBack is the smallest float image, in bytes (12 a pixel), whose
// garbage is given back to the system between steps (giveBack): below it
// a collection and a scavenge (milliseconds, and the next file's heap
// faulted in again) cost more than the memory they return, and a worker
// converting many small files would spend most of its time on them.
const minGiveBack = 4 << 20

// giveBack returns the garbage's pages to the system (debug.FreeOSMemory:
// a collection, then a scavenge) for a file whose image has px pixels,
// when its float image is at least minGiveBack bytes: the steps that let
// a large buffer go call it before the next one allocates, so that C
// allocations (LibRaw's, libjpeg's), which cannot reuse Go's free pages,
// and the peak follow the estimate.
func giveBack(px int64) {
	if 12*px >= minGiveBack {
		giveBackHook()
		debug.FreeOSMemory()
	}
}

// giveBackHook is called each time giveBack returns the garbage's pages
// (tests).
var giveBackHook = func() {}

// releaseVariant is called between a file's variants (runPlan, and the
// streamed variants' runner): it collects the finished variant's buffers
// before the next one allocates, so memory follows the estimate (they hold
// no pointers: cheap), and returns to the system the C memory its encoder
// (libwebp) freed to glibc, whose pages Go's next buffers cannot take
// over (a 1 MP file's six variants measured 1.20–1.25× their estimate
// without it).
func releaseVariant() {
	runtime.GC()
	libraw.ReleaseFreeMemory()
}

// giveBack is giveBack for the file j decodes (LibRaw's size of it).
func (j *job) giveBack() { giveBack(int64(j.info.Width) * int64(j.info.Height)) }
