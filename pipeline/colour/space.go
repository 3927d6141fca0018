package colour

import "math"

// Chromaticity is a CIE 1931 (x, y) chromaticity coordinate pair.
type Chromaticity [2]float64

// XYZ returns the CIE XYZ tristimulus values of the chromaticity scaled to
// Y = 1: X = x/y, Y = 1, Z = (1−x−y)/y (CIE 15:2004, inverted definition of x, y).
func (c Chromaticity) XYZ() [3]float64 {
	x, y := c[0], c[1]
	return [3]float64{x / y, 1, (1 - x - y) / y}
}

// Reference white points.
var (
	// D65XY is CIE standard illuminant D65 as specified by IEC 61966-2-1
	// (sRGB), ITU-R BT.709/BT.2020 and SMPTE EG 432-1: x = 0.3127, y = 0.3290.
	D65XY = Chromaticity{0.3127, 0.3290}
	// D50XY is the D50 white of ROMM RGB, ISO 22028-2:2013: x = 0.3457,
	// y = 0.3585.
	D50XY = Chromaticity{0.3457, 0.3585}

	// WhiteD65 is D65XY as XYZ with Y = 1: (0.95046, 1, 1.08906).
	WhiteD65 = D65XY.XYZ()
	// WhiteD50 is D50XY as XYZ with Y = 1: (0.96430, 1, 0.82510).
	WhiteD50 = D50XY.XYZ()
	// WhiteICCD50 is the ICC profile connection space illuminant (ICC.1:2010,
	// PCS illuminant header field): XYZ = (0.9642, 1.0, 0.8249). It differs
	// from WhiteD50 by about 2e-4 (the ICC value is CIE D50 computed from
	// its spectral distribution, rounded).
	WhiteICCD50 = [3]float64{0.9642, 1.0, 0.8249}
)

// RGBToXYZMatrix derives the 3×3 matrix that maps linear RGB (white = 1,1,1)
// to CIE XYZ (Y of white = 1) from the xy chromaticities of the red, green and
// blue primaries and of the white point, following SMPTE RP 177-1993:
// with P the matrix whose columns are the primaries' XYZ at Y = 1, the column
// scales are S = P⁻¹·W and the result is P·diag(S). ok is false for
// degenerate (collinear) primaries.
func RGBToXYZMatrix(primaries [3]Chromaticity, white Chromaticity) (m Mat3, ok bool) {
	var p Mat3
	for c := 0; c < 3; c++ {
		xyz := primaries[c].XYZ()
		for r := 0; r < 3; r++ {
			p[r][c] = xyz[r]
		}
	}
	pinv, ok := p.Inverse()
	if !ok {
		return Mat3{}, false
	}
	s := pinv.Apply(white.XYZ())
	return p.Mul(Diag(s)), true
}

// BradfordMA is the Bradford cone-response ("sharpened RGB") matrix M_A of
// Lam (1985) as given by ICC.1:2010 Annex E and by B. Lindbloom,
// "Chromatic Adaptation" (brucelindbloom.com): rows 0.8951 0.2664 −0.1614 /
// −0.7502 1.7135 0.0367 / 0.0389 −0.0685 1.0296.
var BradfordMA = Mat3{
	{0.8951, 0.2664, -0.1614},
	{-0.7502, 1.7135, 0.0367},
	{0.0389, -0.0685, 1.0296},
}

var bradfordMAInv = BradfordMA.mustInverse()

// Bradford returns the linear Bradford chromatic adaptation matrix taking CIE
// XYZ under source white srcWhite to corresponding XYZ under dstWhite (both
// XYZ triplets, any common scale, usually Y = 1):
//
//	M = M_A⁻¹ · diag(ρ_D/ρ_S, γ_D/γ_S, β_D/β_S) · M_A,  (ρ,γ,β) = M_A·white
//
// (ICC.1:2010 Annex E, von Kries scaling in Bradford cone space, without
// the non-linear blue term of the original Bradford transform; identical to
// Lindbloom's "Chromatic Adaptation" formulation). It maps srcWhite exactly
// onto dstWhite. Equal whites give the identity.
func Bradford(srcWhite, dstWhite [3]float64) Mat3 {
	if srcWhite == dstWhite {
		return Identity3
	}
	s := BradfordMA.Apply(srcWhite)
	d := BradfordMA.Apply(dstWhite)
	return bradfordMAInv.Mul(Diag([3]float64{d[0] / s[0], d[1] / s[1], d[2] / s[2]})).Mul(BradfordMA)
}

// Space is a linear RGB colour space with its relation to CIE XYZ.
//
// ToXYZ maps linear RGB (reference white = 1,1,1) to XYZ relative to the
// space's own white (Y of white = 1); FromXYZ is its inverse. White is the
// XYZ of the reference white (Y = 1). Encode applies the space's transfer
// function (linear → encoded, the OETF/inverse EOTF), Decode its inverse
// (encoded → linear); both take and return values nominally in [0, 1], are
// odd-symmetric for negative inputs (sign(v)·f(|v|)) and extend beyond 1
// with the same formula. ICC is the embedded profile of this space to tag
// output files with; it is shared and must not be modified.
type Space struct {
	Name           string
	ToXYZ, FromXYZ Mat3
	White          [3]float64 // XYZ, Y = 1
	ICC            []byte     // embedded ICC profile (shared, read-only)
	Encode         func(float64) float64
	Decode         func(float64) float64

	Primaries [3]Chromaticity // R, G, B (x, y)
	WhiteXY   Chromaticity    // reference white (x, y)
}

// NewSpace builds a Space from its primaries and white chromaticities
// (matrices derived with RGBToXYZMatrix) and its transfer functions. It
// panics on degenerate primaries.
func NewSpace(name string, primaries [3]Chromaticity, white Chromaticity, encode, decode func(float64) float64, icc []byte) *Space {
	to, ok := RGBToXYZMatrix(primaries, white)
	if !ok {
		panic("colour: degenerate primaries for " + name)
	}
	return &Space{
		Name:      name,
		ToXYZ:     to,
		FromXYZ:   to.mustInverse(),
		White:     white.XYZ(),
		ICC:       icc,
		Encode:    encode,
		Decode:    decode,
		Primaries: primaries,
		WhiteXY:   white,
	}
}

// The predefined spaces. Primaries and whites are the published (x, y)
// values; the matrices are computed from them at init time.
var (
	// SRGB is IEC 61966-2-1:1999 sRGB: ITU-R BT.709 primaries R (0.64, 0.33),
	// G (0.30, 0.60), B (0.15, 0.06), white D65 (0.3127, 0.3290), the
	// piecewise sRGB transfer function (SRGBEncode/SRGBDecode). ICC:
	// sRGB-v2-magic.icc.
	SRGB *Space
	// DisplayP3 is Apple Display P3: the P3 primaries of SMPTE EG 432-1:2010
	// R (0.680, 0.320), G (0.265, 0.690), B (0.150, 0.060) with a D65 white
	// (0.3127, 0.3290) and the sRGB transfer function. ICC:
	// DisplayP3-v2-magic.icc.
	DisplayP3 *Space
	// AdobeRGB is Adobe RGB (1998) (Adobe Systems, "Adobe RGB (1998) Color
	// Image Encoding", version 2005-05): R (0.6400, 0.3300),
	// G (0.2100, 0.7100), B (0.1500, 0.0600), white D65 (0.3127, 0.3290),
	// pure gamma 563/256 ≈ 2.19921875 (AdobeRGBEncode/AdobeRGBDecode). ICC:
	// AdobeCompat-v2.icc.
	AdobeRGB *Space
	// ProPhoto is ROMM RGB (ProPhoto RGB), ISO 22028-2:2013: R (0.7347,
	// 0.2653), G (0.1596, 0.8404), B (0.0366, 0.0001), white D50 (0.3457,
	// 0.3585), the ROMM piecewise 1/1.8 curve (ProPhotoEncode/ProPhotoDecode).
	// Its white differs from the D65 spaces, so ConvertMatrix adapts with
	// Bradford. ICC: ProPhoto-v2-magic.icc.
	ProPhoto *Space
	// Rec2020 is ITU-R BT.2020-2: R (0.708, 0.292), G (0.170, 0.797),
	// B (0.131, 0.046), white D65 (0.3127, 0.3290), with the BT.2020 OETF
	// (Rec2020Encode/Rec2020Decode) — the curve the embedded ICC profile
	// Rec2020-v2-magic.icc also uses (rather than the BT.1886 display EOTF).
	Rec2020 *Space
)

func init() {
	SRGB = NewSpace("sRGB",
		[3]Chromaticity{{0.64, 0.33}, {0.30, 0.60}, {0.15, 0.06}}, D65XY,
		SRGBEncode, SRGBDecode, mustICC("sRGB-v2-magic"))
	DisplayP3 = NewSpace("Display P3",
		[3]Chromaticity{{0.680, 0.320}, {0.265, 0.690}, {0.150, 0.060}}, D65XY,
		SRGBEncode, SRGBDecode, mustICC("DisplayP3-v2-magic"))
	AdobeRGB = NewSpace("Adobe RGB (1998)",
		[3]Chromaticity{{0.64, 0.33}, {0.21, 0.71}, {0.15, 0.06}}, D65XY,
		AdobeRGBEncode, AdobeRGBDecode, mustICC("AdobeCompat-v2"))
	ProPhoto = NewSpace("ProPhoto RGB",
		[3]Chromaticity{{0.7347, 0.2653}, {0.1596, 0.8404}, {0.0366, 0.0001}}, D50XY,
		ProPhotoEncode, ProPhotoDecode, mustICC("ProPhoto-v2-magic"))
	Rec2020 = NewSpace("Rec. 2020",
		[3]Chromaticity{{0.708, 0.292}, {0.170, 0.797}, {0.131, 0.046}}, D65XY,
		Rec2020Encode, Rec2020Decode, mustICC("Rec2020-v2-magic"))
}

// Spaces returns the predefined spaces in a fixed order: SRGB, DisplayP3,
// AdobeRGB, ProPhoto, Rec2020.
func Spaces() []*Space { return []*Space{SRGB, DisplayP3, AdobeRGB, ProPhoto, Rec2020} }

// whitesEqual reports whether two XYZ whites agree to 1e-9 per component, in
// which case no chromatic adaptation is applied.
func whitesEqual(a, b [3]float64) bool {
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-9 {
			return false
		}
	}
	return true
}

// ConvertMatrix returns the 3×3 matrix mapping linear RGB in space from to
// linear RGB in space to: to.FromXYZ · B · from.ToXYZ, where B is the
// Bradford adaptation from from.White to to.White (identity when the whites
// agree). Because B maps white to white, RGB (1,1,1) maps to (1,1,1).
func ConvertMatrix(from, to *Space) Mat3 {
	m := from.ToXYZ
	if !whitesEqual(from.White, to.White) {
		m = Bradford(from.White, to.White).Mul(m)
	}
	return to.FromXYZ.Mul(m)
}

// ToXYZD50 returns the matrix from linear RGB in s to CIE XYZ adapted
// (Bradford) to the ICC PCS illuminant WhiteICCD50, i.e. the rXYZ/gXYZ/bXYZ
// colorant columns an ICC matrix/TRC profile for s carries (ICC.1:2010
// three-component matrix-based profiles; checked against the embedded
// profiles in the tests).
func (s *Space) ToXYZD50() Mat3 {
	return Bradford(s.White, WhiteICCD50).Mul(s.ToXYZ)
}
