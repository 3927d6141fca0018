package highlight

import "math"

// The highlight modes work on the demosaiced, white-balanced camera RGB that
// LibRaw's Process (highlight = 0, after RescaleRaw) and CopyImage give:
// interleaved float32, 3 channels, W×H, where every channel clips at 1.0.
// docs/highlights.md says why they run there and not on the CFA data.

// DefaultThreshold is the level (fraction of the clip level 1.0) from which
// a pixel counts as clipped: any channel at or above it. Below 1 because
// demosaicing (AHD) blends clipped photosites with their neighbours at the
// edge of a clipped area.
const DefaultThreshold float32 = 0.97

// Clip is the `clip` highlight mode, in place on pix (W×H×3 white-balanced
// camera RGB, clip level 1): every channel is clamped to [0, 1], and a pixel
// whose channels are all at or above threshold becomes exactly (1, 1, 1),
// removing what the demosaic left inside clipped areas. With the white
// level from the data (Equalise) all channels clip together, so clipped
// areas are neutral white; pixels with only some channels clipped keep them
// at 1 (the hue shift of per-channel clipping). It returns pix.
func Clip(pix []float32, w, h int, threshold float32) []float32 {
	for i := 0; i+2 < len(pix) && i < w*h*3; i += 3 {
		p := pix[i : i+3 : i+3]
		all := true
		for c := range p {
			p[c] = min(max(p[c], 0), 1)
			if p[c] < threshold {
				all = false
			}
		}
		if all {
			p[0], p[1], p[2] = 1, 1, 1
		}
	}
	return pix
}

// ReconstructRadius returns the radius in pixels of the neighbourhood
// Reconstruct takes colour from, which is also the width of its blend into
// white: 1/200 of the long edge, between 8 and 32 (a 6000-pixel image: 30).
func ReconstructRadius(w, h int) int { return min(32, max(8, max(w, h)/200)) }

// minChromaLevel is the brightness (max channel) below which an unclipped
// pixel gives no colour: the ratios of dark pixels are mostly noise.
const minChromaLevel = 0.05

// Reconstruct is the `reconstruct` highlight mode, in place on pix (W×H×3
// white-balanced camera RGB, clip level 1), after the idea of darktable's
// "inpaint opposed": a clipped pixel takes the colour of the unclipped
// pixels near it.
//
// A pixel is clipped when any channel is at or above threshold; others are
// not changed at all. For a clipped pixel p with peak V = max channel, the
// colour of its neighbourhood is the mean, over the unclipped pixels
// brighter than minChromaLevel within ReconstructRadius r (a
// (2r+1)×(2r+1) box), of their chromaticity v / max(v), scaled again to a
// maximum of 1: ρ. Its weight a = min(1, 2·u), u the fraction of the box
// that is unclipped: 1 at the edge of a clipped area (half the box outside
// it), falling linearly to 0 at r pixels inside. The result is
//
//	out = V · ((1 − a)·(1, 1, 1) + a·ρ),
//
// a mix of neutral white and the neighbours' colour at the same peak, so
// its hue is either neutral or the neighbours' hue, never another (no
// magenta or cyan from unequal clipping), and it blends into white
// smoothly across r pixels. Values stay in [0, V] ⊂ [0, 1]; a clipped area
// with no bright unclipped neighbour becomes neutral. It returns pix.
func Reconstruct(pix []float32, w, h int, threshold float32) []float32 {
	n := w * h
	if n <= 0 || len(pix) < 3*n {
		return pix
	}
	r := ReconstructRadius(w, h)
	clipped := make([]bool, n)
	any := false
	for i := range n {
		p := pix[3*i : 3*i+3 : 3*i+3]
		if p[0] >= threshold || p[1] >= threshold || p[2] >= threshold {
			clipped[i] = true
			any = true
		}
	}
	if !any {
		return pix
	}
	// Box sums over the (2r+1)² window of: the chromaticity of unclipped
	// bright pixels (3), their count, and the count of unclipped pixels.
	// Horizontal sums per row, kept for the 2r+1 rows of the window in a
	// ring, and a running vertical sum of them: memory O(r·w), not O(w·h).
	win := 2*r + 1
	ring := make([][][5]float64, win)
	for k := range ring {
		ring[k] = make([][5]float64, w)
	}
	prefix := make([][5]float64, w+1)
	rowSums := func(y int, dst [][5]float64) {
		for x := range w {
			var f [5]float64
			i := y*w + x
			if !clipped[i] {
				f[4] = 1
				p := pix[3*i : 3*i+3 : 3*i+3]
				if m := max(p[0], p[1], p[2]); m > minChromaLevel {
					for c := range 3 {
						f[c] = float64(max(p[c], 0) / m)
					}
					f[3] = 1
				}
			}
			for k := range f {
				prefix[x+1][k] = prefix[x][k] + f[k]
			}
		}
		for x := range w {
			x0, x1 := max(0, x-r), min(w-1, x+r)
			for k := range 5 {
				dst[x][k] = prefix[x1+1][k] - prefix[x0][k]
			}
		}
	}
	vert := make([][5]float64, w)
	addRow := func(row [][5]float64, sign float64) {
		for x := range vert {
			for k := range 5 {
				vert[x][k] += sign * row[x][k]
			}
		}
	}
	for y := range min(r, h) {
		rowSums(y, ring[y%win])
		addRow(ring[y%win], 1)
	}
	for y := range h {
		// The window now holds rows y−r .. y+r (those that exist). The
		// chromaticity comes only from unclipped pixels, which this loop
		// never changes, so working in place is safe.
		if out := y - r - 1; out >= 0 {
			addRow(ring[out%win], -1)
		}
		if in := y + r; in < h {
			rowSums(in, ring[in%win])
			addRow(ring[in%win], 1)
		}
		y0, y1 := max(0, y-r), min(h-1, y+r)
		for x := range w {
			i := y*w + x
			if !clipped[i] {
				continue
			}
			x0, x1 := max(0, x-r), min(w-1, x+r)
			s := vert[x]
			p := pix[3*i : 3*i+3 : 3*i+3]
			v := math.Min(float64(max(p[0], p[1], p[2])), 1)
			var rho [3]float64
			a := 0.0
			if s[3] > 0 {
				rho = [3]float64{s[0] / s[3], s[1] / s[3], s[2] / s[3]}
				if m := math.Max(rho[0], math.Max(rho[1], rho[2])); m > 0 {
					for c := range rho {
						rho[c] /= m
					}
					area := float64((x1 - x0 + 1) * (y1 - y0 + 1))
					a = math.Min(1, 2*s[4]/area)
				}
			}
			for c := range 3 {
				p[c] = float32(v * ((1 - a) + a*rho[c]))
			}
		}
	}
	return pix
}
