package colour

import "math"

// Lab is a CIE 1976 L*a*b* (CIELAB) colour: L* in [0, 100] for non-negative
// Y ≤ Yn, a* and b* unbounded (typically within ±128).
type Lab [3]float64

// CIE 15:2004 §8.2.1 constants: f(t) = t^(1/3) above ε = (6/29)³ and the
// linear segment f(t) = t/(3·(6/29)²) + 4/29 below it.
const (
	labDelta  = 6.0 / 29
	labEps    = labDelta * labDelta * labDelta // 216/24389 ≈ 0.008856
	labSlope  = 1 / (3 * labDelta * labDelta)  // 841/108 ≈ 7.787
	labOffset = 4.0 / 29
)

func labF(t float64) float64 {
	if t > labEps {
		return math.Cbrt(t)
	}
	return labSlope*t + labOffset
}

func labFInv(f float64) float64 {
	if f > labDelta {
		return f * f * f
	}
	return (f - labOffset) / labSlope
}

// XYZToLab converts CIE XYZ to CIELAB relative to the reference white
// (both XYZ on the same scale, e.g. Y of white = 1), per CIE 15:2004 §8.2.1:
//
//	L* = 116·f(Y/Yn) − 16, a* = 500·(f(X/Xn) − f(Y/Yn)), b* = 200·(f(Y/Yn) − f(Z/Zn)),
//	f(t) = t^(1/3) for t > (6/29)³, else t/(3·(6/29)²) + 4/29.
func XYZToLab(xyz [3]float64, white [3]float64) Lab {
	fx := labF(xyz[0] / white[0])
	fy := labF(xyz[1] / white[1])
	fz := labF(xyz[2] / white[2])
	return Lab{116*fy - 16, 500 * (fx - fy), 200 * (fy - fz)}
}

// LabToXYZ is the inverse of XYZToLab (CIE 15:2004 §8.2.1 inverted), giving
// XYZ on the scale of white.
func LabToXYZ(lab Lab, white [3]float64) [3]float64 {
	fy := (lab[0] + 16) / 116
	fx := fy + lab[1]/500
	fz := fy - lab[2]/200
	return [3]float64{white[0] * labFInv(fx), white[1] * labFInv(fy), white[2] * labFInv(fz)}
}

// DeltaE76 is the CIE 1976 colour difference ΔE*ab, the Euclidean distance
// in CIELAB (CIE 15:2004).
func DeltaE76(a, b Lab) float64 {
	return math.Sqrt((a[0]-b[0])*(a[0]-b[0]) + (a[1]-b[1])*(a[1]-b[1]) + (a[2]-b[2])*(a[2]-b[2]))
}

func deg2rad(d float64) float64 { return d * math.Pi / 180 }

// DeltaE2000 is the CIEDE2000 colour difference ΔE00 (CIE 142-2001) with
// parametric factors kL = kC = kH = 1, implemented following G. Sharma,
// W. Wu, E. N. Dalal, "The CIEDE2000 color-difference formula:
// Implementation notes, supplementary test data, and mathematical
// observations", Color Res. Appl. 30(1):21–30, 2005 (eqs. 1–17), including
// their conventions for achromatic colours (h′ = 0 when a′ = b′ = 0; mean hue
// h̄′ = h′1 + h′2 and Δh′ = 0 when C′1·C′2 = 0). Symmetric in a and b.
func DeltaE2000(a, b Lab) float64 { return DeltaE2000K(a, b, 1, 1, 1) }

// DeltaE2000K is DeltaE2000 with explicit parametric weighting factors
// kL, kC, kH (CIE 142-2001; all 1 under reference conditions).
func DeltaE2000K(lab1, lab2 Lab, kL, kC, kH float64) float64 {
	L1, a1, b1 := lab1[0], lab1[1], lab1[2]
	L2, a2, b2 := lab2[0], lab2[1], lab2[2]

	// Eqs. 2–6: a′, C′, h′.
	C1 := math.Hypot(a1, b1)
	C2 := math.Hypot(a2, b2)
	Cbar := (C1 + C2) / 2
	Cbar7 := math.Pow(Cbar, 7)
	const pow25_7 = 6103515625.0 // 25^7
	G := 0.5 * (1 - math.Sqrt(Cbar7/(Cbar7+pow25_7)))
	a1p := (1 + G) * a1
	a2p := (1 + G) * a2
	C1p := math.Hypot(a1p, b1)
	C2p := math.Hypot(a2p, b2)
	hue := func(ap, bp float64) float64 {
		if ap == 0 && bp == 0 {
			return 0
		}
		h := math.Atan2(bp, ap) * 180 / math.Pi
		if h < 0 {
			h += 360
		}
		return h
	}
	h1p := hue(a1p, b1)
	h2p := hue(a2p, b2)

	// Eqs. 8–10: ΔL′, ΔC′, ΔH′.
	dLp := L2 - L1
	dCp := C2p - C1p
	var dhp float64
	if C1p*C2p != 0 {
		dhp = h2p - h1p
		if dhp > 180 {
			dhp -= 360
		} else if dhp < -180 {
			dhp += 360
		}
	}
	dHp := 2 * math.Sqrt(C1p*C2p) * math.Sin(deg2rad(dhp/2))

	// Eqs. 12–14: means.
	Lbarp := (L1 + L2) / 2
	Cbarp := (C1p + C2p) / 2
	var hbarp float64
	switch {
	case C1p*C2p == 0:
		hbarp = h1p + h2p
	case math.Abs(h1p-h2p) <= 180:
		hbarp = (h1p + h2p) / 2
	case h1p+h2p < 360:
		hbarp = (h1p + h2p + 360) / 2
	default:
		hbarp = (h1p + h2p - 360) / 2
	}

	// Eqs. 15–22: weighting functions and rotation term.
	T := 1 - 0.17*math.Cos(deg2rad(hbarp-30)) +
		0.24*math.Cos(deg2rad(2*hbarp)) +
		0.32*math.Cos(deg2rad(3*hbarp+6)) -
		0.20*math.Cos(deg2rad(4*hbarp-63))
	dTheta := 30 * math.Exp(-((hbarp-275)/25)*((hbarp-275)/25))
	Cbarp7 := math.Pow(Cbarp, 7)
	RC := 2 * math.Sqrt(Cbarp7/(Cbarp7+pow25_7))
	l50 := (Lbarp - 50) * (Lbarp - 50)
	SL := 1 + 0.015*l50/math.Sqrt(20+l50)
	SC := 1 + 0.045*Cbarp
	SH := 1 + 0.015*Cbarp*T
	RT := -math.Sin(deg2rad(2*dTheta)) * RC

	tL := dLp / (kL * SL)
	tC := dCp / (kC * SC)
	tH := dHp / (kH * SH)
	return math.Sqrt(tL*tL + tC*tC + tH*tH + RT*tC*tH)
}

// SRGB8ToLab converts an 8-bit encoded sRGB colour to CIELAB: decode with
// the sRGB EOTF (IEC 61966-2-1), SRGB.ToXYZ to XYZ (D65, Y = 1), then
// XYZToLab relative to the sRGB D65 white (SRGB.White). No chromatic
// adaptation to D50 is applied.
func SRGB8ToLab(r, g, b uint8) Lab {
	lin := [3]float64{SRGBDecode(float64(r) / 255), SRGBDecode(float64(g) / 255), SRGBDecode(float64(b) / 255)}
	return XYZToLab(SRGB.ToXYZ.Apply(lin), SRGB.White)
}

// SRGB16ToLab is SRGB8ToLab for 16-bit encoded sRGB (code values /65535).
func SRGB16ToLab(r, g, b uint16) Lab {
	lin := [3]float64{SRGBDecode(float64(r) / 65535), SRGBDecode(float64(g) / 65535), SRGBDecode(float64(b) / 65535)}
	return XYZToLab(SRGB.ToXYZ.Apply(lin), SRGB.White)
}

// LinearToLab converts linear RGB in space s to CIELAB relative to s's own
// white (no chromatic adaptation).
func (s *Space) LinearToLab(rgb [3]float64) Lab {
	return XYZToLab(s.ToXYZ.Apply(rgb), s.White)
}
