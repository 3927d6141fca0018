package synthdng

import "math"

// The noisy step DNG, for the tests of noise reduction: NoisyW×NoisyH
// photosites, 14-bit (black NoisyBlack, white NoisyWhite), a neutral grey
// scene of level NoisyLow (1 = white) left of column NoisyW/2 and
// NoisyHigh from it on, with Poisson-Gaussian noise of a known σ for the
// ISO (NoiseSigma), the same for every call with the same site.
const (
	NoisyW, NoisyH = 256, 192
	NoisyBlack     = 512
	NoisyWhite     = 16383
	NoisyLow       = 0.12
	NoisyHigh      = 0.30
)

// Photon transfer of the noisy DNG: at ISO 6400 a signal x (1 = white) is
// NoisyPhotons6400·x photoelectrons (shot noise variance x/NoisyPhotons6400),
// NoisyPhotons6400·6400/ISO at other ISOs, plus Gaussian read noise of
// NoisyRead6400·ISO/6400 (of white): roughly a full-frame sensor.
const (
	NoisyPhotons6400 = 600
	NoisyRead6400    = 0.004
)

// NoiseSigma is the standard deviation, relative to white, of the noisy
// DNG's photosites of level x at the given ISO: √(x/g + r²), g =
// NoisyPhotons6400·6400/ISO, r = NoisyRead6400·ISO/6400.
func NoiseSigma(iso int, x float64) float64 {
	g := NoisyPhotons6400 * 6400 / float64(iso)
	r := NoisyRead6400 * float64(iso) / 6400
	return math.Sqrt(x/g + r*r)
}

// NoisyStep returns the Spec of the noisy step DNG at the given ISO
// (written as EXIF ISOSpeedRatings), with AsShotNeutral the default colour
// matrix's neutral so the scene is grey after white balance, and the noise
// of AddNoise.
func NoisyStep(iso int, seed uint64) Spec {
	n := NeutralFor(DefaultColorMatrix)
	return AddNoise(Spec{
		Width: NoisyW, Height: NoisyH, BlackLevel: NoisyBlack, WhiteLevel: NoisyWhite, Orientation: 1,
		AsShotNeutral: n, Model: "Noisy",
		Scene: func(x, y, c int) float64 {
			level := NoisyLow
			if x >= NoisyW/2 {
				level = NoisyHigh
			}
			return level * n[c]
		},
	}, iso, seed)
}

// AddNoise returns s at the given ISO (EXIF ISOSpeedRatings) with
// Poisson-Gaussian noise added to its Scene: Gaussian of NoiseSigma(iso,
// v) at a site of level v (the normal approximation of the Poisson part:
// at ISO 6400 a level of 0.12 is 72 photoelectrons), drawn from a hash of
// (x, y, seed) so that every call for a site gives the same value.
func AddNoise(s Spec, iso int, seed uint64) Spec {
	scene, w := s.Scene, uint64(s.Width)
	s.ISO = iso
	s.Scene = func(x, y, c int) float64 {
		v := scene(x, y, c)
		return v + NoiseSigma(iso, max(v, 0))*gauss(uint64(y)*w+uint64(x), seed)
	}
	return s
}

// gauss is a standard normal deviate from the hash of (i, seed)
// (splitmix64, then Box–Muller).
func gauss(i, seed uint64) float64 {
	a := splitmix(i*2 + seed<<40)
	b := splitmix(i*2 + 1 + seed<<40)
	u1 := (float64(a>>11) + 0.5) / (1 << 53)
	u2 := float64(b>>11) / (1 << 53)
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// splitmix is the SplitMix64 finaliser (Steele, Lea and Flood 2014).
func splitmix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// SoftEdgeSigma is the blur, in photosites, of the soft step DNG's edge.
const SoftEdgeSigma = 0.7

// SoftStep returns the Spec of the soft step DNG, for the tests of capture
// sharpening: the noisy step DNG's size and levels at ISO 100 without
// noise, its edge at column NoisyW/2 blurred by a Gaussian of
// SoftEdgeSigma photosites (level NoisyLow + (NoisyHigh − NoisyLow)·Φ((x −
// NoisyW/2 + 0.5)/SoftEdgeSigma), Φ the normal distribution).
func SoftStep() Spec {
	n := NeutralFor(DefaultColorMatrix)
	return Spec{
		Width: NoisyW, Height: NoisyH, BlackLevel: NoisyBlack, WhiteLevel: NoisyWhite, Orientation: 1,
		AsShotNeutral: n, ISO: 100, Model: "Soft",
		Scene: func(x, y, c int) float64 {
			t := float64(x-NoisyW/2) + 0.5
			phi := 0.5 * math.Erfc(-t/(SoftEdgeSigma*math.Sqrt2))
			return (NoisyLow + (NoisyHigh-NoisyLow)*phi) * n[c]
		},
	}
}
