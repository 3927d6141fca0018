package colour

import "math"

// DeltaE2000Ref is a CIELAB colour prepared for many CIEDE2000
// differences against it (the fits of pipeline/look score thousands of
// rendered cells against one fixed preview cell per candidate). Its To
// gives DeltaE2000 (kL = kC = kH = 1) within 1e-9 with one arc tangent,
// one exponential and one sine instead of DeltaE2000K's two arc tangents,
// six cosines and sines, an exponential and two powers: the hue
// difference ΔH′ = 2√(C1′C2′)·sin(Δh′/2) from the cross and dot products
// of (a′, b) (no angles), the mean hue h̄′ as the direction of the sum of
// the two unit hue vectors (the mean along the shorter arc, which is what
// CIE 142-2001's case analysis of h̄′ computes), and the four cosines of
// T from cos h̄′ and sin h̄′ by the multiple-angle formulas. Exactly or
// nearly opposite hues, and achromatic colours, go through DeltaE2000K.
type DeltaE2000Ref struct {
	lab Lab
	c   float64 // C*ab = √(a² + b²)
}

// NewDeltaE2000Ref prepares lab as the reference of DeltaE2000Ref.To.
func NewDeltaE2000Ref(lab Lab) DeltaE2000Ref {
	return DeltaE2000Ref{lab: lab, c: math.Sqrt(lab[1]*lab[1] + lab[2]*lab[2])}
}

// Constants of DeltaE2000Ref.To: cos and sin of the phase angles of T
// (30°, 6°, 63°), 25^7.
var (
	cos30, sin30 = math.Cos(30 * math.Pi / 180), math.Sin(30 * math.Pi / 180)
	cos6, sin6   = math.Cos(6 * math.Pi / 180), math.Sin(6 * math.Pi / 180)
	cos63, sin63 = math.Cos(63 * math.Pi / 180), math.Sin(63 * math.Pi / 180)
	cos117       = math.Cos(117 * math.Pi / 180)
)

// To returns DeltaE2000(lab, r's colour) (the difference is symmetric).
func (r DeltaE2000Ref) To(lab Lab) float64 {
	const pow25_7 = 6103515625.0 // 25^7
	L1, a1, b1 := lab[0], lab[1], lab[2]
	L2, a2, b2 := r.lab[0], r.lab[1], r.lab[2]
	C1 := math.Sqrt(a1*a1 + b1*b1)
	cb := (C1 + r.c) / 2
	cb2 := cb * cb
	cb7 := cb2 * cb2 * cb2 * cb
	g1 := 1 + 0.5*(1-math.Sqrt(cb7/(cb7+pow25_7)))
	a1p, a2p := g1*a1, g1*a2
	C1p := math.Sqrt(a1p*a1p + b1*b1)
	C2p := math.Sqrt(a2p*a2p + b2*b2)
	p := C1p * C2p
	if !(p > 1e-12) {
		return DeltaE2000K(lab, r.lab, 1, 1, 1)
	}
	// The sum of the unit hue vectors: its direction is h̄′; near zero
	// (hues nearly opposite) that direction is ill-conditioned.
	i1, i2 := 1/C1p, 1/C2p
	vx, vy := a1p*i1+a2p*i2, b1*i1+b2*i2
	v2 := vx*vx + vy*vy
	if v2 < 1e-6 {
		return DeltaE2000K(lab, r.lab, 1, 1, 1)
	}
	// ΔH′ = 2√p·sin(Δh′/2), Δh′ = h2′ − h1′ in (−180°, 180°]:
	// sin Δh′ = cross/p, cos Δh′ = dot/p; for |Δh′| ≤ 90° through
	// sin(Δh′/2) = sin Δh′ / (2 cos(Δh′/2)) (no cancellation for close
	// hues), else through sin²(Δh′/2) = (1 − cos Δh′)/2.
	cross := a1p*b2 - b1*a2p
	dot := a1p*a2p + b1*b2
	var dHp float64
	if dot >= 0 {
		dHp = cross * math.Sqrt(2/(p+dot))
	} else {
		dHp = math.Sqrt(2 * (p - dot))
		if cross < 0 {
			dHp = -dHp
		}
	}
	iv := 1 / math.Sqrt(v2)
	c1, s1 := vx*iv, vy*iv // cos h̄′, sin h̄′
	// The rotation term's 30·exp(−((h̄′ − 275°)/25°)²) is below 1e-16
	// for h̄′ < 117° (sin h̄′ > 0 and cos h̄′ > cos 117°): no angle needed.
	var dTheta float64
	if !(s1 > 0 && c1 > cos117) {
		hbar := math.Atan2(vy, vx) * 180 / math.Pi
		if hbar < 0 {
			hbar += 360
		}
		q := (hbar - 275) / 25
		dTheta = 30 * math.Exp(-q*q)
	}
	c2, s2 := c1*c1-s1*s1, 2*s1*c1
	c3, s3 := c2*c1-s2*s1, s2*c1+c2*s1
	c4, s4 := c2*c2-s2*s2, 2*s2*c2
	T := 1 - 0.17*(c1*cos30+s1*sin30) + 0.24*c2 + 0.32*(c3*cos6-s3*sin6) - 0.20*(c4*cos63+s4*sin63)
	Cbarp := (C1p + C2p) / 2
	cp2 := Cbarp * Cbarp
	cp7 := cp2 * cp2 * cp2 * Cbarp
	RC := 2 * math.Sqrt(cp7/(cp7+pow25_7))
	Lbarp := (L1 + L2) / 2
	l50 := (Lbarp - 50) * (Lbarp - 50)
	SL := 1 + 0.015*l50/math.Sqrt(20+l50)
	SC := 1 + 0.045*Cbarp
	SH := 1 + 0.015*Cbarp*T
	var RT float64
	if dTheta > 0 {
		RT = -math.Sin(2*dTheta*math.Pi/180) * RC
	}
	tL := (L2 - L1) / SL
	tC := (C2p - C1p) / SC
	tH := dHp / SH
	return math.Sqrt(tL*tL + tC*tC + tH*tH + RT*tC*tH)
}

// LabOfRelative is XYZToLab of XYZ already divided by the reference
// white (X/Xn, Y/Yn, Z/Zn): for a caller that folds the division into
// its own matrix.
func LabOfRelative(t [3]float64) Lab {
	fx, fy, fz := labF(t[0]), labF(t[1]), labF(t[2])
	return Lab{116*fy - 16, 500 * (fx - fy), 200 * (fy - fz)}
}
