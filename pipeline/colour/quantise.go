package colour

import (
	"math"
	"sync"
)

// Table-driven sRGB quantisers (linear float32 → encoded uint8/uint16) and
// dequantisers (encoded → linear float32). The quantisers return exactly
// round(maxval · SRGBEncode(v)) (round half up), clamped to [0, maxval]:
// a coarse table gives an estimate within ±1 code value, which is then
// corrected by comparing v with the exact decision thresholds
// SRGBDecode((k − ½)/maxval), stored as the smallest float32 not below them.

const (
	q8Bits = 12
	q8N    = 1 << q8Bits
	// q16Bits: 2^14 linear-interpolation segments keep the estimate within
	// 0.3 code values near the sRGB break point, so one correction suffices.
	q16Bits = 14
	q16N    = 1 << q16Bits
)

var (
	q8lut [q8N + 1]uint8
	q8thr [257]float32 // q8thr[k]: smallest float32 v with 255·SRGBEncode(v) ≥ k − ½; [0] = 0, [256] = +Inf

	q16once sync.Once
	q16tab  []float32 // 65535·SRGBEncode(i/q16N), i = 0..q16N+1
	q16thr  []float32 // as q8thr for 65535 levels, length 65537

	srgb8Lin   [256]float32
	srgb16Once sync.Once
	srgb16Lin  []float32
)

// ceil32 returns the smallest float32 that is ≥ t.
func ceil32(t float64) float32 {
	f := float32(t)
	if float64(f) < t {
		f = math.Nextafter32(f, float32(math.Inf(1)))
	}
	return f
}

func init() {
	for i := range q8lut {
		q8lut[i] = uint8(math.Floor(255*SRGBEncode(float64(i)/q8N) + 0.5))
	}
	q8thr[0] = 0
	for k := 1; k <= 255; k++ {
		q8thr[k] = ceil32(SRGBDecode((float64(k) - 0.5) / 255))
	}
	q8thr[256] = float32(math.Inf(1))
	for i := range srgb8Lin {
		srgb8Lin[i] = float32(SRGBDecode(float64(i) / 255))
	}
}

func initQ16() {
	q16tab = make([]float32, q16N+2)
	for i := range q16tab {
		q16tab[i] = float32(65535 * SRGBEncode(float64(i)/q16N))
	}
	q16thr = make([]float32, 65537)
	for k := 1; k <= 65535; k++ {
		q16thr[k] = ceil32(SRGBDecode((float64(k) - 0.5) / 65535))
	}
	q16thr[65536] = float32(math.Inf(1))
}

// QuantiseSRGB8 returns round(255·SRGBEncode(l)) for linear l, with l ≤ 0
// and NaN giving 0 and l ≥ 1 giving 255. Exact (identical to the float64
// formula of IEC 61966-2-1) for every float32 input; see
// BenchmarkQuantiseSRGB8 for the speed (about 20× math.Pow).
func QuantiseSRGB8(l float32) uint8 {
	if !(l > 0) {
		return 0
	}
	if l >= 1 {
		return 255
	}
	r := q8lut[int(l*q8N+0.5)]
	// One correction at most (q8thr rises), as flags, not branches: the
	// estimate is off in few but unpredictable places.
	return r + b2u8(l >= q8thr[int(r)+1]) - b2u8(l < q8thr[r])
}

// b2u8 returns 1 for true, 0 for false.
func b2u8(b bool) uint8 {
	var u uint8
	if b {
		u = 1
	}
	return u
}

// QuantiseSRGB16 returns round(65535·SRGBEncode(l)) for linear l, with l ≤ 0
// and NaN giving 0 and l ≥ 1 giving 65535. Exact for every float32 input.
// The first call builds ~320 KB of tables.
func QuantiseSRGB16(l float32) uint16 {
	q16once.Do(initQ16)
	return quantise16(l)
}

func quantise16(l float32) uint16 {
	if !(l > 0) {
		return 0
	}
	if l >= 1 {
		return 65535
	}
	x := l * q16N
	i := int(x)
	f := x - float32(i)
	a := q16tab[i]
	e := a + f*(q16tab[i+1]-a)
	r := int(e + 0.5)
	if l >= q16thr[r+1] {
		r++
	} else if l < q16thr[r] {
		r--
	}
	return uint16(r)
}

// QuantiseSRGB8Slice sets dst[i] = QuantiseSRGB8(src[i]) for every i in src.
// It panics if len(dst) < len(src).
func QuantiseSRGB8Slice(dst []uint8, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = QuantiseSRGB8(v)
	}
}

// QuantiseSRGB16Slice sets dst[i] = QuantiseSRGB16(src[i]) for every i in
// src. It panics if len(dst) < len(src).
func QuantiseSRGB16Slice(dst []uint16, src []float32) {
	q16once.Do(initQ16)
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = quantise16(v)
	}
}

// SRGB8ToLinear returns SRGBDecode(v/255) from a 256-entry table.
func SRGB8ToLinear(v uint8) float32 { return srgb8Lin[v] }

// SRGB16ToLinear returns SRGBDecode(v/65535) from a 65536-entry table
// (256 KB, built on first use).
func SRGB16ToLinear(v uint16) float32 {
	srgb16Once.Do(func() {
		srgb16Lin = make([]float32, 65536)
		for i := range srgb16Lin {
			srgb16Lin[i] = float32(SRGBDecode(float64(i) / 65535))
		}
	})
	return srgb16Lin[v]
}

// QuantiseSRGB16FastSlice sets dst[i] to 65535·SRGBEncode(src[i]) rounded
// from the linear interpolation of a 2^14-segment table, without the exact
// threshold correction of QuantiseSRGB16: at most one code value off (an
// error of 1/65535, far below what 16-bit output can show), about four
// times faster. It panics if len(dst) < len(src).
func QuantiseSRGB16FastSlice(dst []uint16, src []float32) {
	q16once.Do(initQ16)
	tab := q16tab[:q16N+1] // a local copy: stores to dst do not force reloads
	dst = dst[:len(src)]
	for i, l := range src {
		switch {
		case !(l > 0):
			dst[i] = 0
		case l >= 1:
			dst[i] = 65535
		default:
			x := l * q16N
			k := int(x)
			ab := tab[k : k+2 : k+2]
			dst[i] = uint16(ab[0] + (x-float32(k))*(ab[1]-ab[0]) + 0.5)
		}
	}
}
