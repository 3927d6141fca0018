package colour

import (
	"math"
	"math/rand"
	"testing"
)

func ref8(l float32) uint8 {
	v := 255 * SRGBEncode(float64(l))
	return uint8(math.Max(0, math.Min(255, math.Floor(v+0.5))))
}

func ref16(l float32) uint16 {
	v := 65535 * SRGBEncode(float64(l))
	return uint16(math.Max(0, math.Min(65535, math.Floor(v+0.5))))
}

// quantiseInputs returns float32 test inputs: specials, a uniform grid, random
// values (uniform and log-uniform) and every decision threshold ±1 ulp.
func quantiseInputs(levels int) []float32 {
	in := []float32{0, -0, -1, 1, 2, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
		1e-30, math.SmallestNonzeroFloat32, math.Nextafter32(1, 0), float32(srgbLinBreak)}
	for i := 0; i <= 1<<16; i++ {
		in = append(in, float32(i)/(1<<16))
	}
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 200000; i++ {
		in = append(in, r.Float32(), float32(math.Exp(-20*r.Float64())))
	}
	up, down := float32(math.Inf(1)), float32(math.Inf(-1))
	for k := 1; k <= levels; k++ {
		t := ceil32(SRGBDecode((float64(k) - 0.5) / float64(levels)))
		in = append(in, t, math.Nextafter32(t, down), math.Nextafter32(t, up))
	}
	return in
}

func TestQuantiseSRGB8Exact(t *testing.T) {
	bad := 0
	for _, v := range quantiseInputs(255) {
		if got, want := QuantiseSRGB8(v), ref8(v); got != want {
			if bad++; bad < 10 {
				t.Errorf("QuantiseSRGB8(%g) = %d, want %d", v, got, want)
			}
		}
	}
	// The coarse table must be within ±1 of the exact value over each of its
	// cells, or a single correction step would not suffice.
	for i := 0; i < q8N; i++ {
		lo, hi := float32((float64(i)-0.5)/q8N), float32((float64(i)+0.5)/q8N)
		if int(q8lut[i])-int(ref8(hi)) < -1 || int(q8lut[i])-int(ref8(lo)) > 1 {
			t.Fatalf("q8lut[%d] = %d outside ±1 of [%d, %d]", i, q8lut[i], ref8(lo), ref8(hi))
		}
	}
	src := []float32{0, 0.5, 1, 0.0031308}
	dst := make([]uint8, 4)
	QuantiseSRGB8Slice(dst, src)
	for i := range src {
		if dst[i] != ref8(src[i]) {
			t.Errorf("slice[%d] = %d", i, dst[i])
		}
	}
}

func TestQuantiseSRGB16Exact(t *testing.T) {
	bad := 0
	for _, v := range quantiseInputs(65535) {
		if got, want := QuantiseSRGB16(v), ref16(v); got != want {
			if bad++; bad < 10 {
				t.Errorf("QuantiseSRGB16(%g) = %d, want %d", v, got, want)
			}
		}
	}
	// Interpolation estimate error bound (before correction).
	maxErr := 0.0
	for i := 0; i < 1<<22; i++ {
		l := float32(i) / (1 << 22)
		x := l * q16N
		j := int(x)
		e := q16tab[j] + (x-float32(j))*(q16tab[j+1]-q16tab[j])
		maxErr = math.Max(maxErr, math.Abs(float64(e)-65535*SRGBEncode(float64(l))))
	}
	if maxErr > 0.45 {
		t.Errorf("16-bit estimate error %.3f code values, correction step needs < 0.5", maxErr)
	}
	src := []float32{0, 0.5, 1, 0.0031308}
	dst := make([]uint16, 4)
	QuantiseSRGB16Slice(dst, src)
	for i := range src {
		if dst[i] != ref16(src[i]) {
			t.Errorf("slice[%d] = %d", i, dst[i])
		}
	}
}

func TestDequantise(t *testing.T) {
	for i := 0; i < 256; i++ {
		if got, want := SRGB8ToLinear(uint8(i)), float32(SRGBDecode(float64(i)/255)); got != want {
			t.Errorf("SRGB8ToLinear(%d) = %v, want %v", i, got, want)
		}
		if QuantiseSRGB8(SRGB8ToLinear(uint8(i))) != uint8(i) {
			t.Errorf("8-bit round trip fails at %d", i)
		}
	}
	for i := 0; i < 65536; i++ {
		if got, want := SRGB16ToLinear(uint16(i)), float32(SRGBDecode(float64(i)/65535)); got != want {
			t.Fatalf("SRGB16ToLinear(%d) = %v, want %v", i, got, want)
		}
		if QuantiseSRGB16(SRGB16ToLinear(uint16(i))) != uint16(i) {
			t.Fatalf("16-bit round trip fails at %d", i)
		}
	}
}

var sink8 uint8
var sink16 uint16
var sinkF float32

func benchInput() []float32 {
	r := rand.New(rand.NewSource(2))
	in := make([]float32, 1<<16)
	for i := range in {
		in[i] = r.Float32()
	}
	return in
}

func BenchmarkQuantiseSRGB8(b *testing.B) {
	in := benchInput()
	dst := make([]uint8, len(in))
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		QuantiseSRGB8Slice(dst, in)
	}
}

func BenchmarkQuantiseSRGB16(b *testing.B) {
	in := benchInput()
	dst := make([]uint16, len(in))
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		QuantiseSRGB16Slice(dst, in)
	}
}

// BenchmarkSRGBEncode32Pow is the math.Pow baseline for comparison.
func BenchmarkSRGBEncode32Pow(b *testing.B) {
	in := benchInput()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		for _, v := range in {
			sinkF = SRGBEncode32(v)
		}
	}
}

// TestQuantiseSRGB16Fast: within one code value of the exact quantiser over
// a dense sweep of [0, 1] and the special values.
func TestQuantiseSRGB16Fast(t *testing.T) {
	var src []float32
	for i := 0; i <= 1<<20; i++ {
		src = append(src, float32(i)/(1<<20))
	}
	src = append(src, -1, 2, float32(math.NaN()), 0.0031308, 1e-9)
	dst := make([]uint16, len(src))
	QuantiseSRGB16FastSlice(dst, src)
	worst := 0
	for i, l := range src {
		d := int(dst[i]) - int(QuantiseSRGB16(l))
		if d < 0 {
			d = -d
		}
		worst = max(worst, d)
	}
	if worst > 1 {
		t.Fatalf("fast quantiser off by up to %d codes", worst)
	}
}

func BenchmarkQuantiseSRGB16FastSlice(b *testing.B) {
	src := make([]float32, 1<<16)
	for i := range src {
		src[i] = float32(i) / float32(len(src))
	}
	dst := make([]uint16, len(src))
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		QuantiseSRGB16FastSlice(dst, src)
	}
}
