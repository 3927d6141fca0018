package pipeline

import (
	"math"
	"math/rand"
	"runtime"
	"testing"
)

// unsharpReference is the unsharp mask written out directly: a full copy
// of the image and the 3×3 binomial kernel summed per pixel.
func unsharpReference(img Image, amount float32) {
	w, h := img.W, img.H
	src := append([]float32(nil), img.Pix...)
	at := func(x, y, c int) float64 {
		x = min(max(x, 0), w-1)
		y = min(max(y, 0), h-1)
		return float64(src[(y*w+x)*3+c])
	}
	for y := range h {
		for x := range w {
			for c := range 3 {
				var b float64
				for dy := -1; dy <= 1; dy++ {
					for dx := -1; dx <= 1; dx++ {
						b += float64((2-dy*dy)*(2-dx*dx)) * at(x+dx, y+dy, c)
					}
				}
				i := (y*w+x)*3 + c
				img.Pix[i] = float32(float64(src[i]) + float64(amount)*(float64(src[i])-b/16))
			}
		}
	}
}

// TestUnsharpMatchesReference: the band-wise, copy-free unsharp mask equals
// the direct one (to float32 rounding) for any number of processors,
// including more processors than rows and bands of one row, edges
// included.
func TestUnsharpMatchesReference(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(prev)
	r := rand.New(rand.NewSource(3))
	for _, sz := range [][2]int{{3, 3}, {17, 5}, {64, 41}, {5, 200}} {
		src := NewImage(sz[0], sz[1])
		for i := range src.Pix {
			src.Pix[i] = r.Float32()
		}
		want := Image{W: src.W, H: src.H, Pix: append([]float32(nil), src.Pix...)}
		unsharpReference(want, 0.8)
		for _, procs := range []int{1, 2, 3, 7} {
			runtime.GOMAXPROCS(procs)
			got := Image{W: src.W, H: src.H, Pix: append([]float32(nil), src.Pix...)}
			unsharp(got, 0.8)
			for i := range want.Pix {
				if math.Abs(float64(got.Pix[i]-want.Pix[i])) > 1e-5 {
					t.Fatalf("%v, %d procs: sample %d (row %d) = %v, want %v", sz, procs, i, i/(3*src.W), got.Pix[i], want.Pix[i])
				}
			}
		}
	}
}
