package warp

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rawbatch/rawbatch/internal/testtool"
)

// TestVectorSample: the vector path of the bicubic samples (vecSample8,
// eight positions of a channel at a time) gives exactly the scalar
// sample's values, through RemapInto and Window.SampleRow3, for positions
// as a lens correction makes them (radial scales of 0.96 to 1.04 with a
// per-channel difference, so that neighbours' columns step by 0, 1 or 2),
// jittered positions, positions near and past the borders, and windows
// that do not hold every row; and it takes most groups of such a map.
// Under CI the vector path must have run.
func TestVectorSample(t *testing.T) {
	testtool.NeedVector(t, vec)
	const w, h = 203, 61
	rng := rand.New(rand.NewPCG(5, 6))
	src := make([]float32, w*h*3)
	for i := range src {
		src[i] = rng.Float32()*2 - 0.5
	}
	for _, s := range []float64{0.96, 1, 1.04} {
		m := func(y, ch int, sx, sy []float32) {
			k := s * (1 + 0.002*float64(ch-1))
			for x := range sx {
				dx, dy := float64(x)-w/2, float64(y)-h/2
				r2 := (dx*dx + dy*dy) / (w * w / 4)
				f := k * (1 + 0.03*r2)
				sx[x] = float32(w/2 + dx*f)
				sy[x] = float32(h/2 + dy*f)
				if y%7 == 3 { // jittered: columns out of order, rows apart
					sx[x] += float32(2 * math.Sin(float64(7*x+ch)))
					sy[x] += float32(0.7 * math.Cos(float64(3*x+ch)))
				}
			}
		}
		got := Remap(src, w, h, 3, w, h, m)
		sx, sy := make([]float32, 3*w), make([]float32, 3*w)
		row := make([]float32, 3*w)
		taken, groups := 0, 0
		rows := make([][]float32, h)
		for i := range rows {
			rows[i] = src[3*w*i : 3*w*(i+1)]
		}
		for y := range h {
			for ch := range 3 {
				m(y, ch, sx[ch*w:(ch+1)*w], sy[ch*w:(ch+1)*w])
			}
			// Every position against the scalar sampler.
			for ch := range 3 {
				for x := range w {
					want := sample(src, w, h, 3, ch, sx[ch*w+x], sy[ch*w+x])
					if g := got[3*(y*w+x)+ch]; g != want {
						t.Fatalf("scale %v, row %d, channel %d, column %d: Remap %v, sample %v", s, y, ch, x, g, want)
					}
				}
			}
			// A window of a few rows: some positions reach past it.
			lo, hi := max(0, y-3), min(h, y+4)
			win := Window{W: w, H: h, Lo: lo, Rows: rows[lo:hi]}
			win.SampleRow3(sx, sy, row)
			ref := Window{W: w, H: h, Lo: lo, Rows: rows[lo:hi]}
			for ch := range 3 {
				for x := range w {
					want := ref.sample(ch, sx[ch*w+x], sy[ch*w+x])
					px, py := sx[ch*w+x], sy[ch*w+x]
					if px >= 1 && py >= 1 && px < w-2 && py < h-2 && int(py)-1 >= lo && int(py)+2 < hi {
						want = sample(src, w, h, 3, ch, px, py)
					}
					if g := row[3*x+ch]; g != want {
						t.Fatalf("scale %v, row %d, window %d–%d, channel %d, column %d: %v, want %v", s, y, lo, hi-1, ch, x, g, want)
					}
				}
				for x := 0; x+8 <= w; x += 8 {
					groups++
					if vecSample8(sx[ch*w+x:], sy[ch*w+x:], ch, w, w-2, h-2, rows, 0, make([]float32, 24)) {
						taken++
					}
				}
			}
		}
		t.Logf("scale %v: %d of %d groups of eight by the vector path", s, taken, groups)
		if vec && float64(taken) < 0.6*float64(groups) {
			t.Errorf("scale %v: the vector path took only %d of %d groups", s, taken, groups)
		}
	}
}
