package look

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rawbatch/rawbatch/internal/testtool"
)

// TestToneRowsVector: ToneRows (eight pixels at a time where the build
// allows) gives the one-pixel-at-a-time loop's values bit for bit, for
// every length up to 40 pixels and rows longer than a chunk of the vector
// passes, with the default curve's table, another curve's, a random one
// (not monotone) and one whose first value is −0 (which the vector passes
// leave to the scalar loop: toneExactEnds), on pixels with two or three
// equal channels, channels at and beyond 0 and 1, negative, NaN,
// infinite and huge ones.
func TestToneRowsVector(t *testing.T) {
	testtool.NeedVector(t, vec)
	if !toneExactEnds(ToneLUT(DefaultCurve)) {
		t.Fatal("the default curve's table is left to the scalar loop")
	}
	rng := rand.New(rand.NewPCG(19, 20))
	special := []float32{0, float32(math.Copysign(0, -1)), -0.3, 1, 0.99999994, 1.0000001, 3, 1e-40, 1e29, 1e30, 1.0000001e30, -1e30, 3e38,
		float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	lengths := []int{}
	for n := 0; n <= 40; n++ {
		lengths = append(lengths, n)
	}
	lengths = append(lengths, 255, 256, 257, 263, 512, 777, 6000)
	random := make([]float32, toneLUTSize+2)
	for i := range random {
		random[i] = rng.Float32()
	}
	random[toneLUTSize+1] = random[toneLUTSize]
	negZero := append([]float32(nil), random...)
	negZero[0] = float32(math.Copysign(0, -1))
	for _, lut := range [][]float32{ToneLUT(DefaultCurve), ToneLUT(NewParametric(1.4, 0.18, 0.39, 1)), random, negZero} {
		for _, n := range lengths {
			for range 4 {
				pix := toneTestRow(rng, n, special)
				want := append([]float32(nil), pix...)
				toneRowsScalar(lut, want)
				ToneRows(lut, pix)
				for i := range pix {
					if math.Float32bits(pix[i]) != math.Float32bits(want[i]) {
						t.Fatalf("length %d, pixel %d, channel %d: %v, want %v", n, i/3, i%3, pix[i], want[i])
					}
				}
			}
		}
	}
}

// toneTestRow is n pixels of channels in [−0.1, 1.3], one in six a
// special value, one pixel in eight with two equal channels, one in
// sixteen with three.
func toneTestRow(rng *rand.Rand, n int, special []float32) []float32 {
	pix := make([]float32, 3*n)
	for i := range pix {
		pix[i] = rng.Float32()*1.4 - 0.1
		if rng.IntN(6) == 0 {
			pix[i] = special[rng.IntN(len(special))]
		}
	}
	for i := 0; i < len(pix); i += 3 {
		switch rng.IntN(16) {
		case 0, 1:
			a, b := rng.IntN(3), rng.IntN(3)
			pix[i+a] = pix[i+b]
		case 2:
			pix[i+1], pix[i+2] = pix[i], pix[i]
		}
	}
	return pix
}

// toneBenchRow is a 6000-pixel row of scene-linear values in about
// [0, 1.2] (some clip above 1): with step 0 every channel is drawn afresh
// for every pixel (the channels' order changes at random), with step s
// each channel moves by at most s from its neighbour's (an image's smooth
// regions). One pixel in 20 has two or three equal channels, or one at or
// below 0.
func toneBenchRow(step float32) []float32 {
	rng := rand.New(rand.NewPCG(5, 6))
	pix := make([]float32, 3*6000)
	prev := [3]float32{0.3, 0.5, 0.2}
	for i := 0; i < len(pix); i += 3 {
		for c := range 3 {
			v := rng.Float32() * 1.2
			if step > 0 {
				v = prev[c] + step*(2*rng.Float32()-1)
				if v < 0 || v > 1.2 {
					v = prev[c]
				}
				prev[c] = v
			}
			pix[i+c] = v
		}
		switch rng.IntN(20) {
		case 0:
			pix[i+1] = pix[i]
		case 1:
			pix[i+1], pix[i+2] = pix[i], pix[i]
		case 2:
			pix[i+2] = 0
		case 3:
			pix[i] = -0.01
		}
	}
	return pix
}

// BenchmarkToneRows applies the default curve to one 6000-pixel row of
// noise and of smooth colours (toneBenchRow).
func BenchmarkToneRows(b *testing.B) {
	lut := ToneLUT(DefaultCurve)
	for _, bc := range []struct {
		name string
		step float32
	}{{"noise", 0}, {"smooth", 0.01}} {
		b.Run(bc.name, func(b *testing.B) {
			src := toneBenchRow(bc.step)
			pix := make([]float32, len(src))
			for b.Loop() {
				copy(pix, src)
				ToneRows(lut, pix)
			}
		})
	}
}
