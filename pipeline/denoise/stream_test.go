package denoise

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"
)

// textured is a w×h noisy image with edges and texture (a noisy step,
// brighter squares, a gradient), so that every level's detail and
// threshold matters.
func textured(w, h int, seed uint64) []float32 {
	pix, _ := stepImage(w, h, 0.05, 0.4, [3]float64{0.6, 1, 0.8}, seed)
	for y := range h {
		for x := range w {
			for c := range 3 {
				i := 3*(y*w+x) + c
				if (x/7+y/5)%3 == 0 {
					pix[i] *= 1.5
				}
				pix[i] += float32(x+y) / float32(4*(w+h))
			}
		}
	}
	return pix
}

// streamSizes are the image sizes the streaming tests try: odd and even
// widths and heights, ones below every level's support (mirrored edges
// bounce more than once), a single row and a single column.
var streamSizes = [][2]int{{97, 203}, {96, 130}, {64, 61}, {33, 17}, {5, 3}, {8, 1}, {1, 7}, {2, 2}, {130, 96}}

// TestNoiseMeterMatchesWavelet: NoiseMeter, fed the rows in bands of any
// height (reading each row once, none above its band), measures exactly
// the Noise Wavelet measures on the whole image.
func TestNoiseMeterMatchesWavelet(t *testing.T) {
	for _, sz := range streamSizes {
		w, h := sz[0], sz[1]
		src := textured(w, h, uint64(w*1000+h))
		want := Wavelet(slices.Clone(src), w, h, 1)
		for _, band := range []int{1, 2, 5, 31, 64, h} {
			m := NewNoiseMeter(w, h, Turn{})
			lo := 0
			row := func(y int) []float32 {
				if y < lo || y >= lo+band {
					t.Fatalf("%d×%d band %d: row %d read while in rows %d..%d", w, h, band, y, lo, lo+band-1)
				}
				return src[3*y*w : 3*(y+1)*w]
			}
			for lo = 0; lo < h; lo += band {
				if _, ok := m.Levels(); ok {
					t.Fatalf("%d×%d: levels before the last row", w, h)
				}
				m.Rows(lo+band, row)
			}
			l, ok := m.Levels()
			if !ok || l.Noise() != want {
				t.Errorf("%d×%d band %d: meter %+v (ok %v), Wavelet %+v", w, h, band, l.Noise(), ok, want)
			}
		}
	}
}

// TestDenoiserMatchesWavelet: the Denoiser, with the noise NoiseMeter
// measured, gives Wavelet's pixels on the whole image (identical), for
// bands of any height, reading only the rows it may (from its next row to
// Lookahead below its band) and at strengths 0.5 and 2.
func TestDenoiserMatchesWavelet(t *testing.T) {
	for _, sz := range streamSizes {
		w, h := sz[0], sz[1]
		src := textured(w, h, uint64(w+h))
		m := NewNoiseMeter(w, h, Turn{})
		m.Rows(h, func(y int) []float32 { return src[3*y*w : 3*(y+1)*w] })
		l, _ := m.Levels()
		for _, st := range []float64{0.5, 2} {
			whole := slices.Clone(src)
			Wavelet(whole, w, h, st)
			if w*h > 16 && slices.Equal(whole, src) {
				t.Fatalf("%d×%d: nothing denoised", w, h)
			}
			for _, band := range []int{1, 3, 32, 64, 128, h} {
				name := fmt.Sprintf("%d×%d strength %g band %d", w, h, st, band)
				pix := slices.Clone(src)
				d := NewDenoiser(w, h, st, l, Turn{})
				lo := 0
				row := func(y int) []float32 {
					if y < lo || y >= lo+band+d.Lookahead() {
						t.Fatalf("%s: row %d read while finishing from %d", name, y, lo)
					}
					return pix[3*y*w : 3*(y+1)*w]
				}
				for lo = 0; lo < h; lo += band {
					d.Rows(lo+band, row)
					if d.Next() != min(h, lo+band) {
						t.Fatalf("%s: next %d after rows to %d", name, d.Next(), lo+band)
					}
				}
				worst := float32(0)
				for i := range pix {
					worst = max(worst, pix[i]-whole[i], whole[i]-pix[i])
				}
				if worst != 0 {
					t.Errorf("%s: differs from Wavelet by up to %g", name, worst)
				}
			}
		}
	}
}

// TestDenoiserZeroStrength: strength 0 leaves the rows as they are.
func TestDenoiserZeroStrength(t *testing.T) {
	const w, h = 40, 30
	src := textured(w, h, 9)
	pix := slices.Clone(src)
	d := NewDenoiser(w, h, 0, NoiseLevels{}, Turn{})
	d.Rows(h, func(y int) []float32 { return pix[3*y*w : 3*(y+1)*w] })
	if !slices.Equal(pix, src) || d.Next() != h {
		t.Error("strength 0 changed the rows")
	}
}

// turned returns the w×h RGB image pix made upright by a LibRaw flip code
// (upright (r, c) from source (r', c'): (c, r) if flip&4, then r' = h−1−r'
// if flip&2, c' = w−1−c' if flip&1), with its size.
func turned(pix []float32, w, h, flip int) ([]float32, int, int) {
	uw, uh := w, h
	if flip&4 != 0 {
		uw, uh = h, w
	}
	out := make([]float32, len(pix))
	for r := range uh {
		for c := range uw {
			sr, sc := r, c
			if flip&4 != 0 {
				sr, sc = c, r
			}
			if flip&2 != 0 {
				sr = h - 1 - sr
			}
			if flip&1 != 0 {
				sc = w - 1 - sc
			}
			copy(out[3*(r*uw+c):3*(r*uw+c)+3], pix[3*(sr*w+sc):3*(sr*w+sc)+3])
		}
	}
	return out, uw, uh
}

// TestStreamTurned: rows turned by any flip code (mirrored, rotated,
// transposed; odd and even sizes), streamed in bands of 1, 5, 32 rows or
// at once with that flip's Turn, give
// Wavelet's noise and pixels on the image they were turned from, turned
// the same way, within float rounding (the sums run in another order):
// the sample grid and the colour grid are laid on the same pixels.
// Without the Turn (the grids laid on the upright rows) odd sizes and the
// noise sampled every second pixel of an image whose noise alternates from
// one pixel to the next, as a demosaic's does, come out differently
// (noise several per cent off, pixels by 0.01 and more).
func TestStreamTurned(t *testing.T) {
	var without float32 // the largest difference without the Turn
	for _, sz := range [][2]int{{97, 203}, {96, 130}, {33, 17}, {64, 61}} {
		w, h := sz[0], sz[1]
		src := textured(w, h, uint64(w*h))
		// Noise that alternates with the pixels' parity, as a demosaic's
		// does from one CFA site to the next.
		for y := range h {
			for x := range w {
				if (x+y)%2 == 0 {
					for c := range 3 {
						i := 3*(y*w+x) + c
						src[i] = 0.5*src[i] + 0.5*src[3*(y*w+(x+1)%w)+c]
					}
				}
			}
		}
		whole := slices.Clone(src)
		want := Wavelet(whole, w, h, 1)
		for flip := 1; flip < 8; flip++ {
			up, uw, uh := turned(src, w, h, flip)
			wantUp, _, _ := turned(whole, w, h, flip)
			for k, turn := range []Turn{TurnOf(flip), {}} {
				band := []int{5, 32, 1, uh}[(flip+k)%4] // bands across the colour grid's rows too
				m := NewNoiseMeter(uw, uh, turn)
				for y := 0; y < uh; y += band {
					m.Rows(y+band, func(y int) []float32 { return up[3*y*uw : 3*(y+1)*uw] })
				}
				l, _ := m.Levels()
				pix := slices.Clone(up)
				d := NewDenoiser(uw, uh, 1, l, turn)
				for y := 0; y < uh; y += band {
					d.Rows(y+band, func(y int) []float32 { return pix[3*y*uw : 3*(y+1)*uw] })
				}
				n := l.Noise()
				rel := max(math.Abs(n.Luma/want.Luma-1), math.Abs(n.Chroma1/want.Chroma1-1), math.Abs(n.Chroma2/want.Chroma2-1))
				worst := float32(0)
				for i := range pix {
					worst = max(worst, pix[i]-wantUp[i], wantUp[i]-pix[i])
				}
				if turn == TurnOf(flip) && (rel > 1e-5 || worst > 1e-5) {
					t.Errorf("%d×%d flip %d: noise %+v (Wavelet %+v, %.2g relative), pixels up to %g off", w, h, flip, n, want, rel, worst)
				}
				if turn != TurnOf(flip) {
					t.Logf("%d×%d flip %d without its Turn: noise %.2g relative off, pixels up to %g", w, h, flip, rel, worst)
					without = max(without, worst)
				}
			}
		}
	}
	if without < 1e-3 {
		t.Errorf("without the Turn the pixels differ by %g at most: the test cannot tell", without)
	}
}

// BenchmarkDenoiseStreamed compares, on a 12 MP noisy image (4240×2832,
// GOMAXPROCS goroutines), Wavelet on the whole image with its streamed
// form: NoiseMeter over every row, then Denoiser in bands of 64 rows (the
// smoothings run twice). ms/op per form.
func BenchmarkDenoiseStreamed(b *testing.B) {
	const w, h = 4240, 2832
	src := textured(w, h, 5)
	pix := make([]float32, len(src))
	row := func(y int) []float32 { return pix[3*y*w : 3*(y+1)*w] }
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			copy(pix, src)
			Wavelet(pix, w, h, 1)
		}
	})
	b.Run("streamed", func(b *testing.B) {
		for b.Loop() {
			copy(pix, src)
			m := NewNoiseMeter(w, h, Turn{})
			for y := 0; y < h; y += 64 {
				m.Rows(y+64, row)
			}
			l, _ := m.Levels()
			d := NewDenoiser(w, h, 1, l, Turn{})
			for y := 0; y < h; y += 64 {
				d.Rows(y+64, row)
			}
		}
	})
	b.Run("meter", func(b *testing.B) {
		for b.Loop() {
			m := NewNoiseMeter(w, h, Turn{})
			for y := 0; y < h; y += 64 {
				m.Rows(y+64, func(y int) []float32 { return src[3*y*w : 3*(y+1)*w] })
			}
		}
	})
}

// TestStreamOneThread: the meter and the denoiser give Wavelet's noise
// and pixels on one thread too, where par makes each parallel call one
// call over all its rows (a worker converting on one thread runs them so).
func TestStreamOneThread(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const w, h = 300, 200
	src := textured(w, h, 7)
	whole := slices.Clone(src)
	want := Wavelet(whole, w, h, 0.5)
	m := NewNoiseMeter(w, h, Turn{})
	pix := slices.Clone(src)
	row := func(y int) []float32 { return pix[3*y*w : 3*(y+1)*w] }
	for y := 0; y < h; y += 64 {
		m.Rows(y+64, row)
	}
	l, ok := m.Levels()
	if !ok || l.Noise() != want {
		t.Fatalf("meter on one thread: %+v (ok %v), Wavelet %+v", l.Noise(), ok, want)
	}
	d := NewDenoiser(w, h, 0.5, l, Turn{})
	for y := 0; y < h; y += 64 {
		d.Rows(y+64, row)
	}
	if !slices.Equal(pix, whole) {
		t.Errorf("denoiser on one thread differs from Wavelet")
	}
}
