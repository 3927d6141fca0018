package pipeline

import "github.com/rawbatch/rawbatch/pipeline/internal/par"

// Image is an RGB image of W×H pixels held as interleaved float32 samples:
// Pix[(y*W+x)*3+c] is channel c (R, G, B) of the pixel in column x, row y,
// rows top to bottom. What the numbers mean (scene-referred linear camera
// RGB, linear working space, linear output space) depends on the stage that
// produced it; 1.0 is the white level of the decode.
type Image struct {
	W, H int
	Pix  []float32
}

// NewImage allocates a black W×H×3 float32 image (12 bytes per pixel).
func NewImage(w, h int) Image { return Image{W: w, H: h, Pix: make([]float32, w*h*3)} }

// parallel calls f on disjoint runs of whole rows of m.Pix that together
// cover it, on up to GOMAXPROCS goroutines (par.Rows), for per-sample
// operations.
func (m Image) parallel(f func(pix []float32)) {
	row := m.W * 3
	par.Rows(m.H, func(lo, hi int) { f(m.Pix[lo*row : hi*row]) })
}

// Bytes returns the size of the pixel buffer in bytes.
func (m Image) Bytes() int64 { return int64(len(m.Pix)) * 4 }

// At returns the three channels of pixel (x, y).
func (m Image) At(x, y int) [3]float32 {
	i := (y*m.W + x) * 3
	return [3]float32{m.Pix[i], m.Pix[i+1], m.Pix[i+2]}
}
