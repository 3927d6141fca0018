package look

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math"

	"github.com/rawbatch/rawbatch/pipeline/colour"
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
	var src pixels8
	var w, h int
	if bitmapW == 0 {
		img, err := jpeg.Decode(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrPreviewUnusable, err)
		}
		p.Space, p.SpaceSource = ReadPreviewSpace(data)
		src = imagePixels(img)
		w, h = img.Bounds().Dx(), img.Bounds().Dy()
	} else {
		w, h = bitmapW, bitmapH
		if (colors != 1 && colors != 3) || len(data) < w*h*colors {
			return nil, fmt.Errorf("%w: bitmap %d×%d×%d in %d bytes", ErrPreviewUnusable, w, h, colors, len(data))
		}
		src = func(x, y int) (uint8, uint8, uint8) {
			i := (y*w + x) * colors
			if colors == 1 {
				return data[i], data[i], data[i]
			}
			return data[i], data[i+1], data[i+2]
		}
	}
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
// linear), as Reduce does, in one pass over src (each pixel is read and
// converted once, however many sizes): every cell still sums its pixels
// row by row, left to right, in float32, and divides by their count.
func boxReduce8(src pixels8, lut *[256]float32, x0, y0, cw, ch int, sizes [][2]int) []Image {
	rs := make([]boxRows, len(sizes))
	for k, sz := range sizes {
		ow, oh := sz[0], sz[1]
		r := boxRows{out: Image{W: ow, H: oh, Pix: make([]float32, 3*ow*oh)}, col: make([]int, cw), acc: make([]float32, 3*ow), cw: cw, ch: ch}
		for i := range ow {
			for x := i * cw / ow; x < (i+1)*cw/ow; x++ {
				r.col[x] = i
			}
		}
		rs[k] = r
	}
	for y := range ch {
		for k := range rs {
			for r := &rs[k]; y >= (r.j+1)*ch/r.out.H; {
				r.flush()
			}
		}
		for x := range cw {
			cr, cg, cb := src(x0+x, y0+y)
			lr, lg, lb := lut[cr], lut[cg], lut[cb]
			for k := range rs {
				r := &rs[k]
				a := r.acc[3*r.col[x] : 3*r.col[x]+3]
				a[0] += lr
				a[1] += lg
				a[2] += lb
			}
		}
	}
	out := make([]Image, len(rs))
	for k := range rs {
		r := &rs[k]
		for r.j < r.out.H {
			r.flush()
		}
		out[k] = r.out
	}
	return out
}

// boxRows is one reduction of boxReduce8: its output, the cell column of
// each crop column, the sums of the current cell row j.
type boxRows struct {
	out    Image
	col    []int
	acc    []float32
	j      int
	cw, ch int
}

// flush ends cell row r.j: each cell's sums over its pixel count into the
// output, the sums reset.
func (r *boxRows) flush() {
	ow, oh := r.out.W, r.out.H
	rows := (r.j+1)*r.ch/oh - r.j*r.ch/oh
	for i := range ow {
		n := float32(rows * ((i+1)*r.cw/ow - i*r.cw/ow))
		o := 3 * (r.j*ow + i)
		a := r.acc[3*i : 3*i+3]
		r.out.Pix[o], r.out.Pix[o+1], r.out.Pix[o+2] = a[0]/n, a[1]/n, a[2]/n
		a[0], a[1], a[2] = 0, 0, 0
	}
	r.j++
}

// pixels8 returns the 8-bit R, G, B of pixel (x, y), from the top left.
type pixels8 func(x, y int) (uint8, uint8, uint8)

// imagePixels reads a decoded JPEG's pixels without copying them.
func imagePixels(img image.Image) pixels8 {
	b := img.Bounds()
	switch m := img.(type) {
	case *image.YCbCr:
		return func(x, y int) (uint8, uint8, uint8) {
			yi, ci := m.YOffset(b.Min.X+x, b.Min.Y+y), m.COffset(b.Min.X+x, b.Min.Y+y)
			return color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
		}
	case *image.Gray:
		return func(x, y int) (uint8, uint8, uint8) {
			v := m.GrayAt(b.Min.X+x, b.Min.Y+y).Y
			return v, v, v
		}
	}
	return func(x, y int) (uint8, uint8, uint8) {
		r, g, bb, _ := img.At(b.Min.X+x, b.Min.Y+y).RGBA()
		return uint8(r >> 8), uint8(g >> 8), uint8(bb >> 8)
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
