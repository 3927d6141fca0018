package look

import (
	"math"

	"github.com/rawbatch/rawbatch/pipeline/colour"
)

// matrixFit is the least-squares colour-correction matrix of the camera
// look (docs/look.md, "Model capacity"): M = I + D in the preview's
// linear space with D·(1,1,1) = 0 (every row of M sums to 1, so neutral
// stays neutral and white stays white), fitted on cells mid-tone in the
// preview and unclipped in the raw so that M·s ≈ u, where s is the
// scene colour after gains and exposure and u the preview taken back
// through the render (the tone curve inverted in the tone space, the
// saturation undone). Each cell's residual is divided by the luminance
// of u (a colour error relative to its brightness, as ΔE2000 sees it),
// and cells whose relative error stays above matrixCap after the first
// solve are dropped (mismatched cells must not pull the fit). It returns
// D (zero when there are too few cells).
func matrixFit(s, u [][3]float64, lum [3]float64) colour.Mat3 {
	solve := func(keep func(i int) bool) (d colour.Mat3, n int) {
		// Row r of D is (p, q, −p−q): D_r·s = p·(s0−s2) + q·(s1−s2).
		var ata [3][2][2]float64
		var atb [3][2]float64
		for i := range s {
			if !keep(i) {
				continue
			}
			y := luminance(u[i], lum)
			w := 1 / (y * y)
			a, b := s[i][0]-s[i][2], s[i][1]-s[i][2]
			for r := range 3 {
				e := u[i][r] - s[i][r]
				ata[r][0][0] += w * a * a
				ata[r][0][1] += w * a * b
				ata[r][1][1] += w * b * b
				atb[r][0] += w * a * e
				atb[r][1] += w * b * e
			}
			n++
		}
		if n < MinWBCells {
			return colour.Mat3{}, n
		}
		for r := range 3 {
			det := ata[r][0][0]*ata[r][1][1] - ata[r][0][1]*ata[r][0][1]
			if !(math.Abs(det) > 1e-12) {
				return colour.Mat3{}, n
			}
			p := (atb[r][0]*ata[r][1][1] - atb[r][1]*ata[r][0][1]) / det
			q := (atb[r][1]*ata[r][0][0] - atb[r][0]*ata[r][0][1]) / det
			d[r] = [3]float64{p, q, -p - q}
		}
		return d, n
	}
	d, _ := solve(func(int) bool { return true })
	m := colour.Identity3
	for r := range 3 {
		for c := range 3 {
			m[r][c] += d[r][c]
		}
	}
	d, _ = solve(func(i int) bool {
		v := m.Apply(s[i])
		y := luminance(u[i], lum)
		var e float64
		for r := range 3 {
			e = max(e, math.Abs(v[r]-u[i][r])/y)
		}
		return e <= matrixCap
	})
	return d
}

// matrixCap is the largest relative colour error (per channel, over the
// luminance) of a cell kept for the second solve of matrixFit: 0.5 is a
// colour far outside what a 3×3 correction of a camera matrix explains.
const matrixCap = 0.5

// blendMatrix returns I + w·d.
func blendMatrix(d colour.Mat3, w float64) colour.Mat3 {
	m := colour.Identity3
	for r := range 3 {
		for c := range 3 {
			m[r][c] += w * d[r][c]
		}
	}
	return m
}
