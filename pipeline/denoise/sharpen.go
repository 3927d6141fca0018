package denoise

import (
	"math"
	"sync"

	"github.com/rawbatch/rawbatch/pipeline/internal/par"
	"github.com/rawbatch/rawbatch/pipeline/internal/thp"
)

// SharpenSigma is the standard deviation, in pixels, of the Gaussian of
// the capture sharpening's unsharp mask: about the blur a demosaic adds
// (an interpolating filter a pixel or two wide).
const SharpenSigma = 0.7

// SharpenFloor is the least fraction of its luminance the capture
// sharpening leaves a pixel: an unsharp mask in linear light takes a dark
// pixel beside bright ones below zero (a pixel at 0.1 among neighbours at
// 0.6 goes to 0.1 + 0.8·(0.1 − 0.6) < 0), which shows as a black dot
// where a bright light meets a dark speck or line; with the floor it is
// darkened by at most one stop.
const SharpenFloor = 0.5

// CaptureSharpen sharpens pix (w×h×3 float32, interleaved, linear, 1 =
// white) in place with an unsharp mask of a Gaussian of sigma pixels
// (radius ⌈3σ⌉, at most 3, borders mirrored) on the luminance
// Y = (R+G+B)/3: Y′ = max(Y + amount·(Y − G_σ∗Y), SharpenFloor·Y), and every channel
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
	s := NewSharpener(w, h, amount, sigma)
	s.lum = thp.Floats(n) // the whole plane at once
	s.Rows(h, func(y int) []float32 { return pix[3*y*w : 3*(y+1)*w : 3*(y+1)*w] })
}

// Sharpener is CaptureSharpen on an image given row by row, top to bottom,
// for a conversion that streams its image in row bands: Rows finishes the
// next rows in place, reading rows up to Lookahead below the last one, and
// keeps the luminance of the rows the next call needs (Lookahead rows
// above its first). The result is the same for any split of the image into
// calls of Rows. Memory: the luminance of the rows of a call and
// 2·Lookahead more (4 bytes a pixel).
type Sharpener struct {
	w, h, r int
	k       []float32
	a       float32
	// lum holds the luminance of rows lumLo to lumHi−1.
	lum          []float32
	lumLo, lumHi int
	next         int
	// tmp holds rows of w float32 for the bands' goroutines (*[]float32),
	// reused from band to band.
	tmp sync.Pool
}

// NewSharpener returns the row-by-row CaptureSharpen of a w×h image
// (w, h > 0, amount ≠ 0, sigma > 0).
func NewSharpener(w, h int, amount, sigma float64) *Sharpener {
	k, r := gaussianTaps(sigma)
	return &Sharpener{w: w, h: h, r: r, k: k, a: float32(amount)}
}

// gaussianTaps returns the normalised Gaussian of standard deviation sigma
// (> 0) sampled at −r..r, r = ⌈3σ⌉ capped at 3: k[i+r] is the tap at i.
func gaussianTaps(sigma float64) (k []float32, r int) {
	r = min(3, int(math.Ceil(3*sigma)))
	k = make([]float32, 2*r+1)
	var sum float64
	for i := -r; i <= r; i++ {
		g := math.Exp(-float64(i*i) / (2 * sigma * sigma))
		k[i+r] = float32(g)
		sum += g
	}
	for i := range k {
		k[i] /= float32(sum)
	}
	return k, r
}

// Lookahead is how many rows below the last row a call of Rows finishes
// (and above its first) the mask reads: its radius.
func (s *Sharpener) Lookahead() int { return s.r }

// Next is the first row not finished yet.
func (s *Sharpener) Next() int { return s.next }

// Rows finishes rows Next() to y1−1 in place, in parallel (par.Rows).
// row(y) returns row y (3·w float32) for every y from Next() to
// min(h, y1+Lookahead())−1, not yet sharpened; rows above Next() are not
// read again.
func (s *Sharpener) Rows(y1 int, row func(y int) []float32) {
	w, h, r := s.w, s.h, s.r
	y0, y1 := s.next, min(y1, s.h)
	if y0 >= y1 {
		return
	}
	// The luminance of rows max(0, y0−r) .. min(h, y1+r)−1 (mirrored rows
	// fall inside), those not made yet from row(y).
	lo, hi := max(0, y0-r), min(h, y1+r)
	if s.lum == nil || len(s.lum) < (hi-lo)*w {
		keep := s.lum
		s.lum = make([]float32, (hi-lo+2*r)*w)
		if s.lumHi > lo {
			copy(s.lum, keep[(lo-s.lumLo)*w:(s.lumHi-s.lumLo)*w])
		}
	} else if s.lumLo < lo && s.lumHi > lo {
		copy(s.lum, s.lum[(lo-s.lumLo)*w:(s.lumHi-s.lumLo)*w])
	}
	from := max(lo, s.lumHi)
	if s.lumHi < lo {
		from = lo
	}
	s.lumLo, s.lumHi = lo, hi
	lum := func(y int) []float32 { return s.lum[(y-lo)*w : (y-lo+1)*w] }
	par.Rows(hi-from, func(a, b int) {
		for y := from + a; y < from+b; y++ {
			p, l := row(y), lum(y)
			for x := vecLum(p, l); x < len(l); x++ {
				l[x] = pos((p[3*x] + p[3*x+1] + p[3*x+2]) / 3)
			}
		}
	})
	k, a := s.k, s.a
	par.Rows(y1-y0, func(lo, hi int) {
		bp, _ := s.tmp.Get().(*[]float32)
		if bp == nil || len(*bp) != w {
			b := make([]float32, w)
			bp = &b
		}
		defer s.tmp.Put(bp)
		tmp := *bp
		for y := y0 + lo; y < y0+hi; y++ {
			if r == 3 {
				// The default radius (σ 0.7) in one sweep; the taps are
				// symmetric, so mirrored rows are added before the
				// multiply.
				r0, r1, r2 := lum(mirror(y-3, h)), lum(mirror(y-2, h)), lum(mirror(y-1, h))
				r3, r4, r5, r6 := lum(y), lum(mirror(y+1, h)), lum(mirror(y+2, h)), lum(mirror(y+3, h))
				k0, k1, k2, k3 := k[0], k[1], k[2], k[3]
				tmp := tmp[:w]
				r0, r1, r2, r3, r4, r5, r6 = r0[:w], r1[:w], r2[:w], r3[:w], r4[:w], r5[:w], r6[:w]
				for x := vecBlur7(r0, r1, r2, r3, r4, r5, r6, tmp, k0, k1, k2, k3); x < len(tmp); x++ {
					tmp[x] = k0*(r0[x]+r6[x]) + k1*(r1[x]+r5[x]) + k2*(r2[x]+r4[x]) + k3*r3[x]
				}
			} else {
				for x := range tmp {
					tmp[x] = 0
				}
				for i := -r; i <= r; i++ {
					row := lum(mirror(y+i, h))
					ki := k[i+r]
					for x := range tmp {
						tmp[x] += ki * row[x]
					}
				}
			}
			ly, px := lum(y), row(y)
			ly, px = ly[:w], px[:3*w]
			// The r columns at each end mirror their taps; those in
			// between read them straight (radius 3: symmetric taps
			// folded as above).
			inLo, inHi := min(r, w), max(w-r, min(r, w))
			for x := 0; x < inLo; x++ {
				sharpenPixel(px, ly, x, a, blurTap(tmp, k, r, w, x))
			}
			if r == 3 {
				k0, k1, k2, k3 := k[0], k[1], k[2], k[3]
				// Eight columns at a time where the build allows
				// (vecSharpen3), the groups it leaves one at a time.
				for x := inLo; x < inHi; {
					x = vecSharpen3(px, ly, tmp, x, inHi, k0, k1, k2, k3, a)
					for end := min(x+8, inHi); x < end; x++ {
						t := tmp[x-3 : x+4 : x+4]
						sharpen3(px, ly, x, a, k0*(t[0]+t[6])+k1*(t[1]+t[5])+k2*(t[2]+t[4])+k3*t[3])
					}
				}
			} else {
				for x := inLo; x < inHi; x++ {
					var b float32
					for i := -r; i <= r; i++ {
						b += k[i+r] * tmp[x+i]
					}
					sharpenPixel(px, ly, x, a, b)
				}
			}
			for x := inHi; x < w; x++ {
				sharpenPixel(px, ly, x, a, blurTap(tmp, k, r, w, x))
			}
		}
	})
	s.next = y1
}

// blurTap is the horizontal blur of the vertical pass tmp (w values) at
// column x, its taps k (radius r) mirrored at the borders.
func blurTap(tmp, k []float32, r, w, x int) float32 {
	var b float32
	for i := -r; i <= r; i++ {
		b += k[i+r] * tmp[mirror(x+i, w)]
	}
	return b
}

// sharpen3 is sharpenPixel where the luminance is above 0; a pixel whose
// luminance is 0 or less is left as it is, a NaN one (which pos keeps)
// goes through sharpenPixel.
func sharpen3(px, ly []float32, x int, a, b float32) {
	lv := ly[x]
	if !(lv > 0) {
		if lv != lv {
			sharpenPixel(px, ly, x, a, b)
		}
		return
	}
	g := max(lv+a*(lv-b), SharpenFloor*lv) / lv
	q := px[3*x : 3*x+3 : 3*x+3]
	q[0] *= g
	q[1] *= g
	q[2] *= g
}

// sharpenPixel applies the mask at column x of the row px (3·w, RGB)
// whose luminance is ly (pos of its channels' mean) and blurred
// luminance b: every channel times max(Y + a·(Y − b), SharpenFloor·Y)/Y, nothing
// where Y ≤ 0.
func sharpenPixel(px, ly []float32, x int, a, b float32) {
	lv := ly[x]
	ls := max(lv+a*(lv-b), SharpenFloor*lv)
	if lv <= 0 {
		return
	}
	g := ls / lv
	q := px[3*x : 3*x+3 : 3*x+3]
	q[0] *= g
	q[1] *= g
	q[2] *= g
}

// SharpenScratchBytes is the memory CaptureSharpen allocates for a w×h
// image: one float32 plane (row buffers per goroutine aside).
func SharpenScratchBytes(w, h int) int64 { return 4 * int64(w) * int64(h) }
