package denoise

import (
	"math"
	"math/rand/v2"
	"testing"
)

// shrinkPlaneSeparate is shrinkPlane with a pass of its own for the first
// level's shrinkage (with its guard against isolated coefficients) and for
// adding the last smooth image: the reference the fused passes must match.
func shrinkPlaneSeparate(p []float32, stride int, a, b []float32, w, h, levels int, k float64) float64 {
	var sigma0 float64
	cur, cs := p, stride
	for j := range levels {
		step := 1 << j
		sigma := levelNoise(cur, cs, w, h, step)
		if j == 0 {
			sigma0 = sigma
		} else {
			sigma = min(sigma, maxCorrelation*sigma0*whiteNoise[j]/whiteNoise[0])
		}
		t2 := float32(k * sigma * k * sigma)
		next := a
		if j > 0 && &cur[0] == &a[0] {
			next = b
		}
		tmp := make([]float32, w)
		for y := range h {
			blurRow(cur, cs, w, h, y, step, tmp, next[y*w:(y+1)*w])
		}
		if j == 0 {
			// The shrunk detail, then each coefficient limited to the
			// range of its eight neighbours' and 0 (borders mirrored),
			// widened by guardMargin thresholds.
			d := make([]float32, w*h)
			for i := range w * h {
				d[i] = garrote(p[i*stride]-next[i], t2)
			}
			for y := range h {
				for x := range w {
					lo, hi := float32(0), float32(0)
					for dy := -1; dy <= 1; dy++ {
						for dx := -1; dx <= 1; dx++ {
							if dx != 0 || dy != 0 {
								v := d[mirror(y+dy, h)*w+mirror(x+dx, w)]
								lo, hi = min(lo, v), max(hi, v)
							}
						}
					}
					m := guardMargin * float32(math.Sqrt(float64(t2)))
					p[(y*w+x)*stride] = min(max(d[y*w+x], lo-m), hi+m)
				}
			}
		}
		for i := range w * h {
			if j == 0 {
				continue
			} else {
				p[i*stride] += garrote(cur[i]-next[i], t2)
			}
		}
		cur, cs = next, 1
	}
	for i := range w * h {
		p[i*stride] += cur[i]
	}
	return sigma0
}

// TestShrinkPlaneFusedPasses: shrinkPlane's fused passes give what one
// pass per step gives (to float rounding), on a plane and on a channel of
// an interleaved image, through one level and through several, with the
// rows split over goroutines.
func TestShrinkPlaneFusedPasses(t *testing.T) {
	const w, h = 67, 45
	rng := rand.New(rand.NewPCG(13, 1))
	for _, stride := range []int{1, 3} {
		for _, levels := range []int{1, 2, LumaLevels} {
			p := make([]float32, w*h*stride)
			for i := range p {
				p[i] = 0.3 + 0.05*float32(rng.NormFloat64()) + 0.2*float32(i%w)/w
			}
			want := append([]float32(nil), p...)
			s0 := shrinkPlane(p, stride, make([]float32, w*h), make([]float32, w*h), make([]float32, w*h), w, h, levels, LumaK)
			r0 := shrinkPlaneSeparate(want, stride, make([]float32, w*h), make([]float32, w*h), w, h, levels, LumaK)
			if s0 != r0 {
				t.Errorf("stride %d, %d levels: σ0 %g, separate passes %g", stride, levels, s0, r0)
			}
			worst := 0.0
			for i := range p {
				worst = max(worst, math.Abs(float64(p[i]-want[i])))
			}
			if worst > 1e-6 {
				t.Errorf("stride %d, %d levels: fused passes differ by up to %g, want ≤ 1e-6", stride, levels, worst)
			}
		}
	}
}

// TestPosIsMax: pos is the builtin max(x, 0), NaN and signed zeros
// included.
func TestPosIsMax(t *testing.T) {
	for _, x := range []float32{1, 1e-30, 0, float32(math.Copysign(0, -1)), -1e-30, -2, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())} {
		got, want := pos(x), max(x, 0)
		if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Errorf("pos(%v) = %v, max gives %v", x, got, want)
		}
	}
}
