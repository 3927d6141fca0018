package synthdng

import (
	"math"

	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// LensChart is a synthetic chart photographed through a made-up lens with
// known faults, in lensfun's own models (lensfun 0.3 documentation,
// "Lens calibration models"), for the lens-correction tests: the faults
// are those of a lensfun profile (testdata/lensfun/rawbatch-test.xml), so
// correcting with that profile must undo them.
//
// The chart itself (in the ideal, corrected image) is a grey grid of dark
// lines on a white field, or a flat field when Spacing is 0. Positions are
// in CFA pixels with pixel centres at integers and the optical centre at
// ((Width−1)/2, (Height−1)/2). A site (x, y) of CFA colour c shows the
// chart at u = D⁻¹(o + (q − o)/k_c), q = (x, y), o the centre, k_c = KR,
// 1, KB (lensfun's linear TCA model: the red and blue planes scaled about
// the centre), D lensfun's poly3 distortion r_d = r_u·(1 − K1 + K1·r_u²)
// in radii normalised to half the short side, times the pa vignetting
// 1 + k1·r² + k2·r⁴ + k3·r⁶ with r normalised to half the diagonal (1 at
// the corners).
type LensChart struct {
	// Width, Height: the CFA size in pixels (even).
	Width, Height int
	// Spacing is the distance of the grid lines in pixels of the ideal
	// image (a line through the centre); 0 for a flat field.
	Spacing float64
	// LineSigma is the lines' Gaussian profile σ in pixels (0: 1.2);
	// LineDepth how much they darken at their centre (0: 0.8).
	LineSigma, LineDepth float64
	// K1 is the poly3 distortion (negative: barrel); 0 none.
	K1 float64
	// KR, KB scale the red and blue planes (0 means 1).
	KR, KB float64
	// Vignetting are the pa model's k1, k2, k3 (all 0: none).
	Vignetting [3]float64
	// Level is the chart's white as a fraction of the white level (0:
	// 0.5).
	Level float64
	// Make, Model, Lens (EXIF LensModel, 42036, when not ""), FocalLength
	// (mm) and FNumber go to the file's tags.
	Make, Model, Lens    string
	FocalLength, FNumber float64
}

// XYZToSRGB is the inverse of SRGBToXYZ: as a DNG ColorMatrix1 it makes
// camera RGB equal to linear sRGB, so that a converter's output channels
// are the camera's (no channel mixing in the lens tests).
var XYZToSRGB = invert3(SRGBToXYZ)

func invert3(m [3][3]float64) [3][3]float64 {
	det := m[0][0]*(m[1][1]*m[2][2]-m[1][2]*m[2][1]) - m[0][1]*(m[1][0]*m[2][2]-m[1][2]*m[2][0]) + m[0][2]*(m[1][0]*m[2][1]-m[1][1]*m[2][0])
	var r [3][3]float64
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			a, b := (j+1)%3, (j+2)%3
			c, d := (i+1)%3, (i+2)%3
			r[i][j] = (m[a][c]*m[b][d] - m[a][d]*m[b][c]) / det
		}
	}
	return r
}

// Spec returns the DNG of the chart: black 0, white 65535, camera RGB =
// linear sRGB (XYZToSRGB), neutral as-shot white balance.
func (c LensChart) Spec() Spec {
	sigma, depth, level := c.LineSigma, c.LineDepth, c.Level
	if sigma == 0 {
		sigma = 1.2
	}
	if depth == 0 {
		depth = 0.8
	}
	if level == 0 {
		level = 0.5
	}
	k := [3]float64{c.KR, 1, c.KB}
	for i := range k {
		if k[i] == 0 {
			k[i] = 1
		}
	}
	ox, oy := float64(c.Width-1)/2, float64(c.Height-1)/2
	norm := float64(min(c.Width, c.Height)-1) / 2
	diag := math.Hypot(ox, oy)
	line := func(t float64) float64 {
		if c.Spacing == 0 {
			return 1
		}
		d := math.Remainder(t, c.Spacing)
		return 1 - depth*math.Exp(-d*d/(2*sigma*sigma))
	}
	scene := func(x, y, ch int) float64 {
		qx, qy := float64(x)-ox, float64(y)-oy
		// Undo TCA, then distortion: the ideal position shown here.
		dx, dy := qx/k[ch]/norm, qy/k[ch]/norm
		s := c.undistort(math.Hypot(dx, dy))
		ux, uy := dx*s*norm, dy*s*norm
		r2 := (qx*qx + qy*qy) / (diag * diag)
		v := 1 + r2*(c.Vignetting[0]+r2*(c.Vignetting[1]+r2*c.Vignetting[2]))
		return level * v * line(ux) * line(uy)
	}
	cm := QuantizeColorMatrix(XYZToSRGB)
	s := Spec{Width: c.Width, Height: c.Height, WhiteLevel: 65535, ColorMatrix1: cm, AsShotNeutral: NeutralFor(cm),
		Make: c.Make, Model: c.Model, FocalLength: c.FocalLength, FNumber: c.FNumber, Scene: scene}
	if c.Lens != "" {
		s.Tags = append(s.Tags, Tag{Dir: tifftag.DirExif, ID: tifftag.LensModel, ASCII: c.Lens})
	}
	return s
}

// undistort returns r_u/r_d for the distorted radius rd (normalised):
// the root of r_u·(1 − K1 + K1·r_u²) = rd nearest rd, by Newton's method.
func (c LensChart) undistort(rd float64) float64 {
	if c.K1 == 0 || rd == 0 {
		return 1
	}
	ru := rd
	for range 20 {
		f := ru*(1-c.K1+c.K1*ru*ru) - rd
		ru -= f / (1 - c.K1 + 3*c.K1*ru*ru)
	}
	return ru / rd
}
