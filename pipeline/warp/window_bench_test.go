package warp

import "testing"

// BenchmarkSampleRow3 samples one 6000-pixel row of three channels
// (Window.SampleRow3) through positions like a lens correction's: a
// radial scale of about 1 % with a per-channel difference (TCA) of 0.05 %,
// every tap inside the window. ns/op is one row (18000 samples).
func BenchmarkSampleRow3(b *testing.B) {
	const w, h, y = 6000, 4000, 2000
	win := Window{W: w, H: h, Lo: y - 40}
	for r := 0; r < 80; r++ {
		row := make([]float32, 3*w)
		for i := range row {
			row[i] = float32((i*7+r*13)%1000) / 1000
		}
		win.Rows = append(win.Rows, planarRows(row, w, 1)[0])
	}
	sx, sy := make([]float32, 3*w), make([]float32, 3*w)
	for ch := 0; ch < 3; ch++ {
		s := 0.99 + 0.0005*float64(ch)
		for x := 0; x < w; x++ {
			dx, dy := float64(x)-w/2, float64(y+17)-h/2
			r2 := (dx*dx + dy*dy) / (w * w / 4)
			f := s * (1 + 0.01*r2)
			sx[ch*w+x] = float32(w/2 + dx*f)
			sy[ch*w+x] = float32(h/2 + dy*f)
		}
	}
	out := make([]float32, 3*w)
	for b.Loop() {
		win.SampleRow3(sx, sy, out)
	}
}
