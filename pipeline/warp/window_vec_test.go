package warp

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rawbatch/rawbatch/internal/testtool"
)

// TestVectorSample: the vector paths of the bicubic samples (vecSample8
// on interleaved rows, eight positions of a channel at a time;
// vecSampleRun on a Window's planar rows) give exactly the scalar
// sample's values, through RemapInto and Window.SampleRow3, for positions
// as a lens correction makes them (radial scales of 0.96 to 1.04 with a
// per-channel difference, so that neighbours' columns step by 0, 1 or 2),
// jittered positions, positions near and past the borders, and windows
// that do not hold every row; and it takes most groups of such a map,
// every one inside the image whose rows are at most one apart (those on
// two rows among them, and groups at consecutive columns, whose planar
// taps are single loads).
// Under CI the vector path must have run.
func TestVectorSample(t *testing.T) {
	testtool.NeedVector(t, vec)
	const w, h = 203, 61
	src := randomImage(w, h, 5, 6)
	for _, s := range []float64{0.96, 1, 1.04} {
		m := lensLikeMap(w, h, s)
		got := Remap(src, w, h, 3, w, h, m)
		sx, sy := make([]float32, 3*w), make([]float32, 3*w)
		row := make([]float32, 3*w)
		taken, groups, straddling := 0, 0, 0
		rows, irows := planarRows(src, w, h), interleavedRows(src, w, h)
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
					px, py := sx[ch*w+x:ch*w+x+8], sy[ch*w+x:ch*w+x+8]
					ok := vecSample8(px, py, ch, w, w-2, h-2, irows, 0, make([]float32, 24))
					if ok {
						taken++
					}
					// Every group inside the image, its rows at most
					// one apart and its columns within 12 pixels is the
					// vector path's.
					c0, c1, r0, r1 := int(px[0]), int(px[0]), int(py[0]), int(py[0])
					inside := true
					for i := range 8 {
						inside = inside && px[i] >= 1 && py[i] >= 1 && px[i] < w-2 && py[i] < h-2
						c0, c1, r0, r1 = min(c0, int(px[i])), max(c1, int(px[i])), min(r0, int(py[i])), max(r1, int(py[i]))
					}
					if inside && r1-r0 <= 1 && c1-c0 <= 12 && c0+15 <= w && !ok && vec {
						t.Fatalf("scale %v, row %d, channel %d, group at %d (rows %d–%d, columns %d–%d): not by the vector path", s, y, ch, x, r0, r1, c0, c1)
					}
					if ok && r1 != r0 {
						straddling++
					}
				}
			}
		}
		t.Logf("scale %v: %d of %d groups of eight by the vector path, %d of them on two rows", s, taken, groups, straddling)
		if vec && straddling == 0 {
			t.Errorf("scale %v: no group on two rows by the vector path", s)
		}
		if vec && float64(taken) < 0.6*float64(groups) {
			t.Errorf("scale %v: the vector path took only %d of %d groups", s, taken, groups)
		}
	}
}

// TestVectorSampleTwoRowsWindow: a group of eight on two rows (y0 and
// y0+1) is sampled by the vector path when the window holds rows y0−1 to
// y0+3, with the scalar sample's values, and left to the scalar path when
// the window ends a row short.
func TestVectorSampleTwoRowsWindow(t *testing.T) {
	testtool.NeedVector(t, vec)
	if !vec {
		return // the scalar build (RAWBATCH_SCALAR): no vector path to check
	}
	const w, h = 64, 32
	rng := rand.New(rand.NewPCG(7, 8))
	src := make([]float32, w*h*3)
	for i := range src {
		src[i] = rng.Float32()
	}
	rows := interleavedRows(src, w, h)
	px, py := make([]float32, 8), make([]float32, 8)
	for i := range 8 {
		px[i] = 20.25 + 1.1*float32(i)
		py[i] = 10.5 + float32(i/4) // rows 10 and 11
	}
	for ch := range 3 {
		out := make([]float32, 24)
		if !vecSample8(px, py, ch, w, w-2, h-2, rows[9:15], 9, out) {
			t.Fatalf("channel %d: rows 9–14 held, not by the vector path", ch)
		}
		for i := range 8 {
			if want := sample(src, w, h, 3, ch, px[i], py[i]); out[3*i] != want {
				t.Errorf("channel %d, lane %d: %v, want %v", ch, i, out[3*i], want)
			}
		}
		if vecSample8(px, py, ch, w, w-2, h-2, rows[9:13], 9, out) {
			t.Errorf("channel %d: rows 9–12 held (row 13 needed), taken by the vector path", ch)
		}
	}
}

// lensLikeMap is the positions a lens correction of a w×h image makes
// (RowMap): a radial scale s·(1 + 0.03 r²), per channel 0.2 % apart, so
// that neighbours' columns step by 0, 1 or 2; every seventh row jittered
// (columns out of order, rows apart).
func lensLikeMap(w, h int, s float64) RowMap {
	return func(y, ch int, sx, sy []float32) {
		k := s * (1 + 0.002*float64(ch-1))
		for x := range sx {
			dx, dy := float64(x-w/2), float64(y-h/2)
			r2 := (dx*dx + dy*dy) / float64(w*w/4)
			f := k * (1 + 0.03*r2)
			sx[x] = float32(float64(w/2) + dx*f)
			sy[x] = float32(float64(h/2) + dy*f)
			if y%7 == 3 {
				sx[x] += float32(2 * math.Sin(float64(7*x+ch)))
				sy[x] += float32(0.7 * math.Cos(float64(3*x+ch)))
			}
		}
	}
}

// randomImage is a w×h×3 image of values uniform in [−0.5, 1.5) (out of
// range on both sides, as rows after highlight reconstruction and
// denoise may be), from the seeds a, b.
func randomImage(w, h int, a, b uint64) []float32 {
	rng := rand.New(rand.NewPCG(a, b))
	src := make([]float32, w*h*3)
	for i := range src {
		src[i] = rng.Float32()*2 - 0.5
	}
	return src
}

// interleavedRows returns the rows of src (w×h×3, interleaved) as
// RemapInto holds them.
func interleavedRows(src []float32, w, h int) [][]float32 {
	rows := make([][]float32, h)
	for i := range rows {
		rows[i] = src[3*w*i : 3*w*(i+1) : 3*w*(i+1)]
	}
	return rows
}

// planarRows returns the rows of src (w×h×3, interleaved) as a Window
// holds them (Deinterleave3).
func planarRows(src []float32, w, h int) [][]float32 {
	rows := make([][]float32, h)
	for i := range rows {
		rows[i] = make([]float32, 3*w)
		Deinterleave3(rows[i], src[3*w*i:3*w*(i+1)])
	}
	return rows
}

// TestVectorSampleRun: the vector path of Window.SampleRow3Buf
// (vecSampleRun, a channel's groups of eight in one loop) gives exactly
// the scalar path's values (sampleRun) for every group it takes, for
// positions as a lens correction makes them (radial scales of 0.9 to 1.1
// with a per-channel difference, so that the lanes' columns step by 0, 1
// or 2), jittered ones, positions near and past the borders, and windows
// that do not hold every row; it takes every group inside the window
// whose columns grow along it within 12 pixels of the first and whose
// rows are at most one apart, among them groups at consecutive columns,
// at consecutive columns but for one step of two or of none (one load
// from the row and its neighbour for a tap) and others, and groups on
// two rows.
func TestVectorSampleRun(t *testing.T) {
	testtool.NeedVector(t, vec)
	const w, h = 203, 61
	src := randomImage(w, h, 9, 10)
	rows := planarRows(src, w, h)
	kinds := map[string]int{}
	for _, s := range []float64{0.9, 0.96, 1, 1.04, 1.1} {
		for y := range h {
			lo, hi := max(0, y-3), min(h, y+4)
			win := Window{W: w, H: h, Lo: lo, Rows: rows[lo:hi]}
			sx, sy := make([]float32, w), make([]float32, w)
			m := lensLikeMap(w, h, s)
			for ch := range 3 {
				m(y, ch, sx, sy)
				n := w / 8
				dst := make([]float32, 8*n)
				skip := vecSampleRun(&win, win.rowPointers(&RowBuf{}), ch, sx, sy, dst, nil)
				skipped := map[int]bool{}
				for _, g := range skip {
					skipped[int(g)] = true
				}
				want := make([]float32, 8)
				for g := range n {
					px, py := sx[8*g:8*g+8], sy[8*g:8*g+8]
					c0, r0, r1 := int(px[0]), int(py[0]), int(py[0])
					takes, consecutive, oneStep := true, true, true
					lowStep, highStep := false, false
					for i := range 8 {
						c, r := int(px[i]), int(py[i])
						takes = takes && px[i] >= 1 && py[i] >= 1 && px[i] < w-2 && py[i] < h-2 && c >= c0 && c <= c0+12
						r0, r1 = min(r0, r), max(r1, r)
						e := c - c0 - i
						consecutive = consecutive && e == 0
						oneStep = oneStep && e >= -1 && e <= 1
						lowStep, highStep = lowStep || e == -1, highStep || e == 1
					}
					takes = takes && r1-r0 <= 1 && c0+15 <= w && r0-1 >= lo && r1+2 < hi
					if takes && skipped[g] && vec {
						t.Fatalf("scale %v, row %d, channel %d, group %d (columns from %d, rows %d–%d): not by the vector path", s, y, ch, g, c0, r0, r1)
					}
					if skipped[g] {
						continue
					}
					win.sampleRun(ch, px, py, want, 1)
					for i := range 8 {
						if dst[8*g+i] != want[i] {
							t.Fatalf("scale %v, row %d, channel %d, group %d, lane %d: %v, want %v", s, y, ch, g, i, dst[8*g+i], want[i])
						}
					}
					switch {
					case consecutive:
						kinds["consecutive"]++
					case oneStep && !(lowStep && highStep):
						kinds["one step"]++
					default:
						kinds["other"]++
					}
					if r1 != r0 {
						kinds["two rows"]++
					}
				}
			}
		}
	}
	t.Logf("groups by the vector path: %v", kinds)
	if vec {
		for _, k := range []string{"consecutive", "one step", "other", "two rows"} {
			if kinds[k] == 0 {
				t.Errorf("no group %s by the vector path", k)
			}
		}
	}
}

// TestVectorSampleRunNotFinite: a group with a lane at a position that
// is not finite or beyond the int32 range (NaN, ±Inf, ±1e10), or just
// outside the image, is left to the scalar path, and every value equals
// the scalar sample's.
func TestVectorSampleRunNotFinite(t *testing.T) {
	const w, h = 64, 40
	src := randomImage(w, h, 3, 4)
	rows := planarRows(src, w, h)
	win := Window{W: w, H: h, Lo: 0, Rows: rows}
	bad := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e10, -1e10, -0.5, 0.999, w - 2, h - 2}
	for _, v := range bad {
		for lane := range 8 {
			for _, axis := range []int{0, 1} {
				sx, sy := make([]float32, 3*w), make([]float32, 3*w)
				for ch := range 3 {
					for x := range w {
						sx[ch*w+x], sy[ch*w+x] = float32(x)*0.5+9.25, 20.5
					}
				}
				for ch := range 3 {
					i := ch*w + 8 + lane // the second group
					if axis == 0 {
						sx[i] = v
					} else {
						sy[i] = v
					}
				}
				row := make([]float32, 3*w)
				win.SampleRow3(sx, sy, row)
				for ch := range 3 {
					for x := range w {
						want := win.sample(ch, sx[ch*w+x], sy[ch*w+x])
						if g := row[3*x+ch]; g != want && !(g != g && want != want) {
							t.Fatalf("%v in lane %d (axis %d), channel %d, column %d: %v, want %v", v, lane, axis, ch, x, g, want)
						}
					}
				}
				skip := vecSampleRun(&win, win.rowPointers(&RowBuf{}), 0, sx[:w], sy[:w], make([]float32, w), nil)
				if vec && (len(skip) == 0 || skip[0] != 1) {
					t.Fatalf("%v in lane %d (axis %d): groups skipped %v, want group 1 among them", v, lane, axis, skip)
				}
			}
		}
	}
}
