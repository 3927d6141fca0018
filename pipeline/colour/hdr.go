package colour

import "math"

// HDR transfer functions of ITU-R BT.2100-2 (Table 4: PQ, SMPTE ST 2084;
// Table 5: HLG, ARIB STD-B67), and the reference white of BT.2408.

// HDRReferenceWhite is the luminance in nits (cd/m²) of SDR reference
// (diffuse) white in an HDR image: ITU-R BT.2408-7 §2.2, 203 cd/m², where
// an HDR rendition puts what an SDR one shows as white.
const HDRReferenceWhite = 203.0

// PQ constants, SMPTE ST 2084 / BT.2100 Table 4.
const (
	pqM1 = 2610.0 / 16384
	pqM2 = 2523.0 / 4096 * 128
	pqC1 = 3424.0 / 4096
	pqC2 = 2413.0 / 4096 * 32
	pqC3 = 2392.0 / 4096 * 32
	// PQPeak is PQ's largest luminance, in nits.
	PQPeak = 10000.0
)

// PQEncode is the PQ inverse EOTF: the signal E′ in [0, 1] of display
// luminance nits (cd/m², clamped to 0..PQPeak).
func PQEncode(nits float64) float64 {
	y := math.Min(math.Max(nits/PQPeak, 0), 1)
	p := math.Pow(y, pqM1)
	return math.Pow((pqC1+pqC2*p)/(1+pqC3*p), pqM2)
}

// PQDecode is the PQ EOTF: the display luminance in nits of signal E′.
func PQDecode(e float64) float64 {
	p := math.Pow(math.Min(math.Max(e, 0), 1), 1/pqM2)
	return PQPeak * math.Pow(math.Max(p-pqC1, 0)/(pqC2-pqC3*p), 1/pqM1)
}

// HLG constants, BT.2100 Table 5.
const (
	hlgA = 0.17883277
	hlgB = 1 - 4*hlgA
	hlgC = 0.55991073 // 0.5 − a·ln(4a)
	// HLGPeak is the nominal peak luminance in nits of the HLG display the
	// HLG outputs are graded for (BT.2100 Table 5, L_W = 1000 cd/m²),
	// whose system gamma is 1.2.
	HLGPeak  = 1000.0
	hlgGamma = 1.2
)

// hlgOETF is the HLG OETF of normalised scene light e in [0, 1].
func hlgOETF(e float64) float64 {
	e = math.Min(math.Max(e, 0), 1)
	if e <= 1.0/12 {
		return math.Sqrt(3 * e)
	}
	return hlgA*math.Log(12*e-hlgB) + hlgC
}

// hlgInverseOETF is the inverse of hlgOETF.
func hlgInverseOETF(v float64) float64 {
	v = math.Min(math.Max(v, 0), 1)
	if v <= 0.5 {
		return v * v / 3
	}
	return (math.Exp((v-hlgC)/hlgA) + hlgB) / 12
}

// HLGEncode returns the HLG signals of display light rgb in nits (BT.2100
// primaries) on the HLGPeak display: the inverse OOTF (scene light E =
// F_D/L_W · Y_D^(1/γ − 1), Y_D the normalised display luminance with the
// BT.2100 luminance weights, γ = 1.2), then the OETF per channel.
func HLGEncode(rgb [3]float64) [3]float64 {
	var fd [3]float64
	for i, v := range rgb {
		fd[i] = math.Min(math.Max(v/HLGPeak, 0), 1)
	}
	yd := 0.2627*fd[0] + 0.6780*fd[1] + 0.0593*fd[2]
	var out [3]float64
	if yd <= 0 {
		return out
	}
	k := math.Pow(yd, 1/hlgGamma-1)
	for i := range fd {
		out[i] = hlgOETF(fd[i] * k)
	}
	return out
}

// HLGDecode is the inverse of HLGEncode: the display light in nits of
// the HLG signals v (inverse OETF, then the OOTF F_D = L_W · Y_S^(γ−1) · E).
func HLGDecode(v [3]float64) [3]float64 {
	var e [3]float64
	for i, x := range v {
		e[i] = hlgInverseOETF(x)
	}
	ys := 0.2627*e[0] + 0.6780*e[1] + 0.0593*e[2]
	var out [3]float64
	if ys <= 0 {
		return out
	}
	k := HLGPeak * math.Pow(ys, hlgGamma-1)
	for i := range e {
		out[i] = k * e[i]
	}
	return out
}
