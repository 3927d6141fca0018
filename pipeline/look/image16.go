package look

import (
	"fmt"
	"math"
)

// Image16 is a linear-light RGB image stored compactly as 16-bit codes
// and possibly turned: the image it stands for is W×H pixels whose value
// is code·Scale, stored turned upright by Flip (a LibRaw flip code, as
// pipeline.Oriented reads an image: bit 2 swaps rows and columns, then
// bit 1 mirrors vertically and bit 0 horizontally) as UH rows of UW
// pixels of interleaved R, G, B codes (UW, UH = W, H, swapped when
// Flip&4), in bands of Band rows: stored row y is
// Rows[y/Band][3·UW·(y mod Band) : 3·UW·(y mod Band + 1)]. A streamed
// conversion that must measure the whole camera image (the exposure
// anchor, the camera look) keeps its finished rows so, 6 bytes a pixel,
// in the order it makes them, and lets each band go once it is encoded.
type Image16 struct {
	W, H  int
	Rows  [][]uint16
	Band  int
	Scale float64
	Flip  int
}

// Row returns stored row y (3·UW codes; a view).
func (m Image16) Row(y int) []uint16 {
	uw, _ := m.upright()
	i := 3 * uw * (y % m.Band)
	return m.Rows[y/m.Band][i : i+3*uw : i+3*uw]
}

// upright returns the size of the stored (turned) image.
func (m Image16) upright() (int, int) {
	if m.Flip&4 != 0 {
		return m.H, m.W
	}
	return m.W, m.H
}

func (m Image16) check() error {
	if m.W <= 0 || m.H <= 0 || m.Band <= 0 || !(m.Scale > 0) {
		return fmt.Errorf("look: 16-bit image %d×%d in bands of %d rows with scale %g, want sizes and a scale > 0", m.W, m.H, m.Band, m.Scale)
	}
	uw, uh := m.upright()
	if len(m.Rows) != (uh+m.Band-1)/m.Band {
		return fmt.Errorf("look: 16-bit image of %d rows in %d bands of %d", uh, len(m.Rows), m.Band)
	}
	for k, b := range m.Rows {
		if n := min(m.Band, uh-k*m.Band); len(b) < 3*uw*n {
			return fmt.Errorf("look: 16-bit image's band %d has %d values, want %d", k, len(b), 3*uw*n)
		}
	}
	return nil
}

// turned returns the rectangle [x0, x1)×[y0, y1) of the stored image that
// holds the pixels [a0, a1)×[b0, b1) of the image m stands for.
func (m Image16) turned(a0, a1, b0, b1 int) (x0, x1, y0, y1 int) {
	if m.Flip&1 != 0 {
		a0, a1 = m.W-a1, m.W-a0
	}
	if m.Flip&2 != 0 {
		b0, b1 = m.H-b1, m.H-b0
	}
	if m.Flip&4 != 0 {
		return b0, b1, a0, a1
	}
	return a0, a1, b0, b1
}

// Reduce16 is Reduce on the image m stands for (cells in its own
// orientation, not the stored one's): the same cells ⌊i·W/gw⌋, the means
// of the codes times Scale (summed exactly as integers, so the order the
// stored image is read in does not matter), and, if clip > 0, the
// fraction of each cell's pixels with any channel's code·Scale ≥ clip.
// It gives Reduce's cells of the float image the codes were rounded from
// within the rounding (Scale/2 a value). Errors: as Reduce's.
func Reduce16(m Image16, gw, gh int, clip float32) (Image, []float32, error) {
	if err := m.check(); err != nil {
		return Image{}, nil, err
	}
	if err := reducible(m.W, m.H, gw, gh); err != nil {
		return Image{}, nil, err
	}
	out := Image{W: gw, H: gh, Pix: make([]float32, 3*gw*gh)}
	var frac []float32
	// A code counts as clipped at clipCode = ⌈clip/Scale⌉ and above
	// (code·Scale ≥ clip); none does when that is beyond the codes.
	count := false
	var clipCode uint16
	if clip > 0 {
		frac = make([]float32, gw*gh)
		if c := math.Ceil(float64(clip) / m.Scale); c <= 65535 {
			count, clipCode = true, uint16(c)
		}
	}
	for j := range gh {
		b0, b1 := j*m.H/gh, (j+1)*m.H/gh
		for i := range gw {
			a0, a1 := i*m.W/gw, (i+1)*m.W/gw
			x0, x1, y0, y1 := m.turned(a0, a1, b0, b1)
			var s [3]uint64
			nclip := 0
			for y := y0; y < y1; y++ {
				row := m.Row(y)[3*x0 : 3*x1]
				for k := 0; k+2 < len(row); k += 3 {
					r, g, b := row[k], row[k+1], row[k+2]
					s[0] += uint64(r)
					s[1] += uint64(g)
					s[2] += uint64(b)
					if count && (r >= clipCode || g >= clipCode || b >= clipCode) {
						nclip++
					}
				}
			}
			n := float64((b1 - b0) * (a1 - a0))
			o := 3 * (j*gw + i)
			for c := range 3 {
				out.Pix[o+c] = float32(float64(s[c]) * m.Scale / n)
			}
			if frac != nil {
				frac[j*gw+i] = float32(float64(nclip) / n)
			}
		}
	}
	return out, frac, nil
}

// ReduceSub16 is ReduceSub on the image m stands for (Reduce16 to the
// sub-cells). Errors: as ReduceSub's.
func ReduceSub16(m Image16, gw, gh, maxSub int) (SubGrid, error) {
	if err := m.check(); err != nil {
		return SubGrid{}, err
	}
	return subGridOf(m.W, m.H, gw, gh, maxSub, func(sw, sh int) (Image, error) {
		img, _, err := Reduce16(m, sw, sh, 0)
		return img, err
	})
}
