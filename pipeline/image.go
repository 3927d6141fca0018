package pipeline

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

// Bytes returns the size of the pixel buffer in bytes.
func (m Image) Bytes() int64 { return int64(len(m.Pix)) * 4 }

// At returns the three channels of pixel (x, y).
func (m Image) At(x, y int) [3]float32 {
	i := (y*m.W + x) * 3
	return [3]float32{m.Pix[i], m.Pix[i+1], m.Pix[i+2]}
}
