package encode

import (
	"image"
)

// RowsRGB8 is an opaque 8-bit RGB image of W×H pixels delivered one row at
// a time: Row(y, dst) fills dst (3·W bytes, R G B interleaved) with row y.
// Encoders ask for the rows in order, 0 to H−1, each once, so a producer
// may compute them as they are asked for (a streamed, fused render).
type RowsRGB8 struct {
	W, H int
	Row  func(y int, dst []byte)
	// Bands, when its Fill is set, makes the same rows a band at a time:
	// the JPEG encoder then runs on its own goroutine beside the caller's,
	// which fills the bands (overlap.go), and Row is not called.
	Bands Bands
}

// JPEGOptions are the settings of a JPEG encode.
type JPEGOptions struct {
	// Quality on the libjpeg/IJG scale, 1..100.
	Quality int
	// Subsampling of the chroma planes: "444", "422", "420", or "" for
	// the default by quality (JPEGSubsamplingFor).
	Subsampling string
}

// ImageRows8 returns img as 8-bit RGB rows: *image.RGBA and
// *image.NRGBA that are opaque are read in place; *image.NRGBA64 and
// *image.RGBA64 are rounded to 8 bits (round(v·255/65535)) and other types
// drawn into an *image.RGBA first (rgb8Source). Translucent pixels are
// composited over black (JPEG has no alpha). Rows are counted from the top
// of img's bounds.
func ImageRows8(img image.Image) RowsRGB8 {
	b := img.Bounds()
	var pix []byte
	var stride int
	switch m := rgb8Source(img).(type) {
	case *image.RGBA:
		pix, stride = m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], m.Stride
	case *image.NRGBA:
		pix, stride = m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], m.Stride
	}
	w := b.Dx()
	return RowsRGB8{W: w, H: b.Dy(), Row: func(y int, dst []byte) {
		s := pix[y*stride : y*stride+4*w]
		for x := range w {
			dst[3*x], dst[3*x+1], dst[3*x+2] = s[4*x], s[4*x+1], s[4*x+2]
		}
	}}
}
