package encode

import (
	"errors"
	"image"
	"io"
)

// RowsRGB8 is an opaque 8-bit RGB image of W×H pixels delivered one row at
// a time: Row(y, dst) fills dst (3·W bytes, R G B interleaved) with row y.
// Encoders ask for the rows in order, 0 to H−1, each once, so a producer
// may compute them as they are asked for (a streamed, fused render).
type RowsRGB8 struct {
	W, H int
	Row  func(y int, dst []byte)
}

// JPEGOptions are the settings of a JPEG encode.
type JPEGOptions struct {
	// Quality on the libjpeg/IJG scale, 1..100.
	Quality int
	// Subsampling of the chroma planes: "444", "422", "420", or "" for
	// the default by quality.
	Subsampling string
}

// JPEGRows encodes src as a JPEG with o's settings, the EXIF metadata md
// and the ICC profile icc, asking for the rows in order.
//
// Bridge implementation (until the libjpeg-turbo encoder of issue 14): it
// gathers the rows into an image and calls JPEG; o.Subsampling is not yet
// honoured.
func JPEGRows(w io.Writer, src RowsRGB8, o JPEGOptions, icc []byte, md Metadata) error {
	if src.W <= 0 || src.H <= 0 || src.Row == nil {
		return errors.New("encode: empty image")
	}
	img := image.NewRGBA(image.Rect(0, 0, src.W, src.H))
	row := make([]byte, 3*src.W)
	for y := range src.H {
		src.Row(y, row)
		o := img.Pix[y*img.Stride:]
		for x := range src.W {
			o[4*x], o[4*x+1], o[4*x+2], o[4*x+3] = row[3*x], row[3*x+1], row[3*x+2], 0xff
		}
	}
	return JPEG(w, img, o.Quality, icc, md)
}
