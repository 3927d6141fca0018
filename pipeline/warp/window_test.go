package warp

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestWindowSampleRow3: sampling rows held in separate buffers
// (Window.SampleRow3) gives exactly RemapInto's values on the whole image,
// inside and at the borders, as long as the window holds the rows the
// positions reach; a tap on a row outside it takes the nearest row held.
func TestWindowSampleRow3(t *testing.T) {
	const w, h = 37, 29
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]float32, w*h*3)
	for i := range src {
		src[i] = rng.Float32()
	}
	// Positions within ±4 rows of the output row, some past the borders.
	m := func(y, ch int, sx, sy []float32) {
		for x := range sx {
			sx[x] = float32(x) + 3*float32(math.Sin(float64(x+y+ch)))
			sy[x] = float32(y) + 4*float32(math.Cos(float64(2*x-y+ch)))
		}
	}
	want := Remap(src, w, h, 3, w, h, m)
	sx, sy := make([]float32, 3*w), make([]float32, 3*w)
	row := make([]float32, 3*w)
	for y := 0; y < h; y++ {
		lo, hi := max(0, y-6), min(h, y+7)
		win := Window{W: w, H: h, Lo: lo}
		for r := lo; r < hi; r++ {
			win.Rows = append(win.Rows, planarRows(src[r*w*3:(r+1)*w*3], w, 1)[0])
		}
		for ch := 0; ch < 3; ch++ {
			m(y, ch, sx[ch*w:(ch+1)*w], sy[ch*w:(ch+1)*w])
		}
		win.SampleRow3(sx, sy, row)
		for i, v := range row {
			if v != want[y*w*3+i] {
				t.Fatalf("row %d value %d: %v, RemapInto %v", y, i, v, want[y*w*3+i])
			}
		}
	}
	// Rows outside the window: the nearest one held.
	win := Window{W: w, H: h, Lo: 10, Rows: planarRows(src[10*w*3:11*w*3], w, 1)}
	for ch := 0; ch < 3; ch++ {
		for x := 0; x < w; x++ {
			sx[ch*w+x], sy[ch*w+x] = float32(x), 20
		}
	}
	win.SampleRow3(sx, sy, row)
	for i, v := range row {
		if math.Abs(float64(v-src[10*w*3+i])) > 1e-6 {
			t.Fatalf("value %d: %v, want row 10's %v", i, v, src[10*w*3+i])
		}
	}
}

// TestDeinterleave3: a row of each length 0 to 40 pixels (the vector
// loop's groups of eight and the tail) comes out as its reds, greens and
// blues in order.
func TestDeinterleave3(t *testing.T) {
	for w := 0; w <= 40; w++ {
		src := make([]float32, 3*w)
		for i := range src {
			src[i] = float32(i)
		}
		dst := make([]float32, 3*w)
		Deinterleave3(dst, src)
		for ch := range 3 {
			for x := range w {
				if got := dst[ch*w+x]; got != src[3*x+ch] {
					t.Fatalf("width %d: channel %d, pixel %d: %v, want %v", w, ch, x, got, src[3*x+ch])
				}
			}
		}
	}
}
