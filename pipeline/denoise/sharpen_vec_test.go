package denoise

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rawbatch/rawbatch/internal/testtool"
)

// TestSharpenVector: the capture sharpening's vector kernels of radius 3
// (vecBlur7, vecSharpen3) with the scalar loops that do the rest give
// exactly the scalar loops' values, on rows of 1 to 70 and 6001 pixels
// of noise-like luminances with zeros, negatives' 0, NaN and infinite
// luminances and pixels, at amounts 0 to 4; groups with a NaN or an
// infinity are left to the scalar loop. The luminance of a row (vecLum)
// too.
func TestSharpenVector(t *testing.T) {
	testtool.NeedVector(t, vec)
	rng := rand.New(rand.NewPCG(13, 14))
	k0, k1, k2, k3 := float32(0.004), float32(0.054), float32(0.242), float32(0.4)
	lengths := []int{6001}
	for n := 1; n <= 70; n++ {
		lengths = append(lengths, n)
	}
	val := func() float32 {
		switch rng.IntN(40) {
		case 0:
			return 0
		case 1:
			return float32(math.NaN())
		case 2:
			return float32(math.Inf(1))
		default:
			return rng.Float32()
		}
	}
	for _, w := range lengths {
		for _, a := range []float32{0, 0.8, 4} {
			rows := make([][]float32, 7)
			for i := range rows {
				rows[i] = make([]float32, w)
				for x := range rows[i] {
					rows[i][x] = pos(val())
				}
			}
			tmp, want := make([]float32, w), make([]float32, w)
			for x := vecBlur7(rows[0], rows[1], rows[2], rows[3], rows[4], rows[5], rows[6], tmp, k0, k1, k2, k3); x < w; x++ {
				tmp[x] = k0*(rows[0][x]+rows[6][x]) + k1*(rows[1][x]+rows[5][x]) + k2*(rows[2][x]+rows[4][x]) + k3*rows[3][x]
			}
			for x := range want {
				want[x] = k0*(rows[0][x]+rows[6][x]) + k1*(rows[1][x]+rows[5][x]) + k2*(rows[2][x]+rows[4][x]) + k3*rows[3][x]
			}
			for x := range want {
				if math.Float32bits(tmp[x]) != math.Float32bits(want[x]) {
					t.Fatalf("width %d: blur at %d: %v, want %v", w, x, tmp[x], want[x])
				}
			}
			ly := rows[3]
			px := make([]float32, 3*w)
			for i := range px {
				px[i] = val()
			}
			ref := append([]float32(nil), px...)
			lo, hi := min(3, w), max(w-3, min(3, w))
			for x := lo; x < hi; {
				x = vecSharpen3(px, ly, tmp, x, hi, k0, k1, k2, k3, a)
				for end := min(x+8, hi); x < end; x++ {
					tt := tmp[x-3 : x+4]
					sharpen3(px, ly, x, a, k0*(tt[0]+tt[6])+k1*(tt[1]+tt[5])+k2*(tt[2]+tt[4])+k3*tt[3])
				}
			}
			for x := lo; x < hi; x++ {
				tt := tmp[x-3 : x+4]
				sharpen3(ref, ly, x, a, k0*(tt[0]+tt[6])+k1*(tt[1]+tt[5])+k2*(tt[2]+tt[4])+k3*tt[3])
			}
			for i := range px {
				if math.Float32bits(px[i]) != math.Float32bits(ref[i]) {
					t.Fatalf("width %d, amount %v: value %d (pixel %d): %v, want %v", w, a, i, i/3, px[i], ref[i])
				}
			}
			// The luminance of the row (vecLum and the scalar loop).
			l := make([]float32, w)
			for x := vecLum(px, l); x < w; x++ {
				l[x] = pos((px[3*x] + px[3*x+1] + px[3*x+2]) / 3)
			}
			for x := range l {
				// Bit for bit, but a NaN for a NaN (which of two NaNs a
				// sum keeps depends on the order of its operands).
				want := pos((px[3*x] + px[3*x+1] + px[3*x+2]) / 3)
				if math.Float32bits(l[x]) != math.Float32bits(want) && !(l[x] != l[x] && want != want) {
					t.Fatalf("width %d: luminance at %d: %v, want %v", w, x, l[x], want)
				}
			}
		}
	}
}
