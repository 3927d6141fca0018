// Package warp resamples an image through a geometric map: each output
// pixel is the input interpolated at the position the map gives for it,
// channel by channel, so that a per-channel map (transverse chromatic
// aberration: the red and blue planes scaled about the optical centre)
// is one call. Lens distortion (lensfun) and the DNG WarpRectilinear
// opcode (DNG 1.4 §6) both resample through it.
//
// Interpolation is bicubic convolution with the Keys kernel, a = −0.5
// (R. G. Keys, "Cubic convolution interpolation for digital image
// processing", IEEE Trans. ASSP 29 (1981) 1153–1160):
//
//	k(x) = 1.5|x|³ − 2.5|x|² + 1              for |x| ≤ 1,
//	k(x) = −0.5|x|³ + 2.5|x|² − 4|x| + 2      for 1 < |x| < 2,
//	k(x) = 0                                  otherwise,
//
// applied separably over the 4×4 input pixels around the position. With
// a = −0.5 it reproduces polynomials up to degree two exactly (Keys §IV),
// so a ramp or a smooth gradient is moved without error away from the
// borders. It has small negative lobes: values can overshoot near sharp
// edges by a few per cent; callers clip if they must.
//
// Coordinates are in input pixels with pixel centres at integers: (0, 0)
// is the centre of the top-left pixel, (w−1, h−1) of the bottom-right one.
// Positions outside the image take the nearest edge pixel's value
// (replicated border); making sure no output pixel maps outside (crop or
// scale to leave no empty corners) is the caller's choice.
package warp

import (
	"fmt"
	"math"

	"github.com/rawbatch/rawbatch/pipeline/internal/par"
	"github.com/rawbatch/rawbatch/pipeline/internal/thp"
)

// RowMap fills sx[i], sy[i] with the input position (in input pixels,
// centres at integers) that output pixel (i, y) of channel ch takes, for
// i in [0, len(sx)); len(sx) == len(sy) == the output width. It is called
// concurrently for different rows and must not keep sx or sy.
type RowMap func(y, ch int, sx, sy []float32)

// Keys returns the cubic-convolution kernel k(x) for a = −0.5 (see the
// package documentation).
func Keys(x float64) float64 {
	x = math.Abs(x)
	switch {
	case x <= 1:
		return (1.5*x-2.5)*x*x + 1
	case x < 2:
		return ((-0.5*x+2.5)*x-4)*x + 2
	}
	return 0
}

// keys4 gives the four weights of the taps at floor(t)−1 … floor(t)+2 for
// the fractional part f = t − floor(t) ∈ [0, 1).
func keys4(f float32) (w0, w1, w2, w3 float32) {
	// k(1+f), k(f), k(1−f), k(2−f) in factored form (g = 1 − f):
	// −f·g²/2, 1 + f²(1.5f − 2.5), 1 + g²(1.5g − 2.5), −f²·g/2; they sum
	// to 1.
	g := 1 - f
	h := -0.5 * f * g
	w0 = h * g
	w1 = 1 + f*f*(1.5*f-2.5)
	w2 = 1 + g*g*(1.5*g-2.5)
	w3 = h * f
	return
}

// Remap returns the dw×dh×c image (float32, interleaved) whose pixel (x, y)
// of channel ch is src (w×h×c, interleaved) interpolated at the position
// m gives for it. Rows run in parallel (pipeline/internal/par); the result
// does not depend on the number of goroutines. It panics if len(src) is
// not w·h·c or a size is not positive.
func Remap(src []float32, w, h, c, dw, dh int, m RowMap) []float32 {
	if w <= 0 || h <= 0 || c <= 0 || dw <= 0 || dh <= 0 || len(src) != w*h*c {
		panic(fmt.Sprintf("warp: bad sizes: %d values for %d×%d×%d → %d×%d", len(src), w, h, c, dw, dh))
	}
	dst := thp.Floats(dw * dh * c)
	RemapInto(dst, src, w, h, c, dw, dh, m)
	return dst
}

// RemapInto is Remap writing into dst (dw×dh×c float32, interleaved; every
// value is overwritten) instead of a new image; dst must not overlap src.
// It panics if len(dst) is not dw·dh·c, len(src) not w·h·c, or a size is
// not positive.
func RemapInto(dst, src []float32, w, h, c, dw, dh int, m RowMap) {
	if w <= 0 || h <= 0 || c <= 0 || dw <= 0 || dh <= 0 || len(src) != w*h*c || len(dst) != dw*dh*c {
		panic(fmt.Sprintf("warp: bad sizes: %d values for %d×%d×%d → %d values for %d×%d", len(src), w, h, c, len(dst), dw, dh))
	}
	var rows [][]float32 // src's rows, for the vector path of remapRow3
	if c == 3 {
		rows = make([][]float32, h)
		for i := range rows {
			rows[i] = src[3*w*i : 3*w*(i+1) : 3*w*(i+1)]
		}
	}
	par.Rows(dh, func(lo, hi int) {
		// The positions of all c channels of a row: channel ch's at
		// sx[ch*dw:], sy[ch*dw:].
		sx := make([]float32, c*dw)
		sy := make([]float32, c*dw)
		for y := lo; y < hi; y++ {
			row := dst[y*dw*c : (y+1)*dw*c]
			for ch := 0; ch < c; ch++ {
				m(y, ch, sx[ch*dw:(ch+1)*dw], sy[ch*dw:(ch+1)*dw])
			}
			if c == 3 {
				remapRow3(src, rows, w, h, sx, sy, row)
				continue
			}
			for ch := 0; ch < c; ch++ {
				px, py := sx[ch*dw:(ch+1)*dw], sy[ch*dw:(ch+1)*dw]
				for x := 0; x < dw; x++ {
					row[x*c+ch] = sample(src, w, h, c, ch, px[x], py[x])
				}
			}
		}
	})
}

// remapRow3 fills row (dw×3) with src (w×h×3) sampled at the positions of
// the three channels (sx, sy: channel ch's dw positions at ch·dw), channel
// by channel. It computes what sample does, in the same order of
// operations; positions whose 4×4 taps are all inside take the path
// written out here (c = 3 a constant, no call), eight at a time where
// the vector path takes them (vecSample8; rows are src's rows).
func remapRow3(src []float32, rows [][]float32, w, h int, sx, sy, row []float32) {
	dw := len(row) / 3
	stride := 3 * w
	xMax, yMax := float32(w-2), float32(h-2)
	for ch := 0; ch < 3; ch++ {
		csx, csy := sx[ch*dw:(ch+1)*dw], sy[ch*dw:(ch+1)*dw]
		out := row[ch:]
		for x0 := 0; x0 < dw; x0 += 8 {
			x1 := min(x0+8, dw)
			if x1-x0 == 8 && vecSample8(csx[x0:], csy[x0:], ch, w, xMax, yMax, rows, 0, out[3*x0:]) {
				continue
			}
			for x := x0; x < x1; x++ {
				px, py := csx[x], csy[x]
				if !(px >= 1 && py >= 1 && px < xMax && py < yMax) {
					out[3*x] = sample(src, w, h, 3, ch, px, py)
					continue
				}
				ix, iy := int(px), int(py)
				fx, fy := px-float32(ix), py-float32(iy)
				wx0, wx1, wx2, wx3 := keys4(fx)
				wy0, wy1, wy2, wy3 := keys4(fy)
				base := (iy-1)*stride + (ix-1)*3 + ch
				r := src[base : base+3*stride+10]
				v0 := wx0*r[0] + wx1*r[3] + wx2*r[6] + wx3*r[9]
				r = r[stride:]
				v1 := wx0*r[0] + wx1*r[3] + wx2*r[6] + wx3*r[9]
				r = r[stride:]
				v2 := wx0*r[0] + wx1*r[3] + wx2*r[6] + wx3*r[9]
				r = r[stride:]
				v3 := wx0*r[0] + wx1*r[3] + wx2*r[6] + wx3*r[9]
				out[3*x] = wy0*v0 + wy1*v1 + wy2*v2 + wy3*v3
			}
		}
	}
}

// Sample returns channel ch of src (w×h×c, interleaved) interpolated at
// (x, y), with the kernel and border rule of the package documentation.
func Sample(src []float32, w, h, c, ch int, x, y float32) float32 {
	return sample(src, w, h, c, ch, x, y)
}

func sample(src []float32, w, h, c, ch int, x, y float32) float32 {
	if x >= 1 && y >= 1 && x < float32(w-2) && y < float32(h-2) {
		// All 4×4 taps inside: no clamping (x, y ≥ 1, so truncation is
		// the floor).
		ix, iy := int(x), int(y)
		wx0, wx1, wx2, wx3 := keys4(x - float32(ix))
		wy0, wy1, wy2, wy3 := keys4(y - float32(iy))
		stride := w * c
		base := (iy-1)*stride + (ix-1)*c + ch
		r := src[base : base+3*stride+3*c+1]
		c2, c3 := 2*c, 3*c
		v0 := wx0*r[0] + wx1*r[c] + wx2*r[c2] + wx3*r[c3]
		r = r[stride:]
		v1 := wx0*r[0] + wx1*r[c] + wx2*r[c2] + wx3*r[c3]
		r = r[stride:]
		v2 := wx0*r[0] + wx1*r[c] + wx2*r[c2] + wx3*r[c3]
		r = r[stride:]
		v3 := wx0*r[0] + wx1*r[c] + wx2*r[c2] + wx3*r[c3]
		return wy0*v0 + wy1*v1 + wy2*v2 + wy3*v3
	}
	// Near or past the border.
	return borderSample(w, h, c, ch, x, y, func(i int) []float32 { return src[i*w*c:] })
}

// borderSample is the border path of the samplers: channel ch of a w×h
// image of c interleaved channels whose row i (0 ≤ i < h) row returns, at
// (x, y), every tap's row and column clamped to the image. NaN or huge
// positions clamp like any outside position.
func borderSample(w, h, c, ch int, x, y float32, row func(i int) []float32) float32 {
	if !(x > -2) {
		x = -2
	} else if x > float32(w+1) {
		x = float32(w + 1)
	}
	if !(y > -2) {
		y = -2
	} else if y > float32(h+1) {
		y = float32(h + 1)
	}
	fx := float32(math.Floor(float64(x)))
	fy := float32(math.Floor(float64(y)))
	ix, iy := int(fx), int(fy)
	wx0, wx1, wx2, wx3 := keys4(x - fx)
	wy0, wy1, wy2, wy3 := keys4(y - fy)
	var cols [4]int
	for k := range cols {
		cols[k] = clamp(ix-1+k, w)*c + ch
	}
	var acc float32
	wy := [4]float32{wy0, wy1, wy2, wy3}
	for k := 0; k < 4; k++ {
		r := row(clamp(iy-1+k, h))
		v := wx0*r[cols[0]] + wx1*r[cols[1]] + wx2*r[cols[2]] + wx3*r[cols[3]]
		acc += wy[k] * v
	}
	return acc
}

func clamp(i, n int) int {
	if i < 0 {
		return 0
	}
	if i >= n {
		return n - 1
	}
	return i
}
