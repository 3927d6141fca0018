package look

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/internal/par"
)

// DecodePreviewReduced is DecodePreview that also box-filters the preview,
// in linear light, to at most maxLong pixels along its long side (0: keep
// its size) while converting it from 8 bits to float: a full-size embedded
// preview (24 MP in a CR2, CR3 or ARW) is never held as float. The
// usability checks and the centre crop to the raw's aspect work on the
// decoded size, before the reduction, so the result is the same picture
// as DecodePreview's at a smaller size; SourceW and SourceH are the
// decoded size. Memory beside data: the decoded 8-bit image (at most 3
// bytes per preview pixel) while it runs, and the result's
// 12·W·H bytes. Errors as DecodePreview's.
func DecodePreviewReduced(data []byte, bitmapW, bitmapH, colors, rawW, rawH, maxLong int) (*Preview, error) {
	return DecodePreviewGrid(data, bitmapW, bitmapH, colors, rawW, rawH, maxLong, 0, 0)
}

// DecodePreviewGrid is DecodePreviewReduced that also reduces the cropped
// preview straight from its decoded pixels to a gw×gh grid (Preview.Cells;
// gw = 0: none), in linear light: the grid ScorePreview compares when gw×gh
// is its grid (ScoreGridSize), which a grid of the reduced Image is not
// (its cells weigh the reduced pixels equally, not the decoded ones:
// 0.27 mean ΔE2000 on the D30's 1440-pixel preview, docs/look.md). A grid
// larger than the crop is cut down to it. Errors as DecodePreview's.
func DecodePreviewGrid(data []byte, bitmapW, bitmapH, colors, rawW, rawH, maxLong, gw, gh int) (*Preview, error) {
	p := &Preview{Space: colour.SRGB, SpaceSource: "assumed sRGB"}
	var src rows8
	var w, h int
	if bitmapW == 0 {
		img, err := jpeg.Decode(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrPreviewUnusable, err)
		}
		p.Space, p.SpaceSource = ReadPreviewSpace(data)
		src = imageRows(img)
		w, h = img.Bounds().Dx(), img.Bounds().Dy()
	} else {
		w, h = bitmapW, bitmapH
		if (colors != 1 && colors != 3) || len(data) < w*h*colors {
			return nil, fmt.Errorf("%w: bitmap %d×%d×%d in %d bytes", ErrPreviewUnusable, w, h, colors, len(data))
		}
		src = func(y, x0, n int, dst []uint8) {
			row := data[(y*w+x0)*colors:]
			for x := range n {
				if colors == 1 {
					dst[3*x], dst[3*x+1], dst[3*x+2] = row[x], row[x], row[x]
				} else {
					dst[3*x], dst[3*x+1], dst[3*x+2] = row[3*x], row[3*x+1], row[3*x+2]
				}
			}
		}
	}
	return reducePreview(p, src, w, h, rawW, rawH, maxLong, gw, gh)
}

// DecodePreviewRGB is DecodePreviewReduced of a preview already decoded
// to 8-bit RGB (w×h×3 bytes, interleaved; a JPEG decoded at a DCT scale,
// for instance) whose samples are coded in space (from the JPEG's EXIF:
// ReadPreviewSpace, source saying how it was chosen). Errors as
// DecodePreview's.
func DecodePreviewRGB(rgb []byte, w, h int, space *colour.Space, source string, rawW, rawH, maxLong int) (*Preview, error) {
	return DecodePreviewRGBGrid(rgb, w, h, space, source, rawW, rawH, maxLong, 0, 0)
}

// DecodePreviewRGBGrid is DecodePreviewRGB that also reduces the cropped
// preview to a gw×gh grid (Preview.Cells), as DecodePreviewGrid does.
func DecodePreviewRGBGrid(rgb []byte, w, h int, space *colour.Space, source string, rawW, rawH, maxLong, gw, gh int) (*Preview, error) {
	if len(rgb) < 3*w*h {
		return nil, fmt.Errorf("%w: RGB %d×%d in %d bytes", ErrPreviewUnusable, w, h, len(rgb))
	}
	p := &Preview{Space: space, SpaceSource: source}
	src := func(y, x0, n int, dst []uint8) { copy(dst[:3*n], rgb[3*(y*w+x0):]) }
	return reducePreview(p, src, w, h, rawW, rawH, maxLong, gw, gh)
}

// reducePreview checks a decoded w×h preview (read through src) against
// the raw's rawW×rawH and reduces it into p (DecodePreviewGrid).
func reducePreview(p *Preview, src rows8, w, h, rawW, rawH, maxLong, gw, gh int) (*Preview, error) {
	p.SourceW, p.SourceH = w, h
	if max(w, h) < MinPreviewLong || min(w, h) < MinPreviewShort {
		return nil, fmt.Errorf("%w: %d×%d is smaller than %d×%d", ErrPreviewUnusable, w, h, MinPreviewLong, MinPreviewShort)
	}
	if float64(w) < MinPreviewFraction*float64(rawW) {
		return nil, fmt.Errorf("%w: %d px wide is under 1/33 of the raw's %d px", ErrPreviewUnusable, w, rawW)
	}
	ap, ar := float64(w)/float64(h), float64(rawW)/float64(rawH)
	if math.Abs(ap/ar-1) > MaxAspectMismatch {
		return nil, fmt.Errorf("%w: aspect %d×%d does not match the raw's %d×%d", ErrPreviewUnusable, w, h, rawW, rawH)
	}
	var lut [256]float32
	for i := range lut {
		lut[i] = float32(p.Space.Decode(float64(i) / 255))
	}
	x0, y0, cw, ch := cropRect(w, h, rawW, rawH)
	ow, oh := cw, ch
	if maxLong > 0 && max(cw, ch) > maxLong {
		if cw >= ch {
			ow, oh = maxLong, max(1, int(math.Round(float64(maxLong)*float64(ch)/float64(cw))))
		} else {
			ow, oh = max(1, int(math.Round(float64(maxLong)*float64(cw)/float64(ch)))), maxLong
		}
	}
	if gw > 0 && gh > 0 {
		r := boxReduce8(src, &lut, x0, y0, cw, ch, [][2]int{{ow, oh}, {min(gw, cw), min(gh, ch)}})
		p.Image, p.Cells = r[0], r[1]
	} else {
		p.Image = boxReduce8(src, &lut, x0, y0, cw, ch, [][2]int{{ow, oh}})[0]
	}
	return p, nil
}

// boxReduce8 box-filters the cw×ch rectangle at (x0, y0) of src to each
// of the sizes (ow, oh) of cells in linear light (lut: 8-bit code →
// linear), as Reduce does: every cell sums its pixels row by row, left to
// right, in float32, and divides by their count. Cell rows are reduced in
// parallel (each reads its own source rows), so the result does not
// depend on the number of threads.
func boxReduce8(src rows8, lut *[256]float32, x0, y0, cw, ch int, sizes [][2]int) []Image {
	out := make([]Image, len(sizes))
	for k, sz := range sizes {
		ow, oh := sz[0], sz[1]
		o := Image{W: ow, H: oh, Pix: make([]float32, 3*ow*oh)}
		if ow == cw && oh == ch {
			// Cells of one pixel: the code's linear value (a sum of one
			// divided by one, as below).
			par.Rows(oh, func(j0, j1 int) {
				row := make([]uint8, 3*cw)
				for j := j0; j < j1; j++ {
					src(y0+j, x0, cw, row)
					d := o.Pix[3*j*ow : 3*(j+1)*ow]
					for i, v := range row {
						d[i] = lut[v]
					}
				}
			})
			out[k] = o
			continue
		}
		col := make([]int, cw)
		for i := range ow {
			for x := i * cw / ow; x < (i+1)*cw/ow; x++ {
				col[x] = i
			}
		}
		par.Rows(oh, func(j0, j1 int) {
			row := make([]uint8, 3*cw)
			acc := make([]float32, 3*ow)
			for j := j0; j < j1; j++ {
				sy0, sy1 := j*ch/oh, (j+1)*ch/oh
				for y := sy0; y < sy1; y++ {
					src(y0+y, x0, cw, row)
					for x, c := range col {
						a := acc[3*c : 3*c+3]
						a[0] += lut[row[3*x]]
						a[1] += lut[row[3*x+1]]
						a[2] += lut[row[3*x+2]]
					}
				}
				for i := range ow {
					n := float32((sy1 - sy0) * ((i+1)*cw/ow - i*cw/ow))
					d := o.Pix[3*(j*ow+i):]
					a := acc[3*i : 3*i+3]
					d[0], d[1], d[2] = a[0]/n, a[1]/n, a[2]/n
					a[0], a[1], a[2] = 0, 0, 0
				}
			}
		})
		out[k] = o
	}
	return out
}

// rows8 fills dst with the 8-bit R, G, B of the n pixels of row y from
// column x0 (from the top left), 3 bytes a pixel.
type rows8 func(y, x0, n int, dst []uint8)

// imageRows reads a decoded JPEG's rows without copying the image.
func imageRows(img image.Image) rows8 {
	b := img.Bounds()
	switch m := img.(type) {
	case *image.YCbCr:
		return func(y, x0, n int, dst []uint8) {
			yy := b.Min.Y + y
			for x := range n {
				xx := b.Min.X + x0 + x
				yi, ci := m.YOffset(xx, yy), m.COffset(xx, yy)
				dst[3*x], dst[3*x+1], dst[3*x+2] = color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
			}
		}
	case *image.Gray:
		return func(y, x0, n int, dst []uint8) {
			row := m.Pix[m.PixOffset(b.Min.X+x0, b.Min.Y+y):]
			for x := range n {
				v := row[x]
				dst[3*x], dst[3*x+1], dst[3*x+2] = v, v, v
			}
		}
	}
	return func(y, x0, n int, dst []uint8) {
		for x := range n {
			r, g, bb, _ := img.At(b.Min.X+x0+x, b.Min.Y+y).RGBA()
			dst[3*x], dst[3*x+1], dst[3*x+2] = uint8(r>>8), uint8(g>>8), uint8(bb>>8)
		}
	}
}

// cropRect is CropToAspect's rectangle: the largest centred w:h-shaped
// (rawW:rawH) crop of a w×h image, as x0, y0, width, height.
func cropRect(w, h, rawW, rawH int) (x0, y0, cw, ch int) {
	cw, ch = w, h
	if float64(w)*float64(rawH) > float64(h)*float64(rawW) {
		cw = int(math.Round(float64(h) * float64(rawW) / float64(rawH)))
	} else {
		ch = int(math.Round(float64(w) * float64(rawH) / float64(rawW)))
	}
	cw, ch = max(1, min(cw, w)), max(1, min(ch, h))
	return (w - cw) / 2, (h - ch) / 2, cw, ch
}
