package highlight

import (
	"math"
	"slices"
)

// White balance when the file's as-shot multipliers are missing or
// unusable. Camera RGB here is raw camera RGB before white
// balance: (raw − black) / (white − black) per channel, as CFAQuads gives.

// Auto white balance constants (docs/highlights.md).
const (
	// ReferenceCCT is the colour temperature (K) an auto white balance
	// corrects to in full; illuminants warmer than it are corrected only by
	// WarmCorrection of their distance to it in mired (10⁶/T).
	ReferenceCCT = 5500.0
	// WarmCorrection is the fraction of the mired distance between a warm
	// illuminant and ReferenceCCT that is corrected: 3000 K (333 mired,
	// 152 from 5500 K) is corrected as if it were 3670 K (272 mired), so a
	// tungsten-lit picture stays warm as the camera's auto white balance
	// leaves it ("ambience priority").
	WarmCorrection = 0.6
	// MinCCT, MaxCCT bound the estimated colour temperature (K).
	MinCCT, MaxCCT = 2000.0, 12000.0
	// brightFrom, brightTo are the brightness quantiles of the unclipped
	// pixels averaged by EstimateIlluminant (bright grey world).
	brightFrom, brightTo = 0.5, 0.98
	// unclippedBelow: a pixel takes part only if every channel is below
	// this fraction of the white level.
	unclippedBelow = 0.95
)

// WB is a white-balance decision: the multipliers R, G, B, G2 (G = 1) to
// give LibRaw (Params.Multipliers with WBUser, or the as-shot ones with
// WBCamera), where they come from, and why.
type WB struct {
	Multipliers [4]float64
	// Source is "as shot" or "auto".
	Source string
	// Reason says why, for the report: "as shot", "auto: the file has none
	// (camera on auto white balance, cam_mul[0] = -1)", ...
	Reason string
	// EstimatedCCT and CorrectedCCT are, for Source "auto", the colour
	// temperature (K) of the estimated illuminant and the one corrected to
	// neutral (ReferenceCCT and WarmCorrection); 0 otherwise.
	EstimatedCCT, CorrectedCCT float64
}

// AsShotUsable reports whether LibRaw's as-shot multipliers camMul
// (color.cam_mul as read at open, R, G, B, G2) can be used, and if not why.
// Unusable: cam_mul[0] = −1, which LibRaw sets when the camera stored no
// multipliers (Canon CRW in auto white balance, DNG without
// AsShotNeutral), after which LibRaw computes grey world; zero, negative,
// NaN or infinite R, G or B, which make LibRaw fall back to daylight with
// LIBRAW_WARN_BAD_CAMERA_WB (its scale_colors tests cam_mul[0] and
// cam_mul[2]).
func AsShotUsable(camMul [4]float64) (ok bool, reason string) {
	if camMul[0] == -1 {
		return false, "the file has none (camera on auto white balance, cam_mul[0] = -1)"
	}
	for _, m := range camMul[:3] {
		if !(m > 1e-5) || math.IsInf(m, 0) {
			return false, "the file's as-shot multipliers are unusable (zero, negative or not a number)"
		}
	}
	return true, ""
}

// CFAQuads turns Bayer CFA data into camera RGB for EstimateIlluminant: one
// pixel per 2×2 quad (every step-th quad in each direction, step ≥ 1): R, the
// mean of the two greens, B, each as (raw − black[k]) / (white − black[k]),
// clamped at 0. raw is w×h row-major DN (libraw's CopyRaw), colour the CFA
// colour index 0..3 (libraw's CFAPattern). Quads that lack R, G or B (not
// a Bayer pattern) are skipped, so X-Trans data gives nothing. Returns
// interleaved float32 RGB, len a multiple of 3.
func CFAQuads(raw []uint16, w, h int, colour func(row, col int) int, black [4]float64, white float64, step int) []float32 {
	step = max(step, 1)
	out := make([]float32, 0, 3*(w/(2*step)+1)*(h/(2*step)+1))
	for y := 0; y+1 < h; y += 2 * step {
		for x := 0; x+1 < w; x += 2 * step {
			var sum [3]float64
			var n [3]int
			for dy := range 2 {
				for dx := range 2 {
					k := colour(y+dy, x+dx) & 3
					v := math.Max(0, (float64(raw[(y+dy)*w+x+dx])-black[k])/(white-black[k]))
					c := k
					if k == 3 {
						c = 1
					}
					sum[c] += v
					n[c]++
				}
			}
			if n[0] == 0 || n[1] == 0 || n[2] == 0 {
				continue
			}
			out = append(out, float32(sum[0]/float64(n[0])), float32(sum[1]/float64(n[1])), float32(sum[2]/float64(n[2])))
		}
	}
	return out
}

// EstimateIlluminant estimates the camera RGB of the scene illuminant from
// rgb (interleaved camera RGB before white balance, 1 = white level), by
// "bright grey world": the mean of the pixels whose channels are all below
// 0.95 and whose brightness (R+G+B) lies between the 50 % and 98 %
// quantiles of those pixels; bright surfaces reflect the illuminant more
// neutrally than dark ones, and the top 2 % are often light sources or
// specular. Returns the estimate scaled to G = 1 and false when fewer than
// 16 pixels qualify.
func EstimateIlluminant(rgb []float32) ([3]float64, bool) {
	var bright []float32
	for i := 0; i+2 < len(rgb); i += 3 {
		r, g, b := rgb[i], rgb[i+1], rgb[i+2]
		if r < unclippedBelow && g < unclippedBelow && b < unclippedBelow && r+g+b > 0 {
			bright = append(bright, r+g+b)
		}
	}
	if len(bright) < 16 {
		return [3]float64{}, false
	}
	sorted := slices.Clone(bright)
	slices.Sort(sorted)
	lo := sorted[int(brightFrom*float64(len(sorted)-1))]
	hi := sorted[int(brightTo*float64(len(sorted)-1))]
	var sum [3]float64
	n := 0
	for i := 0; i+2 < len(rgb); i += 3 {
		r, g, b := rgb[i], rgb[i+1], rgb[i+2]
		if !(r < unclippedBelow && g < unclippedBelow && b < unclippedBelow) {
			continue
		}
		if s := r + g + b; s >= lo && s <= hi && s > 0 {
			sum[0] += float64(r)
			sum[1] += float64(g)
			sum[2] += float64(b)
			n++
		}
	}
	if n < 16 || !(sum[1] > 0) {
		return [3]float64{}, false
	}
	return [3]float64{sum[0] / sum[1], 1, sum[2] / sum[1]}, true
}

// PlanckianXYZ returns CIE 1931 XYZ (Y = 1) of a black body at t kelvin
// (1667..25000 K), from the cubic approximation of the Planckian locus's
// chromaticity by Kim, Kim, Kim & Hong (2002, US patent 7,024,034; the
// formulas also in Wikipedia's "Planckian locus").
func PlanckianXYZ(t float64) [3]float64 {
	t = math.Min(25000, math.Max(1667, t))
	t1, t2, t3 := 1e3/t, 1e6/(t*t), 1e9/(t*t*t)
	var x float64
	if t <= 4000 {
		x = -0.2661239*t3 - 0.2343589*t2 + 0.8776956*t1 + 0.179910
	} else {
		x = -3.0258469*t3 + 2.1070379*t2 + 0.2226347*t1 + 0.240390
	}
	var y float64
	switch {
	case t <= 2222:
		y = -1.1063814*x*x*x - 1.34811020*x*x + 2.18555832*x - 0.20219683
	case t <= 4000:
		y = -0.9549476*x*x*x - 1.37418593*x*x + 2.09137015*x - 0.16748867
	default:
		y = 3.0817580*x*x*x - 5.87338670*x*x + 3.75112997*x - 0.37001483
	}
	return [3]float64{x / y, 1, (1 - x - y) / y}
}

// CameraWhite returns the camera RGB (scaled to G = 1) of a black body at t
// kelvin: camXYZ · PlanckianXYZ(t), camXYZ the XYZ → camera RGB matrix
// (LibRaw's color.cam_xyz, first three rows; the DNG ColorMatrix or
// Adobe's table).
func CameraWhite(camXYZ [3][3]float64, t float64) [3]float64 {
	xyz := PlanckianXYZ(t)
	var c [3]float64
	for i := range 3 {
		for j := range 3 {
			c[i] += camXYZ[i][j] * xyz[j]
		}
	}
	if c[1] != 0 {
		c = [3]float64{c[0] / c[1], 1, c[2] / c[1]}
	}
	return c
}

// IlluminantCCT returns the colour temperature (K, MinCCT..MaxCCT) of the
// black body whose camera RGB (CameraWhite) is closest to the illuminant e
// (camera RGB, G = 1) in log(R/G), log(B/G): the projection of e onto the
// daylight–tungsten axis of this camera, ignoring its green–magenta tint.
func IlluminantCCT(e [3]float64, camXYZ [3][3]float64) float64 {
	dist := func(t float64) float64 {
		c := CameraWhite(camXYZ, t)
		if !(c[0] > 0 && c[2] > 0) {
			return math.Inf(1)
		}
		dr, db := math.Log(e[0]/c[0]), math.Log(e[2]/c[2])
		return dr*dr + db*db
	}
	// A grid in mired, then golden-section refinement around the best.
	lo, hi := 1e6/MaxCCT, 1e6/MinCCT
	best, bestD := lo, math.Inf(1)
	for m := lo; m <= hi; m += 2 {
		if d := dist(1e6 / m); d < bestD {
			best, bestD = m, d
		}
	}
	a, b := math.Max(lo, best-2), math.Min(hi, best+2)
	const g = 0.6180339887498949
	for range 40 {
		m1, m2 := b-g*(b-a), a+g*(b-a)
		if dist(1e6/m1) < dist(1e6/m2) {
			b = m2
		} else {
			a = m1
		}
	}
	return 1e6 / ((a + b) / 2)
}

// CorrectedCCT returns the colour temperature (K) an auto white balance
// makes neutral for an illuminant of est kelvin: est itself when it is at
// or above ReferenceCCT; else the point WarmCorrection of the way from
// ReferenceCCT to est in mired, so that warm light stays somewhat warm.
func CorrectedCCT(est float64) float64 {
	mRef, mEst := 1e6/ReferenceCCT, 1e6/est
	if mEst <= mRef {
		return est
	}
	return 1e6 / (mRef + WarmCorrection*(mEst-mRef))
}

// AutoWB returns the multipliers (G = 1) of the auto white balance for the
// illuminant e (camera RGB, G = 1, from EstimateIlluminant) with the
// camera's matrix camXYZ: e's tint off the Planckian axis is corrected in
// full, its colour temperature only to CorrectedCCT. A grey under e comes
// out as CameraWhite(est)/CameraWhite(corrected): neutral at ReferenceCCT
// and above, warm below. Also returns the estimated and corrected CCT (K).
func AutoWB(e [3]float64, camXYZ [3][3]float64) (mul [3]float64, est, corrected float64) {
	est = IlluminantCCT(e, camXYZ)
	corrected = CorrectedCCT(est)
	ce, cc := CameraWhite(camXYZ, est), CameraWhite(camXYZ, corrected)
	for c := range 3 {
		mul[c] = ce[c] / (cc[c] * e[c])
	}
	g := mul[1]
	for c := range mul {
		mul[c] /= g
	}
	return mul, est, corrected
}

// ChooseWB decides the white balance of a file: its as-shot multipliers
// camMul (LibRaw's color.cam_mul at open) when AsShotUsable, else the auto
// white balance of AutoWB for the illuminant illuminant() gives (called
// only then; ok false when it cannot estimate), and else daylight from the
// camera matrix (CameraWhite at ReferenceCCT). camXYZ is LibRaw's
// color.cam_xyz (its first three rows).
func ChooseWB(camMul [4]float64, camXYZ [3][3]float64, illuminant func() ([3]float64, bool)) WB {
	if ok, _ := AsShotUsable(camMul); ok {
		g := camMul[1]
		w := WB{Source: "as shot", Reason: "as shot"}
		for c := range 3 {
			w.Multipliers[c] = camMul[c] / g
		}
		w.Multipliers[3] = w.Multipliers[1]
		if camMul[3] > 0 {
			w.Multipliers[3] = camMul[3] / g
		}
		return w
	}
	_, why := AsShotUsable(camMul)
	if illuminant != nil {
		if e, ok := illuminant(); ok {
			mul, est, corr := AutoWB(e, camXYZ)
			return WB{
				Multipliers:  [4]float64{mul[0], mul[1], mul[2], mul[1]},
				Source:       "auto",
				Reason:       "auto: " + why,
				EstimatedCCT: est, CorrectedCCT: corr,
			}
		}
	}
	d := CameraWhite(camXYZ, ReferenceCCT)
	return WB{
		Multipliers: [4]float64{1 / d[0], 1, 1 / d[2], 1},
		Source:      "daylight",
		Reason:      "daylight from the colour matrix: " + why + ", and the picture gives no estimate",
	}
}
