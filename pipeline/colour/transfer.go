package colour

import "math"

// All transfer functions below map nominal [0, 1] to [0, 1], are strictly
// increasing, and are extended to negative inputs by odd symmetry
// (f(−v) = −f(v)) so out-of-gamut values produced by matrix conversions
// survive a round trip. NaN propagates.

// sRGB constants, IEC 61966-2-1:1999 (with Amendment 1:2003): linear segment of
// slope 12.92 below 0.0031308 (encoded 0.04045), power 1/2.4 with offset
// 0.055 above.
const (
	srgbLinBreak = 0.0031308
	srgbEncBreak = 0.04045
)

// SRGBEncode is the sRGB encoding (inverse EOTF) of IEC 61966-2-1:1999: V = 12.92·L for L ≤ 0.0031308, else 1.055·L^(1/2.4) − 0.055.
// L is linear light, V the encoded value, both nominally in [0, 1].
func SRGBEncode(l float64) float64 {
	if l < 0 {
		return -SRGBEncode(-l)
	}
	if l <= srgbLinBreak {
		return 12.92 * l
	}
	return 1.055*math.Pow(l, 1/2.4) - 0.055
}

// SRGBDecode is the sRGB EOTF of IEC 61966-2-1:1999 (inverse of
// SRGBEncode): L = V/12.92 for V ≤ 0.04045, else ((V + 0.055)/1.055)^2.4.
func SRGBDecode(v float64) float64 {
	if v < 0 {
		return -SRGBDecode(-v)
	}
	if v <= srgbEncBreak {
		return v / 12.92
	}
	return math.Pow((v+0.055)/1.055, 2.4)
}

// SRGBEncode32 is SRGBEncode for float32 (computed in float64).
func SRGBEncode32(l float32) float32 { return float32(SRGBEncode(float64(l))) }

// SRGBDecode32 is SRGBDecode for float32 (computed in float64).
func SRGBDecode32(v float32) float32 { return float32(SRGBDecode(float64(v))) }

// adobeGamma is the Adobe RGB (1998) gamma, 563/256 = 2.19921875 ("Adobe RGB
// (1998) Color Image Encoding"; the value is chosen so that it is
// exactly representable as a u8Fixed8 ICC curve, as in AdobeCompat-v2.icc).
const adobeGamma = 563.0 / 256.0

// AdobeRGBEncode is the Adobe RGB (1998) encoding V = L^(256/563) (no linear
// segment), L linear, V encoded, nominally [0, 1].
func AdobeRGBEncode(l float64) float64 {
	if l < 0 {
		return -AdobeRGBEncode(-l)
	}
	return math.Pow(l, 1/adobeGamma)
}

// AdobeRGBDecode is the Adobe RGB (1998) decoding L = V^(563/256).
func AdobeRGBDecode(v float64) float64 {
	if v < 0 {
		return -AdobeRGBDecode(-v)
	}
	return math.Pow(v, adobeGamma)
}

// ROMM RGB constants, ISO 22028-2:2013 (also ANSI/I3A IT10.7666):
// Et = 16^(1.8/(1−1.8)) = 1/512, slope 16 below Et, power 1/1.8 above;
// the encoded break is 16·Et = 1/32.
const (
	rommEt    = 1.0 / 512
	rommEncEt = 1.0 / 32
)

// ProPhotoEncode is the ROMM RGB encoding of ISO 22028-2:2013:
// V = 16·L for L < 1/512, else L^(1/1.8). Continuous at the break
// (16/512 = (1/512)^(1/1.8) = 1/32).
func ProPhotoEncode(l float64) float64 {
	if l < 0 {
		return -ProPhotoEncode(-l)
	}
	if l < rommEt {
		return 16 * l
	}
	return math.Pow(l, 1/1.8)
}

// ProPhotoDecode is the inverse ROMM RGB encoding: L = V/16 for V < 1/32,
// else V^1.8.
func ProPhotoDecode(v float64) float64 {
	if v < 0 {
		return -ProPhotoDecode(-v)
	}
	if v < rommEncEt {
		return v / 16
	}
	return math.Pow(v, 1.8)
}

// BT.2020 OETF constants, ITU-R BT.2020-2 Table 4: α = 1.09929682680944 and
// β = 0.018053968510807, the full-precision solutions that make the curve
// continuous with continuous slope (the 10-bit rounded values 1.099 and
// 0.018 are those of the parametric curve in Rec2020-v4.icc; the difference
// is below 3e-4 in the encoded value).
const (
	bt2020Alpha = 1.09929682680944
	bt2020Beta  = 0.018053968510807
)

// Rec2020Encode is the ITU-R BT.2020-2 OETF: E′ = 4.5·E for E < β, else
// α·E^0.45 − (α − 1), E linear scene light, E′ the encoded signal.
func Rec2020Encode(l float64) float64 {
	if l < 0 {
		return -Rec2020Encode(-l)
	}
	if l < bt2020Beta {
		return 4.5 * l
	}
	return bt2020Alpha*math.Pow(l, 0.45) - (bt2020Alpha - 1)
}

// Rec2020Decode is the inverse of Rec2020Encode: E = E′/4.5 for
// E′ < 4.5·β, else ((E′ + α − 1)/α)^(1/0.45).
func Rec2020Decode(v float64) float64 {
	if v < 0 {
		return -Rec2020Decode(-v)
	}
	if v < 4.5*bt2020Beta {
		return v / 4.5
	}
	return math.Pow((v+bt2020Alpha-1)/bt2020Alpha, 1/0.45)
}
