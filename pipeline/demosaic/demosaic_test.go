package demosaic

import (
	"errors"
	"math"
	"runtime"
	"slices"
	"testing"
)

// phases are the four Bayer layouts, as CFA.Colour.
var phases = map[string][4]uint8{
	"RGGB": {0, 1, 1, 2}, "GRBG": {1, 0, 2, 1}, "GBRG": {1, 2, 0, 1}, "BGGR": {2, 1, 1, 0},
}

// mosaic samples truth (W×H×3 in [0, 1]) through the pattern into 16-bit
// data of black level 0 and white 65535.
func mosaic(truth []float32, w, h int, pat [4]uint8) CFA {
	c := CFA{Pix: make([]uint16, w*h), Stride: w, W: w, H: h, Colour: pat}
	for p := range 4 {
		c.Scale[p] = 1.0 / 65535
	}
	for y := range h {
		for x := range w {
			k := c.colourAt(x, y)
			c.Pix[y*w+x] = uint16(math.Round(float64(truth[(y*w+x)*3+k]) * 65535))
		}
	}
	return c
}

// cpsnr is the colour PSNR (dB) of got against want over the pixels at
// least border from the edges.
func cpsnr(got, want []float32, w, h, border int) float64 {
	var se float64
	var n int
	for y := border; y < h-border; y++ {
		for x := border; x < w-border; x++ {
			for c := range 3 {
				d := float64(got[(y*w+x)*3+c] - want[(y*w+x)*3+c])
				se += d * d
				n++
			}
		}
	}
	if se == 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(float64(n)/se)
}

// smooth is a slowly varying colour image.
func smooth(w, h int) []float32 {
	p := make([]float32, w*h*3)
	for y := range h {
		for x := range w {
			fx, fy := float64(x)/float64(w), float64(y)/float64(h)
			p[(y*w+x)*3+0] = float32(0.2 + 0.6*fx)
			p[(y*w+x)*3+1] = float32(0.3 + 0.4*math.Sin(2*fy+fx))
			p[(y*w+x)*3+2] = float32(0.1 + 0.5*fy*fx)
		}
	}
	return p
}

// zonePlate is a grey zone plate (radial chirp) tinted per channel, so
// that its frequencies rise toward the corners.
func zonePlate(w, h int) []float32 {
	p := make([]float32, w*h*3)
	k := math.Pi / float64(2*max(w, h))
	for y := range h {
		for x := range w {
			dx, dy := float64(x-w/2), float64(y-h/2)
			v := 0.5 + 0.4*math.Cos(k*(dx*dx+dy*dy))
			p[(y*w+x)*3+0] = float32(0.9 * v)
			p[(y*w+x)*3+1] = float32(v)
			p[(y*w+x)*3+2] = float32(0.7*v + 0.1)
		}
	}
	return p
}

func run(t *testing.T, f func(CFA, []float32) error, c CFA) []float32 {
	t.Helper()
	dst := make([]float32, c.W*c.H*3)
	if err := f(c, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestQualityAllPhases: on a smooth image both demosaics are close to the
// truth in every Bayer phase, RCD beats bilinear on a zone plate, and both
// keep each photosite's own sample.
func TestQualityAllPhases(t *testing.T) {
	const w, h = 300, 200
	sm, zp := smooth(w, h), zonePlate(w, h)
	for name, pat := range phases {
		c := mosaic(sm, w, h, pat)
		r, b := run(t, RCD, c), run(t, Bilinear, c)
		if q := cpsnr(r, sm, w, h, 0); q < 55 {
			t.Errorf("%s smooth: RCD CPSNR %.1f dB, want ≥ 55", name, q)
		}
		if q := cpsnr(b, sm, w, h, 1); q < 45 {
			t.Errorf("%s smooth: bilinear CPSNR %.1f dB, want ≥ 45", name, q)
		}
		cz := mosaic(zp, w, h, pat)
		rz, bz := run(t, RCD, cz), run(t, Bilinear, cz)
		qr, qb := cpsnr(rz, zp, w, h, 4), cpsnr(bz, zp, w, h, 4)
		t.Logf("%s: smooth RCD %.1f bilinear %.1f; zone plate RCD %.1f bilinear %.1f dB", name, cpsnr(r, sm, w, h, 0), cpsnr(b, sm, w, h, 1), qr, qb)
		if qr < qb+3 {
			t.Errorf("%s zone plate: RCD %.1f dB, bilinear %.1f dB; want RCD ≥ 3 dB better", name, qr, qb)
		}
		for y := range h {
			for x := range w {
				k := cz.colourAt(x, y)
				v := float32(cz.Pix[y*w+x]) / 65535
				if math.Abs(float64(rz[(y*w+x)*3+k]-v)) > 1e-6 || math.Abs(float64(bz[(y*w+x)*3+k]-v)) > 1e-6 {
					t.Fatalf("%s (%d,%d): own sample %g, RCD %g, bilinear %g", name, x, y, v, rz[(y*w+x)*3+k], bz[(y*w+x)*3+k])
				}
			}
		}
	}
}

// TestFlat: a flat colour comes out exactly, borders included.
func TestFlat(t *testing.T) {
	const w, h = 131, 77 // not tile multiples, odd
	flat := make([]float32, w*h*3)
	for i := range flat {
		flat[i] = [3]float32{0.25, 0.5, 0.125}[i%3]
	}
	for _, f := range []func(CFA, []float32) error{RCD, Bilinear} {
		got := run(t, f, mosaic(flat, w, h, phases["GBRG"]))
		for i := range got {
			if math.Abs(float64(got[i]-flat[i])) > 1e-4 {
				t.Fatalf("pixel %d channel %d: %g, want %g", i/3, i%3, got[i], flat[i])
			}
		}
	}
}

// TestLevels: black per phase, the black pattern and the scale normalise
// the samples, clipped to [0, 1].
func TestLevels(t *testing.T) {
	c := CFA{Pix: []uint16{100, 1100, 2100, 60000, 90, 600, 1000, 5000}, Stride: 4, W: 4, H: 2, Colour: phases["RGGB"],
		Black: [4]float32{100, 100, 100, 100}, BlackPattern: []float32{0, 50}, PatternRows: 1, PatternCols: 2,
		Scale: [4]float32{1.0 / 1000, 1.0 / 2000, 1.0 / 2000, 1.0 / 4000}}
	row := make([]float32, 4)
	c.normRow(0, 0, row)
	if want := []float32{0, 0.475, 1, 1}; !approx(row, want) {
		t.Errorf("row 0: %v, want %v", row, want)
	}
	c.normRow(1, 0, row)
	if want := []float32{0, 0.1125, 0.45, 1.2125 - 0.2125}; !approx(row, want) {
		t.Errorf("row 1: %v, want %v", row, want)
	}
}

func approx(a, b []float32) bool {
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-6 {
			return false
		}
	}
	return len(a) == len(b)
}

// TestParallelDeterminism: the same output on one goroutine and on four.
func TestParallelDeterminism(t *testing.T) {
	const w, h = 517, 389
	c := mosaic(zonePlate(w, h), w, h, phases["BGGR"])
	prev := runtime.GOMAXPROCS(1)
	one := run(t, RCD, c)
	runtime.GOMAXPROCS(4)
	four := run(t, RCD, c)
	runtime.GOMAXPROCS(prev)
	c.Threads = 3
	three := run(t, RCD, c)
	if !slices.Equal(one, four) || !slices.Equal(one, three) {
		t.Error("RCD output depends on the number of goroutines")
	}
}

// TestSmallAndInvalid: tiny images demosaic without panicking; a pattern
// that is not Bayer and short buffers are errors.
func TestSmallAndInvalid(t *testing.T) {
	for _, sz := range [][2]int{{1, 1}, {2, 2}, {3, 5}, {1, 9}, {7, 2}, {13, 11}} {
		w, h := sz[0], sz[1]
		c := mosaic(smooth(w, h), w, h, phases["RGGB"])
		for _, f := range []func(CFA, []float32) error{RCD, Bilinear} {
			got := run(t, f, c)
			for _, v := range got {
				if !(v >= 0 && v <= 1) {
					t.Fatalf("%d×%d: value %g outside [0, 1]", w, h, v)
				}
			}
		}
	}
	c := mosaic(smooth(4, 4), 4, 4, [4]uint8{1, 1, 0, 2})
	if err := RCD(c, make([]float32, 48)); !errors.Is(err, ErrNotBayer) {
		t.Errorf("GGRB: %v, want ErrNotBayer", err)
	}
	c.Colour = phases["RGGB"]
	if err := RCD(c, make([]float32, 47)); err == nil {
		t.Error("short output accepted")
	}
	c.Pix = c.Pix[:15]
	if err := Bilinear(c, make([]float32, 48)); err == nil {
		t.Error("short input accepted")
	}
}

// BenchmarkRCD demosaics a 12 MP zone plate.
func BenchmarkRCD(b *testing.B) {
	const w, h = 4000, 3000
	c := mosaic(zonePlate(w, h), w, h, phases["RGGB"])
	dst := make([]float32, w*h*3)
	for b.Loop() {
		if err := RCD(c, dst); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDone: RCD reports rows it no longer reads in increasing order, up
// to H, and never one it reads afterwards (rows above a reported y are
// poisoned when reported: the output stays the same).
func TestDone(t *testing.T) {
	const w, h = 300, 700
	c := mosaic(zonePlate(w, h), w, h, phases["GRBG"])
	want := run(t, RCD, c)
	poisoned := mosaic(zonePlate(w, h), w, h, phases["GRBG"])
	var ys []int
	poisoned.Done = func(y int) {
		if len(ys) > 0 && y <= ys[len(ys)-1] {
			t.Errorf("Done(%d) after Done(%d)", y, ys[len(ys)-1])
		}
		ys = append(ys, y)
		for i := range y * w {
			poisoned.Pix[i] = 65535
		}
	}
	prev := runtime.GOMAXPROCS(1) // reported rows are poisoned without a lock
	got := run(t, RCD, poisoned)
	runtime.GOMAXPROCS(prev)
	if len(ys) < 3 || ys[len(ys)-1] != h {
		t.Errorf("Done calls %v, want several ending at %d", ys, h)
	}
	if !slices.Equal(got, want) {
		t.Error("a row reported done was read afterwards")
	}
}

// TestStop: RCD stops between bands when asked, with ErrStopped.
func TestStop(t *testing.T) {
	const w, h = 200, 600
	c := mosaic(smooth(w, h), w, h, phases["RGGB"])
	bands := 0
	c.Stop = func() bool { bands++; return bands > 2 }
	c.Threads = 1
	if err := RCD(c, make([]float32, w*h*3)); !errors.Is(err, ErrStopped) {
		t.Errorf("RCD asked to stop: %v, want ErrStopped", err)
	}
	if bands != 3 {
		t.Errorf("Stop asked %d times, want 3 (two bands run)", bands)
	}
	c.Stop = func() bool { return false }
	if err := RCD(c, make([]float32, w*h*3)); err != nil {
		t.Error(err)
	}
}
