package pipeline

import (
	"image"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/demosaic"
)

// TestReduceIntExact: reduceInt's sums, counts and clipped counts equal a
// plain per-cell, per-phase loop's exactly (integer sums), on a noisy
// mosaic with samples below black and above white, regions starting on
// odd and even columns and rows, and sub-cells.
func TestReduceIntExact(t *testing.T) {
	const w, h = 613, 419
	rng := rand.New(rand.NewPCG(3, 4))
	c := demosaic.CFA{W: w, H: h, Stride: w + 5, Pix: make([]uint16, (w+5)*h), Colour: [4]uint8{0, 1, 1, 2}}
	for p := range 4 {
		c.Black[p] = float32(500 + 10*p)
		c.Scale[p] = 1 / float32(15000-700*p)
	}
	for i := range c.Pix {
		c.Pix[i] = uint16(rng.IntN(17000))
	}
	for _, tc := range []struct {
		r           image.Rectangle
		gw, gh, sub int
	}{
		{image.Rect(0, 0, w, h), 64, 43, 1},
		{image.Rect(3, 1, w-2, h-5), 40, 27, 3},
		{image.Rect(8, 7, 519, 300), 17, 11, 4},
	} {
		got, err := reduceCFA(c, tc.r, tc.gw, tc.gh, tc.sub, anchorClip)
		if err != nil {
			t.Fatal(err)
		}
		want := reduceIntReference(c, tc.r, tc.gw, tc.gh, tc.sub, anchorClip)
		for k := range want.sum {
			if got.sum[k] != want.sum[k] || got.n[k] != want.n[k] {
				t.Fatalf("%v: value %d: sum %v over %d, want %v over %d", tc.r, k, got.sum[k], got.n[k], want.sum[k], want.n[k])
			}
		}
		for k := range want.clipped {
			if got.clipped[k] != want.clipped[k] {
				t.Fatalf("%v: fine cell %d: %d clipped, want %d", tc.r, k, got.clipped[k], want.clipped[k])
			}
		}
	}
}

// reduceIntReference is reduceInt as a plain loop: each fine cell's
// samples of each phase clamped to [black, black + 1/scale] in DN and
// summed, clipped at black + clip/scale.
func reduceIntReference(c demosaic.CFA, r image.Rectangle, gw, gh, sub int, clip float32) *anchorCFA {
	w, h := r.Dx(), r.Dy()
	fw, fh := sub*gw, sub*gh
	g := &anchorCFA{W: w, H: h, GW: gw, GH: gh, Sub: sub,
		sum: make([]float64, 3*fw*fh), n: make([]int32, 3*fw*fh), clipped: make([]int32, fw*fh)}
	for fy := range fh {
		for fx := range fw {
			var s [4]uint64
			var n [4]int32
			for y := r.Min.Y + fy*h/fh; y < r.Min.Y+(fy+1)*h/fh; y++ {
				for x := r.Min.X + fx*w/fw; x < r.Min.X+(fx+1)*w/fw; x++ {
					p := (y&1)*2 + x&1
					lo := uint16(c.Black[p])
					hi := uint16(math.Floor(float64(c.Black[p]) + 1/float64(c.Scale[p])))
					ct := uint16(math.Ceil(float64(c.Black[p]) + float64(clip)/float64(c.Scale[p])))
					v := min(max(c.Pix[y*c.Stride+x], lo), hi)
					s[p] += uint64(v)
					n[p]++
					if v >= ct {
						g.clipped[fy*fw+fx]++
					}
				}
			}
			for p := range 4 {
				if n[p] == 0 {
					continue
				}
				k := 3*(fy*fw+fx) + int(c.Colour[p])
				g.sum[k] += (float64(s[p]) - float64(n[p])*float64(c.Black[p])) * float64(c.Scale[p])
				g.n[k] += n[p]
			}
		}
	}
	return g
}
