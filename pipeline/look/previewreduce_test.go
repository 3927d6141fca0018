package look

import (
	"math"
	"math/rand/v2"
	"testing"
)

// refBoxReduce8 is boxReduce8 of one size computed cell by cell, the
// plain way: the reference the one-pass reduction must equal bit for bit.
func refBoxReduce8(src func(x, y int) (uint8, uint8, uint8), lut *[256]float32, x0, y0, cw, ch, ow, oh int) Image {
	out := Image{W: ow, H: oh, Pix: make([]float32, 3*ow*oh)}
	for j := range oh {
		sy0, sy1 := y0+j*ch/oh, y0+(j+1)*ch/oh
		for i := range ow {
			sx0, sx1 := x0+i*cw/ow, x0+(i+1)*cw/ow
			var s [3]float32
			for y := sy0; y < sy1; y++ {
				for x := sx0; x < sx1; x++ {
					r, g, b := src(x, y)
					s[0] += lut[r]
					s[1] += lut[g]
					s[2] += lut[b]
				}
			}
			n := float32((sy1 - sy0) * (sx1 - sx0))
			o := 3 * (j*ow + i)
			out.Pix[o], out.Pix[o+1], out.Pix[o+2] = s[0]/n, s[1]/n, s[2]/n
		}
	}
	return out
}

// TestBoxReduce8OnePass: the reduction to several sizes at once, cell
// rows in parallel, gives bit for bit the cell-by-cell reduction of each, on a random
// 8-bit image cropped off-centre, for sizes that divide the crop and
// sizes that do not.
func TestBoxReduce8OnePass(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	w, h := 503, 337
	pix := make([]uint8, 3*w*h)
	for i := range pix {
		pix[i] = uint8(rng.IntN(256))
	}
	src := func(x, y int) (uint8, uint8, uint8) {
		i := 3 * (y*w + x)
		return pix[i], pix[i+1], pix[i+2]
	}
	var lut [256]float32
	for i := range lut {
		lut[i] = float32(math.Pow(float64(i)/255, 2.2))
	}
	x0, y0, cw, ch := 3, 5, 497, 330
	for _, sizes := range [][][2]int{{{497, 330}}, {{256, 170}, {100, 66}}, {{71, 33}, {497, 1}, {1, 330}}} {
		rows := func(y, x0, n int, dst []uint8) {
			for x := range n {
				dst[3*x], dst[3*x+1], dst[3*x+2] = src(x0+x, y)
			}
		}
		got := boxReduce8(rows, &lut, x0, y0, cw, ch, sizes)
		for k, sz := range sizes {
			want := refBoxReduce8(src, &lut, x0, y0, cw, ch, sz[0], sz[1])
			if got[k].W != want.W || got[k].H != want.H {
				t.Fatalf("size %v: %d×%d", sz, got[k].W, got[k].H)
			}
			for i := range want.Pix {
				if got[k].Pix[i] != want.Pix[i] {
					t.Fatalf("size %v value %d: %g, cell by cell %g", sz, i, got[k].Pix[i], want.Pix[i])
				}
			}
		}
	}
}
