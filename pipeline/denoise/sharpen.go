package denoise

import (
	"math"

	"github.com/rawbatch/rawbatch/pipeline/internal/par"
)

// SharpenSigma is the standard deviation, in pixels, of the Gaussian of
// the capture sharpening's unsharp mask: about the blur a demosaic adds
// (an interpolating filter a pixel or two wide).
const SharpenSigma = 0.7

// CaptureSharpen sharpens pix (w×h×3 float32, interleaved, linear, 1 =
// white) in place with an unsharp mask of a Gaussian of sigma pixels
// (radius ⌈3σ⌉, at most 3, borders mirrored) on the luminance
// Y = (R+G+B)/3: Y′ = max(Y + amount·(Y − G_σ∗Y), 0), and every channel
// of the pixel is multiplied by Y′/Y, so the colour is kept. The mask is
// linear in Y, so local mean levels are kept (a mask on √Y would brighten
// texture). amount 0 leaves pix as it is; 0.8 is the default for AHD at
// full size (docs/denoise.md). It needs one w×h float32 plane (4 bytes a
// pixel, SharpenScratchBytes) and runs over row bands on up to GOMAXPROCS
// goroutines. It panics if len(pix) < 3·w·h.
func CaptureSharpen(pix []float32, w, h int, amount, sigma float64) {
	n := w * h
	if n == 0 || amount == 0 || sigma <= 0 {
		return
	}
	pix = pix[:3*n]
	r := min(3, int(math.Ceil(3*sigma)))
	k := make([]float32, 2*r+1)
	var sum float64
	for i := -r; i <= r; i++ {
		g := math.Exp(-float64(i*i) / (2 * sigma * sigma))
		k[i+r] = float32(g)
		sum += g
	}
	for i := range k {
		k[i] /= float32(sum)
	}
	l := make([]float32, n)
	par.Rows(h, func(lo, hi int) {
		for i := lo * w; i < hi*w; i++ {
			y := (pix[3*i] + pix[3*i+1] + pix[3*i+2]) / 3
			l[i] = pos(y)
		}
	})
	a := float32(amount)
	var k7 [7]float32 // the taps of radius 3
	copy(k7[:], k)
	par.Rows(h, func(lo, hi int) {
		tmp := make([]float32, w)
		for y := lo; y < hi; y++ {
			if r == 3 {
				// The default radius (σ 0.7) in one sweep, the taps added
				// in the order of the loop below.
				r0, r1, r2 := l[mirror(y-3, h)*w:][:w], l[mirror(y-2, h)*w:][:w], l[mirror(y-1, h)*w:][:w]
				r3, r4, r5, r6 := l[y*w:][:w], l[mirror(y+1, h)*w:][:w], l[mirror(y+2, h)*w:][:w], l[mirror(y+3, h)*w:][:w]
				k0, k1, k2, k3, k4, k5, k6 := k[0], k[1], k[2], k[3], k[4], k[5], k[6]
				tmp := tmp[:w]
				for x := range tmp {
					tmp[x] = 0 + k0*r0[x] + k1*r1[x] + k2*r2[x] + k3*r3[x] + k4*r4[x] + k5*r5[x] + k6*r6[x]
				}
			} else {
				for x := range tmp {
					tmp[x] = 0
				}
				for i := -r; i <= r; i++ {
					row := l[mirror(y+i, h)*w:][:w]
					ki := k[i+r]
					for x := range tmp {
						tmp[x] += ki * row[x]
					}
				}
			}
			for x := range w {
				var b float32
				if r == 3 && x >= 3 && x+3 < w {
					t := tmp[x-3 : x+4 : x+4]
					b = 0 + k7[0]*t[0] + k7[1]*t[1] + k7[2]*t[2] + k7[3]*t[3] + k7[4]*t[4] + k7[5]*t[5] + k7[6]*t[6]
				} else if x >= r && x+r < w {
					for i := -r; i <= r; i++ {
						b += k[i+r] * tmp[x+i]
					}
				} else {
					for i := -r; i <= r; i++ {
						b += k[i+r] * tmp[mirror(x+i, w)]
					}
				}
				i := y*w + x
				lv := l[i]
				ls := pos(lv + a*(lv-b))
				q := pix[3*i : 3*i+3 : 3*i+3]
				yv := (q[0] + q[1] + q[2]) / 3
				if yv <= 0 {
					continue
				}
				g := ls / yv
				q[0] *= g
				q[1] *= g
				q[2] *= g
			}
		}
	})
}

// SharpenScratchBytes is the memory CaptureSharpen allocates for a w×h
// image: one float32 plane (row buffers per goroutine aside).
func SharpenScratchBytes(w, h int) int64 { return 4 * int64(w) * int64(h) }
