package look

import (
	"fmt"
	"math"
)

// Image is a linear-light RGB image: W×H pixels, Pix holds W×H×3 float32
// interleaved R, G, B, rows top to bottom. Its colour space is whatever the
// caller states beside it.
type Image struct {
	W, H int
	Pix  []float32
}

// At returns pixel (x, y) as float64 R, G, B.
func (m Image) At(x, y int) [3]float64 {
	i := 3 * (y*m.W + x)
	return [3]float64{float64(m.Pix[i]), float64(m.Pix[i+1]), float64(m.Pix[i+2])}
}

// cell returns value triple k (pixel k in row-major order).
func (m Image) cell(k int) [3]float64 {
	return [3]float64{float64(m.Pix[3*k]), float64(m.Pix[3*k+1]), float64(m.Pix[3*k+2])}
}

func (m Image) check() error {
	if m.W <= 0 || m.H <= 0 || len(m.Pix) < 3*m.W*m.H {
		return fmt.Errorf("look: image %d×%d with %d values, want W×H×3", m.W, m.H, len(m.Pix))
	}
	return nil
}

// GridWidth is the width in cells of the comparison grid: looks are measured
// on images reduced to 256 px wide in linear light.
const GridWidth = 256

// GridSize returns the grid size for a w×h image reduced to gridW cells
// wide, keeping the aspect ratio: gridW × round(gridW·h/w) (at least 1).
// An image narrower than gridW keeps its own size.
func GridSize(w, h, gridW int) (gw, gh int) {
	if w <= gridW {
		return w, h
	}
	gh = int(math.Round(float64(gridW) * float64(h) / float64(w)))
	return gridW, max(gh, 1)
}

// ScoreGridSize is the grid, in sensor orientation, on which ScorePreview
// compares the output of a w×h (sensor orientation) image with its
// preview: GridSize at GridWidth cells along the long side, whatever the
// orientation the picture is shown in. The grid is so the same for a
// picture shot upright or turned: the cells hold as many of the
// preview's pixels (a 256-wide grid across a portrait picture's short
// side made cells of under 3 preview pixels on a 1024-pixel preview, too
// small for the preview's compression and registration, and the anchor
// found the estimate inconsistent). The looks' fits use it so that they
// score the cells the conversion is scored on.
func ScoreGridSize(w, h int) (gw, gh int) {
	if h > w {
		gh, gw = GridSize(h, w, GridWidth)
		return gw, gh
	}
	return GridSize(w, h, GridWidth)
}

// reducible reports why a w×h image cannot be reduced to gw×gh cells
// (nil if it can: 0 < gw ≤ w, 0 < gh ≤ h).
func reducible(w, h, gw, gh int) error {
	if gw <= 0 || gh <= 0 || gw > w || gh > h {
		return fmt.Errorf("look: cannot reduce %d×%d to %d×%d", w, h, gw, gh)
	}
	return nil
}

// Reduce box-filters m (linear light, so averages are physical) to gw×gh
// cells: cell (i, j) is the mean of the pixels x in [⌊i·W/gw⌋, ⌊(i+1)·W/gw⌋)
// and y likewise. gw ≤ W and gh ≤ H are required; the result is a
// gw×gh×3 Image. If clip > 0, Reduce also returns the fraction of each
// cell's pixels with any channel ≥ clip (len gw·gh), else nil.
func Reduce(m Image, gw, gh int, clip float32) (Image, []float32, error) {
	if err := m.check(); err != nil {
		return Image{}, nil, err
	}
	if err := reducible(m.W, m.H, gw, gh); err != nil {
		return Image{}, nil, err
	}
	out := Image{W: gw, H: gh, Pix: make([]float32, 3*gw*gh)}
	var frac []float32
	if clip > 0 {
		frac = make([]float32, gw*gh)
	}
	for j := 0; j < gh; j++ {
		y0, y1 := j*m.H/gh, (j+1)*m.H/gh
		for i := 0; i < gw; i++ {
			x0, x1 := i*m.W/gw, (i+1)*m.W/gw
			var s [3]float64
			nclip := 0
			for y := y0; y < y1; y++ {
				row := m.Pix[3*(y*m.W+x0) : 3*(y*m.W+x1)]
				for k := 0; k < len(row); k += 3 {
					r, g, b := row[k], row[k+1], row[k+2]
					s[0] += float64(r)
					s[1] += float64(g)
					s[2] += float64(b)
					if clip > 0 && (r >= clip || g >= clip || b >= clip) {
						nclip++
					}
				}
			}
			n := float64((y1 - y0) * (x1 - x0))
			o := 3 * (j*gw + i)
			for c := range 3 {
				out.Pix[o+c] = float32(s[c] / n)
			}
			if frac != nil {
				frac[j*gw+i] = float32(float64(nclip) / n)
			}
		}
	}
	return out, frac, nil
}

// CropToAspect returns the centred crop of m with aspect ratio w:h (the
// largest such rectangle inside m). It copies the pixels.
func CropToAspect(m Image, w, h int) Image {
	cw, ch := m.W, m.H
	if float64(m.W)*float64(h) > float64(m.H)*float64(w) {
		cw = int(math.Round(float64(m.H) * float64(w) / float64(h)))
	} else {
		ch = int(math.Round(float64(m.W) * float64(h) / float64(w)))
	}
	cw, ch = max(1, min(cw, m.W)), max(1, min(ch, m.H))
	if cw == m.W && ch == m.H {
		return m
	}
	x0, y0 := (m.W-cw)/2, (m.H-ch)/2
	out := Image{W: cw, H: ch, Pix: make([]float32, 3*cw*ch)}
	for y := 0; y < ch; y++ {
		copy(out.Pix[3*y*cw:3*(y+1)*cw], m.Pix[3*((y0+y)*m.W+x0):3*((y0+y)*m.W+x0+cw)])
	}
	return out
}

// luminance returns Y = w·rgb for the luminance weights w (the Y row of a
// space's RGB→XYZ matrix).
func luminance(rgb [3]float64, w [3]float64) float64 {
	return w[0]*rgb[0] + w[1]*rgb[1] + w[2]*rgb[2]
}
