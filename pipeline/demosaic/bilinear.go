package demosaic

import "github.com/rawbatch/rawbatch/pipeline/internal/par"

// Bilinear demosaics c into dst (W×H×3 float32, interleaved, at least
// 3·W·H values): each missing colour is the mean of the nearest samples of
// that colour in the 3×3 neighbourhood (the two or four adjacent ones, or
// the four diagonal ones), samples outside the image left out. The
// baseline of the quality table; any W, H ≥ 1. Errors: an invalid CFA
// (ErrNotBayer, sizes).
func Bilinear(c CFA, dst []float32) error {
	if err := c.check(dst); err != nil {
		return err
	}
	w, h := c.W, c.H
	rows(c.Threads, (h+par.Block-1)/par.Block, func(blo, bhi int) {
		lo, hi := blo*par.Block, min(bhi*par.Block, h)
		// Three normalised rows around y (nil outside the image).
		rows := [3][]float32{make([]float32, w), make([]float32, w), make([]float32, w)}
		load := func(i, y int) {
			if y >= 0 && y < h {
				c.normRow(y, 0, rows[i][:w])
			}
		}
		for y := lo; y < hi; y++ {
			for i := range 3 {
				load(i, y-1+i)
			}
			for x := range w {
				var sum, wt [3]float32
				for dy := -1; dy <= 1; dy++ {
					yy := y + dy
					if yy < 0 || yy >= h {
						continue
					}
					for dx := -1; dx <= 1; dx++ {
						xx := x + dx
						if xx < 0 || xx >= w {
							continue
						}
						// Kernel [1 2 1]ᵀ[1 2 1]: the weights that make
						// each colour's nearest samples count equally.
						k := float32((2 - dx*dx) * (2 - dy*dy))
						col := c.colourAt(xx, yy)
						sum[col] += k * rows[dy+1][xx]
						wt[col] += k
					}
				}
				o := dst[(y*w+x)*3 : (y*w+x)*3+3]
				own := c.colourAt(x, y)
				for ch := range 3 {
					switch {
					case ch == own:
						o[ch] = rows[1][x]
					case wt[ch] > 0:
						o[ch] = sum[ch] / wt[ch]
					default:
						o[ch] = 0
					}
				}
			}
		}
	})
	return nil
}
