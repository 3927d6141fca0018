package pipeline

import (
	"image"
	"math"
	"sync"

	"github.com/rawbatch/rawbatch/pipeline/encode"
	"github.com/rawbatch/rawbatch/pipeline/internal/par"
	"github.com/rawbatch/rawbatch/pipeline/look"
)

// An Ultra HDR variant (format uhdr, docs/pipeline.md "Ultra HDR") keeps
// its own scene-referred image through the develop (its tone step is the
// look's saturation alone, its output-space step leaves the working
// space) and makes, pixel by pixel at quantise, the SDR base exactly as a
// JPEG variant of the same space and size is made (the tone curve, the
// conversion to the variant's space with gamut compression and clip, the
// 8-bit quantiser) and the HDR rendition of the AVIF and JPEG XL HDR
// variants (hdrToneRow: the SDR tone curve up to its knee, linear light
// above, converted to the variant's space, not clipped); the gain map is
// the log2 ratio of their luminances.

// uhdrOffset is the offset added to both linear luminances before their
// ratio (hdrgm:OffsetSDR and OffsetHDR): 1/64, libultrahdr's default,
// which keeps the ratio finite in black and its noise small in shadows.
const uhdrOffset = 1.0 / 64

// uhdrTone is what quantiseUHDR takes from the file's develop: the SDR
// tone curve's table (look.ToneLUT; nil with --tone none), the HDR
// rendition's kernel (hdrToneRow without the saturation, which the
// variant's tone step applied) and whether the SDR base compresses its
// gamut (Settings.compressGamut).
type uhdrTone struct {
	lut   []float32
	hdr   rowKernel
	gamut bool
}

// uhdrToneOf returns j's uhdrTone.
func (j *job) uhdrToneOf() uhdrTone {
	c := j.toneCurve()
	if c == nil {
		return uhdrTone{hdr: hdrToneRow(nil, nil), gamut: j.settings.compressGamut()}
	}
	h := look.NewHDRTone(c) // its table serves the SDR base too
	return uhdrTone{lut: h.LUT(), hdr: hdrRows(nil, h), gamut: j.settings.compressGamut()}
}

// uhdrAutoHeadroom is the headroom in stops an Ultra HDR variant takes
// from its image when it gives none: log2 of the 99.9th percentile of
// the HDR rendition's largest component over SDR white (so that the
// brightest 0.1 % of the picture, specular highlights, may clip), from
// 0 to UHDRMaxAutoHeadroom. hist counts log2 values in bins of
// 1/headroomBinsPerStop stop from headroomLow stops (index 0 holds
// everything below), n the pixels counted.
func uhdrAutoHeadroom(hist []int64, n int64) float64 {
	if n == 0 {
		return 0
	}
	keep := n - n/1000 // the pixels at or below the percentile
	var sum int64
	for i, c := range hist {
		sum += c
		if sum >= keep {
			stops := headroomLow + float64(i+1)/headroomBinsPerStop
			return min(max(stops, 0), UHDRMaxAutoHeadroom)
		}
	}
	return UHDRMaxAutoHeadroom
}

const (
	headroomLow         = -8.0
	headroomBinsPerStop = 64
	headroomBins        = int((UHDRMaxAutoHeadroom-headroomLow)*headroomBinsPerStop) + 1
)

// headroomBin returns the histogram bin of the value m (> 0).
func headroomBin(m float64) int {
	if !(m > 0) {
		return 0
	}
	i := int(math.Floor((math.Log2(m) - headroomLow) * headroomBinsPerStop))
	return min(max(i, 0), headroomBins-1)
}

// quantiseUHDR makes an Ultra HDR variant's base and gain map from render
// (upright rows of its scene-referred working-space image, the look's
// saturation applied): v.quant the base's 8-bit RGBA image, v.gainMap the
// gain map (ceil(W/s)×ceil(H/s) for the variant's GainMapScale s, each
// sample the mean of the log2 gains of its s×s pixels, encoded as
// encode.GainMap says) and v.gainMeta its metadata. Per pixel, with Y
// the variant space's luminance, SDR the base's code values decoded to
// linear and HDR the HDR rendition, each channel clamped at 0 (as the
// base clips it):
//
//	gain = clamp(log2((Y(HDR) + 1/64) / (Y(SDR) + 1/64)), −∞, headroom)
//
// A headroom of 0 is taken from the image (uhdrAutoHeadroom), from every
// row of a small image and evenly spaced rows (at most 512) of a large
// one, rendered once more for it.
func (v *variantJob) quantiseUHDR(render func(y int, lin []float32) []float32, t uhdrTone) {
	w, h := v.upright.W, v.upright.H
	vr := v.spec.Variant.Normal()
	sdrK := outputSpaceKernel(v.space, true, t.gamut)
	hdrK := outputSpaceKernel(v.space, false, false)
	lum := spaceLuminance(v.space)
	var dec [256]float32
	for i := range dec {
		dec[i] = float32(v.space.Decode(float64(i) / 255))
	}
	hdrRow := func(dst, src []float32) {
		copy(dst, src)
		t.hdr(dst)
		hdrK(dst)
	}
	headroom := vr.Headroom
	if headroom == 0 {
		step := max(1, (h+511)/512)
		hist := make([]int64, headroomBins)
		var n int64
		var mu sync.Mutex
		rows := (h + step - 1) / step
		par.Rows(rows, func(lo, hi int) {
			lin, hdr := make([]float32, 3*w), make([]float32, 3*w)
			own := make([]int64, headroomBins)
			for r := lo; r < hi; r++ {
				hdrRow(hdr, render(r*step, lin))
				for x := range w {
					own[headroomBin(float64(max(hdr[3*x], hdr[3*x+1], hdr[3*x+2])))]++
				}
			}
			mu.Lock()
			for i, c := range own {
				hist[i] += c
			}
			n += int64((hi - lo) * w)
			mu.Unlock()
		})
		headroom = uhdrAutoHeadroom(hist, n)
	}
	s := vr.GainMapScale
	mw, mh := (w+s-1)/s, (h+s-1)/s
	gains := make([]float32, mw*mh)
	base := image.NewRGBA(image.Rect(0, 0, w, h))
	top := float32(headroom)
	par.Rows(mh, func(lo, hi int) {
		lin, sdr, hdr := make([]float32, 3*w), make([]float32, 3*w), make([]float32, 3*w)
		row8 := make([]uint8, 3*w)
		acc := make([]float64, mw)
		for my := lo; my < hi; my++ {
			clear(acc)
			y0, y1 := my*s, min(h, (my+1)*s)
			for y := y0; y < y1; y++ {
				px := render(y, lin)
				copy(sdr, px)
				if t.lut != nil {
					look.ToneRows(t.lut, sdr)
				}
				sdrK(sdr)
				v.quantRow8(row8, sdr)
				put8RGBA(base.Pix[y*base.Stride:], row8)
				hdrRow(hdr, px)
				for x := range w {
					c := row8[3*x : 3*x+3 : 3*x+3]
					ys := lum[0]*dec[c[0]] + lum[1]*dec[c[1]] + lum[2]*dec[c[2]]
					// Negative channels (colours outside the space) count
					// as 0, as the base has them: counted, they would
					// make the HDR rendition darker than the base.
					yh := lum[0]*max(hdr[3*x], 0) + lum[1]*max(hdr[3*x+1], 0) + lum[2]*max(hdr[3*x+2], 0)
					g := float32(math.Log2(float64((yh + uhdrOffset) / (ys + uhdrOffset))))
					acc[x/s] += float64(min(g, top))
				}
			}
			for mx := range mw {
				n := (min(w, (mx+1)*s) - mx*s) * (y1 - y0)
				gains[my*mw+mx] = float32(acc[mx] / float64(n))
			}
		}
	})
	v.quant = base
	v.gainMap, v.gainMeta = encodeGains(gains, mw, mh)
}

// uhdrMapBytes is the memory in bytes of an Ultra HDR variant's gain map
// for a w×h image while it is made (quantiseUHDR: the float32 gains and
// the 8-bit map), 0 for other formats.
func uhdrMapBytes(v Variant, w, h int) int64 {
	if v.Format != "uhdr" {
		return 0
	}
	s := v.Normal().GainMapScale
	return 5 * int64((w+s-1)/s) * int64((h+s-1)/s)
}

// encodeGains returns the gain map image of the log2 gains (mw×mh) and its
// metadata: Min and Max the gains' range widened to hold 0 (Ultra HDR
// v1.0: min content boost at most 1, max content boost at least 1) and
// Max at least Min + 1/64 (a flat map is still well formed), gamma 1, both offsets uhdrOffset,
// CapacityMin 0 and CapacityMax Max (at least 1/16 stop): the whole gain
// applies on a display that can show the map's largest boost, as
// libultrahdr writes it. Each sample is round(255·(g − Min)/(Max − Min))
// (Ultra HDR v1.0 "Encode": the recovery, to the power Gamma, in 8 bits).
func encodeGains(gains []float32, mw, mh int) (*image.Gray, encode.GainMap) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, g := range gains {
		lo, hi = min(lo, float64(g)), max(hi, float64(g))
	}
	lo = min(lo, 0)
	hi = max(hi, 0, lo+1.0/64)
	m := encode.GainMap{Min: lo, Max: hi, Gamma: 1, OffsetSDR: uhdrOffset, OffsetHDR: uhdrOffset, CapacityMin: 0, CapacityMax: max(hi, 1.0/16)}
	img := image.NewGray(image.Rect(0, 0, mw, mh))
	for i, g := range gains {
		r := (float64(g) - lo) / (hi - lo)
		img.Pix[i] = uint8(math.Round(min(max(r, 0), 1) * 255))
	}
	return img, m
}
