package pipeline

import (
	"context"
	"encoding/binary"
	"image"
	"math"
	"sync"
	"time"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/encode"
	"github.com/rawbatch/rawbatch/pipeline/internal/par"
)

// quantiseStage applies the transfer function and rounds to 8 or 16 bits.
var quantiseStage = Stage{Name: "quantise", Scope: PerVariant, Kind: Pointwise, Cost: quantiseCost, run: stageQuantise, Row: quantiseRow}

// quantiseCost: the quantised image (encoderCost's bytes per pixel; for
// the streamed formats, TIFF16 and JPEG, only the bands of rows queued for
// their encoder, encode.OverlapBytes; an Ultra HDR variant's gain map
// besides, uhdrMapBytes), after which
// the float image is let go (a streamed one's at encode) when floatFreed
// says so.
func quantiseCost(m memCtx) StepMemory {
	q, _, _ := encoderCost(m.v, m.step.W, m.step.H)
	if streamedRows(m) {
		bpp := 3
		if bits16(m.v.Format) {
			bpp = 6
		}
		// The bands queued for the encoder, which runs beside the pass.
		return StepMemory{Alloc: encode.OverlapBytes(streamRows, bpp*m.step.W)}
	}
	sm := StepMemory{Alloc: int64(q)*m.px() + uhdrMapBytes(m.v, m.step.W, m.step.H)}
	if floatFreed(m) {
		sm.Free = 12 * m.px()
	}
	return sm
}

// streamRows is how many rows a streamed variant makes at a time (in
// parallel) before its encoder asks for them.
const streamRows = 64

// bandRows returns the Bands of a streamed variant of h rows of rowBytes
// bytes, made streamRows at a time, in parallel (par.Rows), by fill(y,
// out, lin, u16) (lin: room for a row of 3·w float32 samples, u16: for
// 3·w uint16). The encoders take the Bands (encode.Bands): they run on
// their own goroutine while the caller's makes the bands (the time it
// takes is added to v.passTime).
func (v *variantJob) bandRows(w, h, rowBytes int, fill func(y int, out []byte, lin []float32, u16 []uint16)) encode.Bands {
	// The goroutines' rows, reused from band to band.
	var scratch sync.Pool // *bandScratch
	return encode.Bands{Rows: streamRows, Fill: func(y0 int, dst []byte) {
		t0 := time.Now()
		if v.prepare != nil {
			v.prepare(y0, min(h, y0+streamRows))
		}
		par.Rows(min(streamRows, h-y0), func(lo, hi int) {
			b, _ := scratch.Get().(*bandScratch)
			if b == nil {
				b = &bandScratch{lin: make([]float32, w*3), u16: make([]uint16, w*3)}
			}
			defer scratch.Put(b)
			for r := lo; r < hi; r++ {
				fill(y0+r, dst[r*rowBytes:(r+1)*rowBytes], b.lin, b.u16)
			}
		})
		v.passTime += time.Since(t0)
	}}
}

// bandScratch is a band goroutine's room for a row (bandRows).
type bandScratch struct {
	lin []float32
	u16 []uint16
}

// putRow16 writes the samples s big-endian into out.
func putRow16(out []byte, s []uint16) {
	for i, x := range s {
		binary.BigEndian.PutUint16(out[2*i:], x)
	}
}

// quantiseRow ends a fused pass (Stage.Row): it makes the variant's
// quantised rows from its upright view (orientationRow) of the image the
// pass reads, each row gathered, put through the pass's kernels in order
// and quantised as stageQuantise does. JPEG and TIFF16 rows are made as
// their encoder asks for them (v.rows8, v.rows), the other formats' whole
// image here, in one parallel pass; the float image is only read.
func quantiseRow(j *job, p *fusePass) (rowKernel, bool) {
	if p.writes {
		return nil, false
	}
	v := j.cur
	v.pass = p.id
	if v.spec.Variant.Format == "uhdr" {
		v.uhdrTone = j.uhdrToneOf()
	}
	up, kernels := v.upright, p.kernels
	render := func(y int, lin []float32) []float32 {
		up.Row(y, lin)
		for _, k := range kernels {
			k(lin)
		}
		return lin
	}
	if s := j.stream; s != nil {
		// Streamed (stream.go): the rows come from the stream's window.
		render, v.prepare = s.render(kernels), s.ensure
	}
	v.quantiseFrom(render)
	return nil, true
}

// quantiseFrom makes the variant's quantised rows from render(y, lin),
// which returns upright row y of its linear image (in lin, or a view of
// the image): for JPEG and TIFF16 as their encoder asks for them (v.rows8,
// v.rows; the float image is kept until stageEncode), for the other
// formats the whole image here, in one parallel pass, after which the float
// image is let go. render is called from the bands' goroutines, also after
// dropFloat, so it must hold what it reads.
func (v *variantJob) quantiseFrom(render func(y int, lin []float32) []float32) {
	w, h := v.upright.W, v.upright.H
	if v.spec.Variant.HDR != "" {
		v.quantiseHDR(render)
		v.dropFloat()
		return
	}
	if v.spec.Variant.Format == "uhdr" {
		v.quantiseUHDR(render, v.uhdrTone)
		v.dropFloat()
		return
	}
	switch f := v.spec.Variant.Format; {
	case f == "jpeg":
		bands := v.bandRows(w, h, 3*w, func(y int, out []byte, lin []float32, _ []uint16) {
			v.quantRow8(out, render(y, lin))
		})
		v.rows8 = encode.RowsRGB8{W: w, H: h, Bands: bands}
		return
	case f == "tiff16":
		bands := v.bandRows(w, h, 6*w, func(y int, out []byte, lin []float32, u16 []uint16) {
			v.quantRow16(u16, render(y, lin))
			putRow16(out, u16)
		})
		v.rows = encode.RowsRGB16{W: w, H: h, Bands: bands}
		return
	case v.spec.Variant.quant16():
		q := image.NewNRGBA64(image.Rect(0, 0, w, h))
		par.Rows(h, func(lo, hi int) {
			lin, row := make([]float32, w*3), make([]uint16, w*3)
			for y := lo; y < hi; y++ {
				v.quantRow16(row, render(y, lin))
				put16RGBA(q.Pix[y*q.Stride:y*q.Stride+w*8], row)
			}
		})
		v.quant = q
	default:
		q := image.NewRGBA(image.Rect(0, 0, w, h))
		par.Rows(h, func(lo, hi int) {
			lin, row := make([]float32, w*3), make([]uint8, w*3)
			for y := lo; y < hi; y++ {
				v.quantRow8(row, render(y, lin))
				put8RGBA(q.Pix[y*q.Stride:], row)
			}
		})
		v.quant = q
	}
	v.dropFloat()
}

// quantiseHDR makes an HDR variant's whole quantised image from render
// (upright rows of its BT.2100 display-linear image, 1.0 = SDR white,
// hdrToneRow): 16-bit PQ (colour.PQEncode of the luminance in nits,
// 1.0 = colour.HDRReferenceWhite) or HLG (colour.HLGEncode) code values,
// and its content light level (CTA-861.3): v.maxCLL the largest
// component of any pixel, v.maxFALL the image's mean of each pixel's
// largest component, in nits (clamped to the transfer function's peak).
func (v *variantJob) quantiseHDR(render func(y int, lin []float32) []float32) {
	w, h := v.upright.W, v.upright.H
	pq := v.spec.Variant.HDR == encode.HDRPQ
	peak := colour.PQPeak
	if !pq {
		peak = colour.HLGPeak
	}
	q := image.NewNRGBA64(image.Rect(0, 0, w, h))
	var mu sync.Mutex
	var maxCLL, sumFALL float64
	par.Rows(h, func(lo, hi int) {
		lin, row := make([]float32, w*3), make([]uint16, w*3)
		var rowMax, rowSum float64
		for y := lo; y < hi; y++ {
			px := render(y, lin)
			for x := range w {
				var nits [3]float64
				m := 0.0
				for c := range 3 {
					nits[c] = min(max(float64(px[3*x+c]), 0)*colour.HDRReferenceWhite, peak)
					m = max(m, nits[c])
				}
				rowMax = max(rowMax, m)
				rowSum += m
				var e [3]float64
				if pq {
					for c := range 3 {
						e[c] = colour.PQEncode(nits[c])
					}
				} else {
					e = colour.HLGEncode(nits)
				}
				for c := range 3 {
					row[3*x+c] = uint16(math.Round(e[c] * 65535))
				}
			}
			put16RGBA(q.Pix[y*q.Stride:y*q.Stride+w*8], row)
		}
		mu.Lock()
		maxCLL, sumFALL = max(maxCLL, rowMax), sumFALL+rowSum
		mu.Unlock()
	})
	v.quant = q
	v.maxCLL, v.maxFALL = int(math.Ceil(maxCLL)), int(math.Ceil(sumFALL/float64(w*h)))
}

// put16RGBA sets the NRGBA64 pixels o to the 16-bit RGB samples s, opaque.
func put16RGBA(o []byte, s []uint16) {
	for x := range len(s) / 3 {
		p, c := o[x*8:x*8+8], s[x*3:x*3+3]
		p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7] = byte(c[0]>>8), byte(c[0]), byte(c[1]>>8), byte(c[1]), byte(c[2]>>8), byte(c[2]), 0xff, 0xff
	}
}

// put8RGBA sets the RGBA pixels o to the 8-bit RGB samples s, opaque.
func put8RGBA(o []byte, s []uint8) {
	for x := range len(s) / 3 {
		o[x*4], o[x*4+1], o[x*4+2], o[x*4+3] = s[x*3], s[x*3+1], s[x*3+2], 0xff
	}
}

// bits16 reports whether a format stores 16 bits per channel.
func bits16(format string) bool { return format == "tiff16" || format == "png16" }

// stageQuantise applies the variant space's transfer function and rounds
// to 8 or 16 bits: through tables for the sRGB curve (sRGB, Display P3;
// exact for 8 bits, within one code value for 16 bits), per sample through
// the space's Encode otherwise (Adobe RGB gamma 563/256, ROMM, BT.2020).
// JPEG and TIFF16 variants are quantised as they are encoded, row by row
// (encode.RowsRGB8, encode.RowsRGB16), so their quantised image is never
// held whole; the other formats' encoders take a whole image, made here
// (quantiseFrom, which the fused pass's quantiseRow shares).
func stageQuantise(_ context.Context, j *job) error {
	up := j.cur.upright // read by the band made ahead, which may outlive the encode
	if j.cur.spec.Variant.Format == "uhdr" {
		j.cur.uhdrTone = j.uhdrToneOf()
	}
	j.cur.quantiseFrom(up.RowView)
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
