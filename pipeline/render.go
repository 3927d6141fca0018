package pipeline

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/encode"
	"github.com/rawbatch/rawbatch/pipeline/internal/fileperm"
	"github.com/rawbatch/rawbatch/pipeline/internal/par"
	"github.com/rawbatch/rawbatch/pipeline/resize"
)

// OutputSpec is one file to write for an input: a variant and its path.
type OutputSpec struct {
	Variant Variant
	Path    string
}

// VariantResult describes one written output.
type VariantResult struct {
	Name, Path string
	// Width and Height of the written image in pixels, after resizing and
	// orientation.
	Width, Height int
}

// variantJob carries one output through the per-variant stages.
type variantJob struct {
	spec    OutputSpec
	space   *colour.Space
	img     Image            // linear: resized, then in the variant's colour space
	owned   bool             // img is the variant's own buffer, not the shared image
	upright Oriented         // img rotated and mirrored upright
	quant   image.Image      // the quantised image, for encoders that take a whole image
	rows    encode.RowsRGB16 // the quantiser of a streamed (TIFF16) variant
	tmp     string           // temporary output file, renamed into place on success
}

// variantSpace returns the colour space of a variant ("" is sRGB).
func variantSpace(v Variant) *colour.Space {
	if s, ok := variantSpaces[v.Space]; ok {
		return s
	}
	return colour.SRGB
}

// downscaled reports whether variant v is resized from the decoded image
// (smaller, or larger with Upscale).
func (j *job) downscaled(v *variantJob) bool {
	dw, dh := v.spec.Variant.Fit(j.img.W, j.img.H)
	return dw != j.img.W || dh != j.img.H
}

// stageResize makes a downscaled variant's image: the decoded camera-RGB
// image scaled to the variant's long edge (Variant.Size) in linear light
// with resize.Downscale (Lanczos-3, after a box reduction when it shrinks
// by 4× or more, as Pillow's thumbnail does), then taken through the camera
// matrix, exposure and tone curve at that size. A full-size variant uses
// the shared working-space image (the per-file stages made it). The camera
// matrix and exposure are linear, so resizing first changes nothing there;
// the tone curve is applied after the resize, to the pixels shown.
func stageResize(_ context.Context, j *job) error {
	v := j.cur
	if !j.downscaled(v) {
		if _, ok := j.rendered[renderKey(v.spec.Variant)]; !ok {
			v.img, v.owned = j.img, false
		}
		return nil
	}
	w, h := j.img.W, j.img.H
	dw, dh := v.spec.Variant.Fit(w, h)
	small := resize.Downscale(j.camera, w, h, j.colors, dw, dh)
	v.img = j.toWorking(small, j.colors, dw, dh, true)
	v.owned = true
	j.expose(v.img)
	applyTone(v.img, j.settings.Tone)
	return nil
}

// stageOutputSpace converts the variant's image from the working space into
// the variant's linear colour space (ConvertMatrix: primaries and, for
// ProPhoto, Bradford adaptation to D50), sharpens it (Variant.Sharpen) and
// clips every sample to [0, 1] (NaN to 0). A full-size variant gets its own
// copy of the shared image, except the last one, which converts the shared
// image in place (each pixel is read before it is written), so a
// single-variant conversion needs no second full-size buffer.
func stageOutputSpace(_ context.Context, j *job) error {
	v := j.cur
	v.space = variantSpace(v.spec.Variant)
	key := renderKey(v.spec.Variant)
	if img, ok := j.rendered[key]; ok && !v.owned {
		// An earlier variant of the same space, size and sharpening (a JPEG
		// and a TIFF of one rendition) rendered this image: share it; the
		// later stages only read it.
		v.img = img
		j.release(v)
		return nil
	}
	defer func() {
		if j.laterNeeds(v, key) {
			if j.rendered == nil {
				j.rendered = map[string]Image{}
			}
			j.rendered[key] = v.img
		}
		j.release(v)
	}()
	m := colour.ConvertMatrix(WorkingSpace, v.space)
	var mf [3][3]float32
	for i := range 3 {
		for k := range 3 {
			mf[i][k] = float32(m[i][k])
		}
	}
	src := v.img.Pix
	dst := src
	if !v.owned {
		if j.laterNeedsShared(v, key) {
			dst = make([]float32, len(src))
		} else {
			// No later variant renders from the shared image: take it
			// over and convert it in place (each pixel is read before it
			// is written).
			defer func() { j.img = Image{W: j.img.W, H: j.img.H} }()
		}
	}
	sharpen := v.spec.Variant.Sharpen > 0
	row := v.img.W * 3
	par.Rows(v.img.H, func(lo, hi int) {
		src, dst := src[lo*row:hi*row], dst[lo*row:hi*row]
		for i := 0; i+2 < len(src); i += 3 {
			r, g, b := src[i], src[i+1], src[i+2]
			for c := range 3 {
				x := mf[c][0]*r + mf[c][1]*g + mf[c][2]*b
				if !sharpen { // clip now; sharpening clips after
					if !(x > 0) {
						x = 0
					} else if x > 1 {
						x = 1
					}
				}
				dst[i+c] = x
			}
		}
	})
	v.img = Image{W: v.img.W, H: v.img.H, Pix: dst}
	if sharpen {
		unsharp(v.img, float32(v.spec.Variant.Sharpen))
		v.img.parallel(func(pix []float32) {
			for i, x := range pix {
				if !(x > 0) {
					pix[i] = 0
				} else if x > 1 {
					pix[i] = 1
				}
			}
		})
	}
	return nil
}

// unsharp sharpens img in place by an unsharp mask: x + amount·(x − blur(x)),
// blur being a 3×3 binomial filter (1 2 1)/4 in each direction (applied
// separably), per channel, in linear light; pixels beyond the edges repeat
// the edge pixel.
//
// It needs no copy of the image: the rows are cut into contiguous bands,
// one per processor, done in parallel; each band keeps the horizontal blurs
// of three rows (a row is overwritten only after its own), and the original
// rows just outside it (which the neighbouring bands change) are saved
// before any band starts. Extra memory: about five rows per band.
func unsharp(img Image, amount float32) {
	w, h := img.W, img.H
	if w < 3 || h < 3 {
		return
	}
	rowLen := w * 3
	row := func(y int) []float32 { return img.Pix[y*rowLen : (y+1)*rowLen] }
	nb := min(runtime.GOMAXPROCS(0), h)
	start := func(b int) int { return h * b / nb }
	// above[b], below[b]: the original rows just outside band b (clamped).
	above, below := make([][]float32, nb), make([][]float32, nb)
	for b := range nb {
		above[b] = append([]float32(nil), row(max(start(b)-1, 0))...)
		below[b] = append([]float32(nil), row(min(start(b+1), h-1))...)
	}
	// hblur sets dst to the horizontal (1 2 1)/4 blur of src.
	hblur := func(dst, src []float32) {
		for x := range w {
			l, r := max(x-1, 0)*3, min(x+1, w-1)*3
			for c := range 3 {
				dst[x*3+c] = (src[l+c] + 2*src[x*3+c] + src[r+c]) / 4
			}
		}
	}
	par.Range(nb, 1, func(lo, hi int) {
		prev, cur, next := make([]float32, rowLen), make([]float32, rowLen), make([]float32, rowLen)
		for b := lo; b < hi; b++ {
			y0, y1 := start(b), start(b+1)
			hblur(prev, above[b])
			hblur(cur, row(y0))
			for y := y0; y < y1; y++ {
				src := below[b] // row y+1, outside the band (or the clamped edge)
				if y+1 < y1 {
					src = row(y + 1)
				}
				hblur(next, src)
				px := row(y)
				for i, x := range px {
					blur := (prev[i] + 2*cur[i] + next[i]) / 4
					px[i] = x + amount*(x-blur)
				}
				prev, cur, next = cur, next, prev
			}
		}
	})
}

// stageOrientation sets up the upright view of the variant's image; the
// quantise stage reads it row by row, so no second full-size buffer is
// needed.
func stageOrientation(_ context.Context, j *job) error {
	v := j.cur
	v.upright = NewOriented(v.img, j.info.Flip)
	return nil
}

// bits16 reports whether a format stores 16 bits per channel.
func bits16(format string) bool { return format == "tiff16" || format == "png16" }

// stageQuantise applies the variant space's transfer function and rounds
// to 8 or 16 bits: through tables for the sRGB curve (sRGB, Display P3;
// exact for 8 bits, within one code value for 16 bits), per sample through
// the space's Encode otherwise (Adobe RGB gamma 563/256, ROMM, BT.2020).
// A TIFF16 variant is quantised as it is encoded, row by row
// (encode.TIFF16Rows), so its 16-bit image is never held whole; the other
// formats' encoders take a whole image, made here.
func stageQuantise(_ context.Context, j *job) error {
	v := j.cur
	w, h := v.upright.W, v.upright.H
	switch {
	case v.spec.Variant.Format == "tiff16":
		// Rows are asked for in order; they are quantised streamRows at a
		// time, in parallel (par.Rows), into buf, and handed out from there.
		const streamRows = 64
		rowBytes := 6 * w
		buf := make([]byte, streamRows*rowBytes)
		first := -streamRows // the row in buf[0:rowBytes]
		v.rows = encode.RowsRGB16{W: w, H: h, Row: func(y int, dst []byte) {
			if y < first || y >= first+streamRows {
				first = y
				n := min(streamRows, h-y)
				par.Rows(n, func(lo, hi int) {
					lin, row := make([]float32, w*3), make([]uint16, w*3)
					for r := lo; r < hi; r++ {
						v.quantRow16(row, v.upright.RowView(first+r, lin))
						out := buf[r*rowBytes : (r+1)*rowBytes]
						for i, s := range row {
							binary.BigEndian.PutUint16(out[2*i:], s)
						}
					}
				})
			}
			copy(dst, buf[(y-first)*rowBytes:(y-first+1)*rowBytes])
		}}
		return nil // the float image is kept until stageEncode
	case bits16(v.spec.Variant.Format):
		q := image.NewNRGBA64(image.Rect(0, 0, w, h))
		par.Rows(h, func(lo, hi int) {
			lin, row := make([]float32, w*3), make([]uint16, w*3)
			for y := lo; y < hi; y++ {
				v.quantRow16(row, v.upright.RowView(y, lin))
				o := q.Pix[y*q.Stride : y*q.Stride+w*8]
				for x := range w {
					p, s := o[x*8:x*8+8], row[x*3:x*3+3]
					p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7] = byte(s[0]>>8), byte(s[0]), byte(s[1]>>8), byte(s[1]), byte(s[2]>>8), byte(s[2]), 0xff, 0xff
				}
			}
		})
		v.quant = q
	default:
		q := image.NewRGBA(image.Rect(0, 0, w, h))
		par.Rows(h, func(lo, hi int) {
			lin, row := make([]float32, w*3), make([]uint8, w*3)
			for y := lo; y < hi; y++ {
				v.quantRow8(row, v.upright.RowView(y, lin))
				o := q.Pix[y*q.Stride:]
				for x := range w {
					o[x*4], o[x*4+1], o[x*4+2], o[x*4+3] = row[x*3], row[x*3+1], row[x*3+2], 0xff
				}
			}
		})
		v.quant = q
	}
	v.dropFloat()
	return nil
}

// dropFloat lets go of the variant's float image once it is quantised.
func (v *variantJob) dropFloat() {
	v.img, v.upright = Image{W: v.img.W, H: v.img.H}, Oriented{W: v.upright.W, H: v.upright.H}
}

// srgbCurve reports whether the variant's space uses the sRGB transfer
// function (IEC 61966-2-1), which has table-driven quantisers.
func (v *variantJob) srgbCurve() bool {
	return v.space == colour.SRGB || v.space == colour.DisplayP3
}

// quantRow16 sets dst to the 16-bit code values of the linear samples lin
// in the variant's space.
func (v *variantJob) quantRow16(dst []uint16, lin []float32) {
	if v.srgbCurve() {
		colour.QuantiseSRGB16FastSlice(dst, lin)
		return
	}
	for i, x := range lin {
		dst[i] = uint16(math.Round(v.space.Encode(float64(x)) * 65535))
	}
}

// quantRow8 sets dst to the 8-bit code values of the linear samples lin in
// the variant's space.
func (v *variantJob) quantRow8(dst []uint8, lin []float32) {
	if v.srgbCurve() {
		colour.QuantiseSRGB8Slice(dst, lin)
		return
	}
	for i, x := range lin {
		dst[i] = uint8(math.Round(v.space.Encode(float64(x)) * 255))
	}
}

// stageEncode writes the variant in its format, with its space's ICC
// profile and the EXIF metadata, to a temporary file in the output's
// directory (renamed into place when every variant of the file succeeded).
func stageEncode(_ context.Context, j *job) (err error) {
	v := j.cur
	out := v.spec.Path
	defer func() {
		// Name the output, not its temporary file, and keep the cause
		// (ENOSPC stays transient for the retries).
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = fmt.Errorf("writing %s: %w", out, pe.Err)
		}
	}()
	// The temporary name has no image extension, so photo importers
	// watching the folder do not pick it up.
	f, err := createTemp(filepath.Dir(out), tempPattern(out))
	if err != nil {
		return err
	}
	v.tmp = f.Name()
	bw := bufio.NewWriterSize(&writebackWriter{f: f}, 1<<20)
	md := Metadata(j.info, j.hdr)
	icc := v.space.ICC
	quality := v.spec.Variant.Quality
	if quality == 0 {
		quality = 90
	}
	switch v.spec.Variant.Format {
	case "png16":
		err = encode.PNG16(bw, v.quant, icc, md)
	case "png8":
		err = encode.PNG8(bw, v.quant, icc, md)
	case "tiff16":
		err = encode.TIFF16RowsOptions(bw, v.rows, icc, md, v.spec.Variant.TIFFOptions())
		v.rows = encode.RowsRGB16{}
		v.dropFloat()
	case "tiff8":
		err = encode.TIFF8(bw, v.quant, icc, md, v.spec.Variant.TIFFOptions())
	case "webp":
		err = encode.WebP(bw, v.quant, quality, false, icc, md)
	case "jpeg":
		err = encode.JPEG(bw, v.quant, quality, icc, md)
	default:
		err = fmt.Errorf("unknown output format %q", v.spec.Variant.Format)
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(v.tmp, fileperm.File())
	}
	v.quant = nil
	return err
}

// renderKey identifies what a variant's linear image depends on beyond the
// shared stages: its colour space, size and sharpening.
func renderKey(v Variant) string { return fmt.Sprintf("%s/%s/%g", v.Space, v.sizeKey(), v.Sharpen) }

// laterNeedsShared reports whether a variant after v renders from the
// shared working image: one of another rendition not rendered yet.
func (j *job) laterNeedsShared(v *variantJob, key string) bool {
	after := false
	for _, o := range j.outs {
		if after {
			k := renderKey(o.spec.Variant)
			if _, ok := j.rendered[k]; !ok && k != key {
				return true
			}
		}
		after = after || o == v
	}
	return false
}

// laterNeeds reports whether a variant after v renders the same image.
func (j *job) laterNeeds(v *variantJob, key string) bool {
	after := false
	for _, o := range j.outs {
		if after && renderKey(o.spec.Variant) == key {
			return true
		}
		after = after || o == v
	}
	return false
}

// release drops, once variant v is rendered, the shared working image when
// no later variant renders from it, and shared renditions no later variant
// uses, so memory follows the estimate.
func (j *job) release(v *variantJob) {
	needShared := false
	used := map[string]bool{}
	after := false
	for _, o := range j.outs {
		if after {
			k := renderKey(o.spec.Variant)
			used[k] = true
			if _, ok := j.rendered[k]; !ok {
				needShared = true
			}
		}
		after = after || o == v
	}
	if !needShared {
		j.img = Image{W: j.img.W, H: j.img.H}
	}
	for k := range j.rendered {
		if !used[k] {
			delete(j.rendered, k)
		}
	}
}
