package look

import "github.com/rawbatch/rawbatch/pipeline/colour"

// CompressGamut converts one linear RGB triple with toOut (working →
// output space, 3×3) and brings it inside the output cube [0, 1]³ by
// desaturating toward its own luminance Y = lum·out (lum: the output
// space's Y row of its RGB→XYZ matrix): out' = Y + t·(out − Y) with the
// largest t in [0, 1] that puts every channel in [0, 1]. A colour already
// inside is returned unchanged (t = 1); Y is kept, so the move is along the
// line to the neutral of the same luminance, which keeps the hue in linear
// RGB (no per-channel clip shifting it). Y ≤ 0 gives black and Y ≥ 1
// white.
func CompressGamut(toOut colour.Mat3, lum [3]float64, rgb [3]float64) [3]float64 {
	out := toOut.Apply(rgb)
	return desaturateIntoCube(out, luminance(out, lum))
}

func desaturateIntoCube(out [3]float64, y float64) [3]float64 {
	if y <= 0 {
		return [3]float64{}
	}
	if y >= 1 {
		return [3]float64{1, 1, 1}
	}
	t := 1.0
	for _, c := range out {
		switch {
		case c < 0:
			t = min(t, y/(y-c))
		case c > 1:
			t = min(t, (1-y)/(c-y))
		}
	}
	if t == 1 {
		return out
	}
	for i, c := range out {
		out[i] = clamp01(y + t*(c-y))
	}
	return out
}

// CompressGamutImage applies CompressGamut to every pixel of m in place
// (W×H×3, working space in, output space out, all in [0, 1]). lum is the
// output space's luminance row, e.g. colour.SRGB.ToXYZ[1].
func CompressGamutImage(toOut colour.Mat3, lum [3]float64, m Image) {
	for i := 0; i+2 < len(m.Pix); i += 3 {
		o := CompressGamut(toOut, lum, [3]float64{float64(m.Pix[i]), float64(m.Pix[i+1]), float64(m.Pix[i+2])})
		m.Pix[i], m.Pix[i+1], m.Pix[i+2] = float32(o[0]), float32(o[1]), float32(o[2])
	}
}
