package highlight

import (
	"math"
	"slices"
	"testing"
)

// disc renders w×w white-balanced camera RGB: background colour bg whose
// brightness rises smoothly to 4× at a disc in the centre (radius 12 to
// 50 pixels), each channel clipped at clip[c] as LibRaw's clip does (green
// below red and blue: LibRaw's white level above the data's pile).
func disc(w int, bg [3]float64, clip [3]float64) []float32 {
	pix := make([]float32, w*w*3)
	for y := range w {
		for x := range w {
			d := math.Hypot(float64(x-w/2), float64(y-w/2))
			t := math.Min(1, math.Max(0, (50-d)/38))
			k := 1 + 3*t*t*(3-2*t)
			for c := range 3 {
				pix[(y*w+x)*3+c] = float32(math.Min(bg[c]*k, clip[c]))
			}
		}
	}
	return pix
}

func chroma(p []float32) (q [3]float64, norm float64) {
	m := (float64(p[0]) + float64(p[1]) + float64(p[2])) / 3
	for c := range 3 {
		q[c] = float64(p[c]) - m
		norm += q[c] * q[c]
	}
	return q, math.Sqrt(norm)
}

// hueOK reports whether p is neutral (chroma under 0.01) or has bg's hue
// (chroma direction within about 25° of bg's).
func hueOK(p []float32, bg [3]float64) bool {
	q, n := chroma(p)
	if n < 0.01 {
		return true
	}
	b, bn := chroma([]float32{float32(bg[0]), float32(bg[1]), float32(bg[2])})
	return (q[0]*b[0]+q[1]*b[1]+q[2]*b[2])/(n*bn) > 0.9
}

func TestReconstructDisc(t *testing.T) {
	const w = 160
	wrongHueCases := 0
	for _, bg := range [][3]float64{{0.35, 0.7, 0.3}, {0.7, 0.3, 0.6}, {0.3, 0.45, 0.7}, {0.6, 0.6, 0.6}} {
		// Green clipping at 0.975 turns the centre magenta; blue first at
		// 0.975 would turn it yellow.
		for _, clip := range [][3]float64{{1, 0.975, 1}, {1, 1, 0.975}, {1, 1, 1}} {
			in := disc(w, bg, clip)
			out := Reconstruct(append([]float32(nil), in...), w, w, DefaultThreshold)
			identityFails := false
			for i := 0; i < w*w; i++ {
				p, q := in[3*i:3*i+3], out[3*i:3*i+3]
				if max(p[0], p[1], p[2]) <= DefaultThreshold-blendBand {
					if p[0] != q[0] || p[1] != q[1] || p[2] != q[2] {
						t.Fatalf("bg %v clip %v: pixel %d below the blend changed from %v to %v", bg, clip, i, p, q)
					}
					continue
				}
				if !hueOK(p, bg) {
					identityFails = true
				}
				// own: the pixel with its clipped channels raised to its
				// peak, which keeps the ratio of its unclipped channels.
				own := slices.Clone(p)
				for c := range 3 {
					if own[c] >= DefaultThreshold {
						own[c] = max(p[0], p[1], p[2])
					}
				}
				if !hueOK(q, bg) && !hueOK(q, [3]float64{float64(own[0]), float64(own[1]), float64(own[2])}) {
					t.Fatalf("bg %v clip %v: clipped pixel (%d,%d) %v became %v: neither neutral nor the background's hue nor its unclipped channels'", bg, clip, i%w, i/w, p, q)
				}
				if max(q[0], q[1], q[2]) > 1 || min(q[0], q[1], q[2]) < 0 {
					t.Fatalf("bg %v clip %v: pixel %v outside [0,1]", bg, clip, q)
				}
			}
			if identityFails {
				wrongHueCases++
			}
			// Smooth: along the row through the centre no step between
			// neighbours exceeds 0.1 (the input's largest is under 0.06; a
			// clipped pixel turned white at once would step by 0.6).
			y := w / 2
			for x := 1; x < w; x++ {
				for c := range 3 {
					if d := math.Abs(float64(in[(y*w+x)*3+c] - in[(y*w+x-1)*3+c])); d > 0.06 {
						t.Fatalf("input step %.3f", d)
					}
					if d := math.Abs(float64(out[(y*w+x)*3+c] - out[(y*w+x-1)*3+c])); d > 0.1 {
						t.Errorf("bg %v clip %v: step %.3f in channel %d between x=%d and %d", bg, clip, d, c, x-1, x)
					}
				}
			}
			// Deep inside the clipped area: white.
			if c := out[(y*w+w/2)*3 : (y*w+w/2)*3+3]; min(c[0], c[1], c[2]) < 0.97 {
				t.Errorf("bg %v clip %v: centre %v, want white", bg, clip, c)
			}
		}
	}
	// The input itself has the wrong hue (magenta or yellow centres) in
	// some cases, so the hue check above means something.
	if wrongHueCases < 2 {
		t.Errorf("only %d cases have a wrong hue before reconstruction", wrongHueCases)
	}
}

func TestClipMode(t *testing.T) {
	const w = 160
	bg := [3]float64{0.35, 0.7, 0.3}
	in := disc(w, bg, [3]float64{1, 1, 1})
	in[0] = 1.2 // out of range values are clamped
	out := Clip(append([]float32(nil), in...), w, w, DefaultThreshold)
	for i := 0; i < w*w; i++ {
		p, q := in[3*i:3*i+3], out[3*i:3*i+3]
		if min(p[0], p[1], p[2]) >= DefaultThreshold {
			if q[0] != 1 || q[1] != 1 || q[2] != 1 {
				t.Fatalf("fully clipped pixel %v became %v, want (1,1,1)", p, q)
			}
			continue
		}
		for c := range 3 {
			if want := min(max(p[c], 0), 1); q[c] != want {
				t.Fatalf("pixel %d channel %d: %v, want %v", i, c, q[c], want)
			}
		}
	}
}

// TestReconstructMatchesDirectSums compares the running box sums with a
// direct sum over each clipped pixel's window, on a random image.
func TestReconstructMatchesDirectSums(t *testing.T) {
	const w, h = 70, 45
	in := make([]float32, w*h*3)
	seed := uint32(7)
	for i := range in {
		seed = seed*1664525 + 1013904223
		in[i] = float32(seed>>8) / float32(1<<24) * 1.3
	}
	out := Reconstruct(append([]float32(nil), in...), w, h, DefaultThreshold)
	r := ReconstructRadius(w, h)
	clipped := func(i int) bool { return max(in[3*i], in[3*i+1], in[3*i+2]) >= DefaultThreshold }
	for y := range h {
		for x := range w {
			i := y*w + x
			if max(in[3*i], in[3*i+1], in[3*i+2]) <= DefaultThreshold-blendBand {
				continue
			}
			var rho [3]float64
			var n, un, area float64
			for yy := max(0, y-r); yy <= min(h-1, y+r); yy++ {
				for xx := max(0, x-r); xx <= min(w-1, x+r); xx++ {
					area++
					j := yy*w + xx
					if clipped(j) {
						continue
					}
					un++
					p := in[3*j : 3*j+3]
					if m := max(p[0], p[1], p[2]); m > minChromaLevel {
						for c := range 3 {
							rho[c] += float64(p[c] / m)
						}
						n++
					}
				}
			}
			a := 0.0
			if n > 0 {
				m := math.Max(rho[0], math.Max(rho[1], rho[2]))
				for c := range rho {
					rho[c] /= m
				}
				a = math.Min(1, 2*un/area)
			}
			q := refPixel(in, w, h, x, y, rho, a, n, r, DefaultThreshold)
			for c := range 3 {
				if want := float64(q[c]); math.Abs(float64(out[3*i+c])-want) > 1e-5 {
					t.Fatalf("pixel (%d,%d) channel %d: %v, want %v", x, y, c, out[3*i+c], want)
				}
			}
		}
	}
}

// refPixel is Reconstruct's result for pixel (x, y) of the w×h image
// in (3 channels, as the demosaic made it) given its box's normalised
// unclipped chromaticity rho, weight a and count n of bright unclipped
// pixels (radius r), written out from the formula of Reconstruct's
// documentation: the blend, then the shoulder at the scene peak estimated
// from the 3×3 neighbourhood (edges replicated).
func refPixel(in []float32, w, h, x, y int, rho [3]float64, a, n float64, r int, thr float32) [3]float32 {
	p := in[3*(y*w+x) : 3*(y*w+x)+3]
	peak := float64(max(p[0], p[1], p[2]))
	v := math.Min(peak, 1)
	lo := float64(thr - blendBand)
	t := math.Min(1, (peak-lo)/float64(blendBand))
	t = t * t * (3 - 2*t)
	nw := math.Min(1, n/float64(2*r+1))
	var q [3]float64
	for c := range 3 {
		orig := math.Min(math.Max(float64(p[c]), 0), 1)
		own := orig
		if p[c] >= thr {
			own = v
		}
		rec := nw*((1-a)*own+a*v*rho[c]) + (1-nw)*own
		q[c] = (1-t)*orig + t*rec
	}
	// The scene peak: the least-squares scale of q's chromaticity to
	// the neighbourhood's values, each weighted by how far below the
	// blend band it is.
	mq := math.Max(q[0], math.Max(q[1], q[2]))
	var num, den float64
	for yy := y - 1; yy <= y+1; yy++ {
		for xx := x - 1; xx <= x+1; xx++ {
			j := min(max(yy, 0), h-1)*w + min(max(xx, 0), w-1)
			for c := range 3 {
				pc := float64(in[3*j+c])
				u := 1.0
				if pc >= float64(thr) {
					u = 0
				} else if pc > lo {
					s := (pc - lo) / float64(blendBand)
					u = 1 - s*s*(3-2*s)
				}
				rc := q[c] / mq
				num += u * math.Max(pc, 0) * rc
				den += u * rc * rc
			}
		}
	}
	m := mq
	if den > 0 {
		wt := math.Min(1, den/(9*minSceneWeight))
		m = math.Min(maxSceneLevel, math.Max(mq, wt*num/den+(1-wt)*mq))
	}
	// An isolated pixel near the clip (at most one of its eight
	// neighbours, edges replicated, above the blend band's start) is
	// kept as clip keeps it, blending to the above from one to four
	// such neighbours.
	k := 0
	for yy := y - 1; yy <= y+1; yy++ {
		for xx := x - 1; xx <= x+1; xx++ {
			if yy == y && xx == x {
				continue
			}
			j := min(max(yy, 0), h-1)*w + min(max(xx, 0), w-1)
			if float64(max(in[3*j], in[3*j+1], in[3*j+2])) > lo {
				k++
			}
		}
	}
	iw := math.Min(1, math.Max(0, float64(k-1)/3))
	all := true
	var out [3]float32
	for c := range 3 {
		o := q[c]
		if m > shoulderKnee {
			g := math.Exp(-(m - shoulderKnee) / shoulderScale)
			o = mq * (1 - (1-q[c]/mq)*g)
		}
		cl := math.Min(math.Max(float64(p[c]), 0), 1)
		all = all && p[c] >= thr
		out[c] = float32(iw*o + (1-iw)*cl)
	}
	if all && iw < 1 {
		out = [3]float32{1, 1, 1}
	}
	return out
}

// TestReconstructShoulder: a saturated blue surface (0.08 : 0.21 : 1) lit
// from 0.3 to 2.5 times the clip level along x, blue clipping first.
// Where no channel nears the clip the pixels are unchanged; at 0.95, 1.0
// and 1.05 times the clip (within ReconstructRadius of the unclipped
// surface, whose colour gives the clipped blue's scene value) the
// saturation 1 − min/max falls as the scene brightens, each below the
// surface's 0.92 and at least 0.02 below clip's at the same pixel (clip
// keeps the surface's saturation up to the clip, then shifts the hue). No
// channel exceeds 1.
func TestReconstructShoulder(t *testing.T) {
	const w, h = 200, 24
	in := make([]float32, 3*w*h)
	level := func(x int) float64 { return 0.3 + 2.2*float64(x)/float64(w-1) }
	for y := range h {
		for x := range w {
			for c, v := range [3]float64{0.08, 0.21, 1} {
				in[3*(y*w+x)+c] = float32(math.Min(1, v*level(x)))
			}
		}
	}
	out := Reconstruct(slices.Clone(in), w, h, DefaultThreshold)
	clip := Clip(slices.Clone(in), w, h, DefaultThreshold)
	y := h / 2
	sat := func(p []float32, x int) float64 {
		q := p[3*(y*w+x) : 3*(y*w+x)+3]
		return 1 - float64(min(q[0], q[1], q[2])/max(q[0], q[1], q[2]))
	}
	for x := range w {
		i := 3 * (y*w + x)
		if level(x) < 0.85 && !slices.Equal(out[i:i+3], in[i:i+3]) {
			t.Fatalf("x %d (level %.2f): %v → %v, want unchanged", x, level(x), in[i:i+3], out[i:i+3])
		}
		if m := max(out[i], out[i+1], out[i+2]); m > 1 {
			t.Fatalf("x %d: peak %v above 1", x, m)
		}
	}
	prev := 0.92
	for _, l := range []float64{0.95, 1.0, 1.05} {
		x := int(math.Ceil((l - 0.3) / 2.2 * float64(w-1)))
		s, sc := sat(out, x), sat(clip, x)
		t.Logf("level %.2f: saturation %.3f, clip %.3f", level(x), s, sc)
		if s >= prev || s > sc-0.02 {
			t.Errorf("level %.2f: saturation %.3f, want below %.3f (the level below) and at least 0.02 below clip's %.3f", level(x), s, prev, sc)
		}
		prev = s
	}
}
