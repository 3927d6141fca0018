package synthdng

import "math"

// Ground-truth RGB images for demosaic quality measurements: an RGB image is re-mosaiced into the RGGB CFA of a DNG
// (Mosaic), a converter demosaics it, and the result is compared with the
// image itself.

// RGB is an interleaved linear RGB image: W×H pixels, Pix[(y*W+x)*3+c],
// c 0 R, 1 G, 2 B, values in [0, 1].
type RGB struct {
	W, H int
	Pix  []float32
}

// Mosaic returns the Spec of a DNG whose raw CFA samples img (its size
// rounded down to even) at each site's colour: black 0, white 65535,
// AsShotNeutral 1, 1, 1 (so the white-balance multipliers are 1 and the
// demosaiced camera RGB is img itself), the default colour matrix.
// Keep img below 0.75 so that no converter takes its maximum for a
// clipping level.
func Mosaic(img RGB) Spec {
	return Spec{
		Width: img.W &^ 1, Height: img.H &^ 1, WhiteLevel: 65535, AsShotNeutral: [3]float64{1, 1, 1},
		Model: "Mosaic",
		Scene: func(x, y, c int) float64 { return float64(img.Pix[(y*img.W+x)*3+c]) },
	}
}

// tint is a colour per channel for the synthetic charts: a grey level v
// becomes (lo + (hi − lo)·v) per channel, so colour edges are not
// neutral.
func tint(v float64, lo, hi [3]float64) [3]float64 {
	return [3]float64{lo[0] + (hi[0]-lo[0])*v, lo[1] + (hi[1]-lo[1])*v, lo[2] + (hi[2]-lo[2])*v}
}

// fill renders f(x, y) (each pixel the mean of 4×4 samples inside it, so
// edges are antialiased as a lens would leave them) into an RGB image.
func fill(w, h int, f func(x, y float64) [3]float64) RGB {
	img := RGB{W: w, H: h, Pix: make([]float32, w*h*3)}
	for y := range h {
		for x := range w {
			var s [3]float64
			for sy := range 4 {
				for sx := range 4 {
					c := f(float64(x)+(float64(sx)+0.5)/4, float64(y)+(float64(sy)+0.5)/4)
					for k := range 3 {
						s[k] += c[k]
					}
				}
			}
			for k := range 3 {
				img.Pix[(y*w+x)*3+k] = float32(s[k] / 16)
			}
		}
	}
	return img
}

// Edges is a chart of straight colour edges: four bands of stripes of
// widths 16, 8, 4 and 3 pixels, each tilted by 5° so that every phase of
// the CFA meets an edge, between a dark red-brown and a light blue-grey.
func Edges(w, h int) RGB {
	lo, hi := [3]float64{0.12, 0.05, 0.03}, [3]float64{0.45, 0.6, 0.7}
	tan := math.Tan(5 * math.Pi / 180)
	widths := []float64{16, 8, 4, 3}
	return fill(w, h, func(x, y float64) [3]float64 {
		band := min(int(y*float64(len(widths))/float64(h)), len(widths)-1)
		u := x + y*tan
		if int(math.Floor(u/widths[band]))%2 == 0 {
			return lo
		}
		return hi
	})
}

// ZonePlate is a radial chirp 0.5 + 0.45·cos(π·r²/(2·R)) (R the larger
// side), whose frequency rises from 0 at the centre to the Nyquist
// frequency at distance R, tinted between dark green and light orange.
func ZonePlate(w, h int) RGB {
	lo, hi := [3]float64{0.02, 0.06, 0.03}, [3]float64{0.7, 0.55, 0.3}
	r := float64(max(w, h))
	return fill(w, h, func(x, y float64) [3]float64 {
		dx, dy := x-float64(w)/2, y-float64(h)/2
		return tint(0.5+0.45*math.Cos(math.Pi*(dx*dx+dy*dy)/(2*r)), lo, hi)
	})
}

// SiemensStarSpokes is the number of dark-light spoke pairs of
// SiemensStar.
const SiemensStarSpokes = 36

// SiemensStar is a star of SiemensStarSpokes spoke pairs about the centre
// within radius min(w, h)/2 − 2 on a mid grey, dark blue against light
// yellow.
func SiemensStar(w, h int) RGB {
	lo, hi := [3]float64{0.03, 0.04, 0.12}, [3]float64{0.7, 0.65, 0.25}
	rmax := float64(min(w, h))/2 - 2
	return fill(w, h, func(x, y float64) [3]float64 {
		dx, dy := x-float64(w)/2, y-float64(h)/2
		if dx*dx+dy*dy > rmax*rmax {
			return [3]float64{0.2, 0.2, 0.2}
		}
		a := math.Atan2(dy, dx)
		if math.Sin(SiemensStarSpokes*a) >= 0 {
			return hi
		}
		return lo
	})
}

// SiemensStarEdges marks the pixels of SiemensStar(w, h) that lie on a
// spoke edge (within one pixel of it) at radii where a spoke is at least
// minWidth pixels wide, and inside the star.
func SiemensStarEdges(w, h int, minWidth float64) []bool {
	m := make([]bool, w*h)
	rmax := float64(min(w, h))/2 - 4
	// A spoke's width at radius r is π·r/SiemensStarSpokes.
	rmin := minWidth * SiemensStarSpokes / math.Pi
	for y := range h {
		for x := range w {
			dx, dy := float64(x)+0.5-float64(w)/2, float64(y)+0.5-float64(h)/2
			r := math.Hypot(dx, dy)
			if r < rmin || r > rmax {
				continue
			}
			// Distance to the nearest edge, along the arc: edges where
			// sin(n·a) = 0, every π/n radians.
			a := math.Atan2(dy, dx) * SiemensStarSpokes / math.Pi
			d := math.Abs(a-math.Round(a)) * math.Pi / SiemensStarSpokes * r
			m[y*w+x] = d <= 1
		}
	}
	return m
}
