package pipeline

import (
	"context"
	"encoding/binary"
	"image"
	"math"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/encode"
	"github.com/rawbatch/rawbatch/pipeline/internal/par"
)

// quantiseStage applies the transfer function and rounds to 8 or 16 bits.
var quantiseStage = Stage{Name: "quantise", Scope: PerVariant, Kind: Pointwise, Cost: quantiseCost, run: stageQuantise}

// quantiseCost: the quantised image (encoderCost's bytes per pixel; TIFF16
// only a band of rows, streamed into its encoder), after which the float
// image is let go (a TIFF16's at encode), unless a later variant of its
// rendition shares it.
func quantiseCost(m memCtx) StepMemory {
	q, _, _ := encoderCost(m.v)
	sm := StepMemory{Alloc: int64(q) * m.px()}
	if m.v.Format == "tiff16" {
		sm.Alloc = 64 * 6 * int64(m.step.W)
	} else if !m.step.keep {
		sm.Free = 12 * m.px()
	}
	return sm
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
