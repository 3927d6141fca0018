package synthdng

import (
	"fmt"
	"math"
)

// SRGBToXYZ is the IEC 61966-2-1:1999 (sRGB) linear RGB → CIE 1931 XYZ
// matrix, exactly as printed in the standard (4 decimals), row-major:
// XYZ(D65) = SRGBToXYZ · rgb for linear sRGB rgb. Y of the white R=G=B=1 is
// exactly 1. Values are dimensionless.
var SRGBToXYZ = [3][3]float64{
	{0.4124, 0.3576, 0.1805},
	{0.2126, 0.7152, 0.0722},
	{0.0193, 0.1192, 0.9505},
}

// D65WhiteXYZ is the CIE XYZ of the sRGB white R=G=B=1, i.e. the row sums of
// SRGBToXYZ: (0.9505, 1.0000, 1.0890). This is the IEC 61966-2-1 D65 white
// with Y normalised to 1; it differs from the DNG SDK's D65 derived from
// x,y = 0.3127,0.3290 (0.95046, 1, 1.08906) by < 1e-4 relative. It is used
// (rather than the x,y-derived value) so that sRGB white maps exactly to the
// neutral returned by NeutralFor.
var D65WhiteXYZ = [3]float64{
	SRGBToXYZ[0][0] + SRGBToXYZ[0][1] + SRGBToXYZ[0][2],
	SRGBToXYZ[1][0] + SRGBToXYZ[1][1] + SRGBToXYZ[1][2],
	SRGBToXYZ[2][0] + SRGBToXYZ[2][1] + SRGBToXYZ[2][2],
}

// DefaultColorMatrix is used by Write when Spec.ColorMatrix1 is all zero. It
// is a realistic XYZ(D65) → camera matrix, row-major (the D65 matrix that
// dcraw's adobe_coeff table lists for the Canon EOS 5D Mark II, ×1/10000), so
// converters exercise a non-trivial, non-diagonal matrix.
var DefaultColorMatrix = [3][3]float64{
	{0.4716, 0.0603, -0.0830},
	{-0.7798, 1.5474, 0.2480},
	{-0.1496, 0.1937, 0.6651},
}

// Fixed-point denominators used when writing rational tags. Readers see
// exactly n/den, so everything in this package that derives ground truth
// (ChartScene, NeutralFor, CameraRGB) uses the quantised values.
const (
	// ColorMatrixDenominator is the SRATIONAL denominator of ColorMatrix1 (50721).
	ColorMatrixDenominator = 10000
	// NeutralDenominator is the RATIONAL denominator of AsShotNeutral (50728).
	NeutralDenominator = 1000000
	// BaselineExposureDenominator is the SRATIONAL denominator of BaselineExposure (50730).
	BaselineExposureDenominator = 1000000
)

// QuantizeColorMatrix returns cm rounded to the n/ColorMatrixDenominator
// values that Write stores in ColorMatrix1 (tag 50721).
func QuantizeColorMatrix(cm [3][3]float64) [3][3]float64 {
	var q [3][3]float64
	for i := range 3 {
		for j := range 3 {
			q[i][j] = math.Round(cm[i][j]*ColorMatrixDenominator) / ColorMatrixDenominator
		}
	}
	return q
}

// QuantizeNeutral returns n rounded to the n/NeutralDenominator values that
// Write stores in AsShotNeutral (tag 50728).
func QuantizeNeutral(n [3]float64) [3]float64 {
	var q [3]float64
	for i := range 3 {
		q[i] = math.Round(n[i]*NeutralDenominator) / NeutralDenominator
	}
	return q
}

func mulMV(m [3][3]float64, v [3]float64) [3]float64 {
	return [3]float64{
		m[0][0]*v[0] + m[0][1]*v[1] + m[0][2]*v[2],
		m[1][0]*v[0] + m[1][1]*v[1] + m[1][2]*v[2],
		m[2][0]*v[0] + m[2][1]*v[1] + m[2][2]*v[2],
	}
}

// whiteScale is max_i (Q(cm)·D65WhiteXYZ)_i: the camera response to sRGB
// white before normalisation.
func whiteScale(q [3][3]float64) float64 {
	w := mulMV(q, D65WhiteXYZ)
	return math.Max(w[0], math.Max(w[1], w[2]))
}

// NeutralFor returns the AsShotNeutral (tag 50728) for ColorMatrix1 cm: the
// camera response to the D65 white, Q(cm)·D65WhiteXYZ, divided by its largest
// component (so the max is exactly 1) and rounded to n/NeutralDenominator,
// where Q is QuantizeColorMatrix. Write stores the result unchanged.
func NeutralFor(cm [3][3]float64) [3]float64 {
	q := QuantizeColorMatrix(cm)
	w := mulMV(q, D65WhiteXYZ)
	k := whiteScale(q)
	if k <= 0 {
		return [3]float64{1, 1, 1}
	}
	return QuantizeNeutral([3]float64{w[0] / k, w[1] / k, w[2] / k})
}

// CameraRGB returns the camera-space linear signal (relative to
// WhiteLevel−BlackLevel, before Spec.Scene clamping) that a linear sRGB (D65)
// colour rgb produces for ColorMatrix1 cm:
//
//	cam = Q(cm) · SRGBToXYZ · rgb / k,   k = max_i (Q(cm)·D65WhiteXYZ)_i
//
// Q is QuantizeColorMatrix. Dividing by k is the DNG 1.4 normalisation (the
// camera neutral with max component 1 corresponds to XYZ white with Y = 1), so
// sRGB white (1,1,1) gives exactly the (unrounded) neutral, whose largest
// channel is 1 = WhiteLevel. For a matrix already normalised so that k = 1
// this is plain Q(cm)·M·rgb. If k ≤ 0 (a nonsensical matrix) no division is
// done.
func CameraRGB(cm [3][3]float64, rgb [3]float64) [3]float64 {
	q := QuantizeColorMatrix(cm)
	cam := mulMV(q, mulMV(SRGBToXYZ, rgb))
	if k := whiteScale(q); k > 0 {
		for i := range cam {
			cam[i] /= k
		}
	}
	return cam
}

// Patch is a flat rectangle in displayed (upright) pixel coordinates,
// covering X0 ≤ x < X1, Y0 ≤ y < Y1, with a linear sRGB (D65) colour
// SRGBLinear (1 = diffuse white before ChartScene's gain).
type Patch struct {
	X0, Y0, X1, Y1 int
	SRGBLinear     [3]float64
}

// Chart is an upright chart of W×H displayed pixels (W, H even): a
// Background colour (linear sRGB) overlaid with Patches; a later patch covers
// earlier ones where they overlap.
type Chart struct {
	W, H       int
	Background [3]float64
	Patches    []Patch
}

// ValidOrientation reports whether o is a TIFF/EXIF Orientation value (1..8)
// or 0, which this package treats as 1.
func ValidOrientation(o int) bool { return o >= 0 && o <= 8 }

func normOrientation(o int) int {
	if o == 0 {
		return 1
	}
	return o
}

// Transposed reports whether EXIF orientation o swaps width and height
// (values 5–8).
func Transposed(o int) bool { return o >= 5 && o <= 8 }

// StoredSize returns the stored (sensor) array size w×h for an image that
// displays as dispW×dispH under EXIF orientation o: the same size for 0–4,
// swapped for 5–8.
func StoredSize(o, dispW, dispH int) (w, h int) {
	if Transposed(o) {
		return dispH, dispW
	}
	return dispW, dispH
}

// DisplayToStored maps a displayed pixel (dx, dy) to the stored pixel (x, y)
// it shows, for a stored array of w×h pixels and EXIF orientation o. These are
// the EXIF 2.32 (CIPA DC-008) Orientation semantics, where value o describes
// where the stored 0th row / 0th column appear when displayed:
//
//	1 top/left:     D(x,y) = S(x, y)
//	2 top/right:    D(x,y) = S(w-1-x, y)
//	3 bottom/right: D(x,y) = S(w-1-x, h-1-y)
//	4 bottom/left:  D(x,y) = S(x, h-1-y)
//	5 left/top:     D(x,y) = S(y, x)            (D is h×w)
//	6 right/top:    D(x,y) = S(y, h-1-x)        (rotate 90° clockwise to view)
//	7 right/bottom: D(x,y) = S(w-1-y, h-1-x)
//	8 left/bottom:  D(x,y) = S(w-1-y, x)        (rotate 90° anticlockwise to view)
//
// o = 0 is treated as 1. It panics for o outside 0..8.
func DisplayToStored(o, w, h, dx, dy int) (x, y int) {
	switch normOrientation(o) {
	case 1:
		return dx, dy
	case 2:
		return w - 1 - dx, dy
	case 3:
		return w - 1 - dx, h - 1 - dy
	case 4:
		return dx, h - 1 - dy
	case 5:
		return dy, dx
	case 6:
		return dy, h - 1 - dx
	case 7:
		return w - 1 - dy, h - 1 - dx
	case 8:
		return w - 1 - dy, dx
	}
	panic(fmt.Sprintf("synthdng: invalid EXIF orientation %d", o))
}

// StoredToDisplay is the inverse of DisplayToStored: it maps stored pixel
// (x, y) of a w×h stored array to the displayed pixel where it appears under
// EXIF orientation o. It panics for o outside 0..8.
func StoredToDisplay(o, w, h, x, y int) (dx, dy int) {
	switch normOrientation(o) {
	case 1:
		return x, y
	case 2:
		return w - 1 - x, y
	case 3:
		return w - 1 - x, h - 1 - y
	case 4:
		return x, h - 1 - y
	case 5:
		return y, x
	case 6:
		return h - 1 - y, x
	case 7:
		return h - 1 - y, w - 1 - x
	case 8:
		return y, w - 1 - x
	}
	panic(fmt.Sprintf("synthdng: invalid EXIF orientation %d", o))
}

// CFAColor returns the colour (0=R, 1=G, 2=B) of stored CFA site (x, y) for
// the RGGB pattern this package writes (CFAPattern 0,1,1,2, tag 33422).
func CFAColor(x, y int) int { return (x & 1) + (y & 1) }

// ChartScene renders chart c for EXIF orientation (0..8; 0 means 1) and
// returns the stored size w×h (Spec.Width, Spec.Height; transposed for 5–8)
// and a Spec.Scene function. The stored array is the inverse orientation of
// the chart (stored = inverse-orientation(display)), so a converter that
// applies the Orientation tag shows the chart upright.
//
// The value at a stored site of colour ch is gain·CameraRGB(colorMatrix, rgb)[ch]
// where rgb is the chart colour displayed there. With AsShotNeutral =
// NeutralFor(colorMatrix), a converter implementing the DNG 1.4 colour model
// (ColorMatrix1 at CalibrationIlluminant1 = D65, output linear sRGB without
// exposure/tone adjustments) reproduces rgb·gain, up to the 1e-6 rounding of
// the stored neutral; a white balanced camera-RGB output (e.g. dcraw -o 0 -w)
// gives CameraRGB[ch]/neutral[ch]·gain per channel. Values above 1 clip at
// WhiteLevel. It panics if orientation is outside 0..8.
func ChartScene(c Chart, orientation int, colorMatrix [3][3]float64, gain float64) (w, h int, scene func(x, y, ch int) float64) {
	if !ValidOrientation(orientation) {
		panic(fmt.Sprintf("synthdng: invalid EXIF orientation %d", orientation))
	}
	o := normOrientation(orientation)
	w, h = StoredSize(o, c.W, c.H)

	scale := func(rgb [3]float64) [3]float64 {
		v := CameraRGB(colorMatrix, rgb)
		return [3]float64{v[0] * gain, v[1] * gain, v[2] * gain}
	}
	bg := scale(c.Background)
	patches := make([]Patch, len(c.Patches))
	copy(patches, c.Patches)
	cams := make([][3]float64, len(patches))
	for i, p := range patches {
		cams[i] = scale(p.SRGBLinear)
	}
	// rows[dy] lists, topmost first, the patches covering displayed row dy,
	// so the per-site lookup only scans patches on that row.
	rows := make([][]int32, c.H)
	for i := len(patches) - 1; i >= 0; i-- {
		p := patches[i]
		for y := max(p.Y0, 0); y < min(p.Y1, c.H); y++ {
			if p.X1 > p.X0 {
				rows[y] = append(rows[y], int32(i))
			}
		}
	}
	scene = func(x, y, ch int) float64 {
		dx, dy := StoredToDisplay(o, w, h, x, y)
		if dy >= 0 && dy < len(rows) {
			for _, i := range rows[dy] {
				p := &patches[i]
				if dx >= p.X0 && dx < p.X1 {
					return cams[i][ch]
				}
			}
		}
		return bg[ch]
	}
	return w, h, scene
}
