package lens

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rawbatch/rawbatch/internal/testtool"
)

// TestVecLerp8: the vector interpolation of an interval of eight pixels
// (vecLerp8, Nodes.row's) gives exactly the scalar loop's positions, and
// the vector devignetting of a row (vecGains) the scalar loop's values.
// Under CI the vector path must have run.
func TestVecLerp8(t *testing.T) {
	testtool.NeedVector(t, vec)
	rng := rand.New(rand.NewPCG(7, 8))
	for range 1000 {
		ts := make([]float32, 8)
		for i := range ts {
			ts[i] = rng.Float32()
		}
		ax, ay := rng.Float32()*6000, rng.Float32()*4000
		dx, dy := rng.Float32()*20-10, rng.Float32()*2-1
		px, py := make([]float32, 8), make([]float32, 8)
		did := vecLerp8(ts, px, py, ax, ay, dx, dy)
		if did != vec {
			t.Fatalf("vecLerp8 did %v with AVX2 %v", did, vec)
		}
		if !did {
			return
		}
		for n, tt := range ts {
			if wx, wy := ax+tt*dx, ay+tt*dy; px[n] != wx || py[n] != wy {
				t.Fatalf("pixel %d: (%v, %v), the scalar loop's (%v, %v)", n, px[n], py[n], wx, wy)
			}
		}
	}
}

// gainRow makes two random rows of w node gains a, b (in [1, 2)), a row
// of w random pixels, and that row multiplied by the gains interpolated
// at 0.3 from a to b, as the scalar loop does.
func gainRow(rng *rand.Rand, w int) (a, b, row, want []float32) {
	a, b = make([]float32, w), make([]float32, w)
	for i := range a {
		a[i], b[i] = 1+rng.Float32(), 1+rng.Float32()
	}
	row = make([]float32, 3*w)
	for i := range row {
		row[i] = rng.Float32()
	}
	want = append([]float32(nil), row...)
	for x := range w {
		g := a[x] + 0.3*(b[x]-a[x])
		want[3*x] *= g
		want[3*x+1] *= g
		want[3*x+2] *= g
	}
	return a, b, row, want
}

func TestVecGains(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, w := range []int{1, 7, 8, 9, 63, 64, 6001} {
		a, b, row, want := gainRow(rng, w)
		n := vecGains(row, a, b, 0.3)
		if vec && n != w&^7 || !vec && n != 0 {
			t.Fatalf("%d pixels: vecGains did %d with AVX2 %v", w, n, vec)
		}
		for x := n; x < w; x++ {
			g := a[x] + 0.3*(b[x]-a[x])
			row[3*x] *= g
			row[3*x+1] *= g
			row[3*x+2] *= g
		}
		for i := range row {
			if row[i] != want[i] {
				t.Fatalf("%d pixels: value %d is %v, the scalar loop's %v", w, i, row[i], want[i])
			}
		}
	}
}

// TestVecGainsPlanar: copyRow's vector loop writes the scalar loop's
// products (the row devignetted in place, then copied planar) for its
// 8k pixels, and touches no others.
func TestVecGainsPlanar(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	for _, w := range []int{1, 7, 8, 9, 63, 64, 6001} {
		a, b, row, want := gainRow(rng, w)
		dst := make([]float32, 3*w)
		for i := range dst {
			dst[i] = -1
		}
		n := vecGainsPlanar(dst[:w], dst[w:2*w], dst[2*w:], row, a, b, 0.3)
		if vec && n != w&^7 || !vec && n != 0 {
			t.Fatalf("%d pixels: vecGainsPlanar did %d with AVX2 %v", w, n, vec)
		}
		for x := range w {
			for c := range 3 {
				v, exp := dst[c*w+x], want[3*x+c]
				if x >= n {
					exp = -1
				}
				if v != exp {
					t.Fatalf("%d pixels: pixel %d channel %d is %v, want %v", w, x, c, v, exp)
				}
			}
		}
	}
}

// TestVecOneGain: NodeGainsCompact's vector loop takes a row's gains
// eight pixels at a time while the three of every pixel are equal
// (signed zeros alike), and stops before the eight with a pixel whose
// gains differ or are NaN.
func TestVecOneGain(t *testing.T) {
	for _, w := range []int{1, 7, 8, 9, 64, 6001} {
		for _, bad := range []int{-1, 0, 5, 8, 33, w - 1} {
			if bad >= w {
				continue
			}
			for _, kind := range []string{"differ", "NaN", "zeros"} {
				row, one := make([]float32, 3*w), make([]float32, w)
				for x := range w {
					g := 1 + float32(x)/float32(w)
					row[3*x], row[3*x+1], row[3*x+2] = g, g, g
				}
				stop := w &^ 7
				if bad >= 0 {
					switch kind {
					case "differ":
						row[3*bad+2] += 1e-3
						stop = min(stop, bad&^7)
					case "NaN":
						nan := float32(math.NaN())
						row[3*bad], row[3*bad+1], row[3*bad+2] = nan, nan, nan
						stop = min(stop, bad&^7)
					case "zeros":
						row[3*bad], row[3*bad+1], row[3*bad+2] = 0, float32(math.Copysign(0, -1)), 0
					}
				}
				n := vecOneGain(one, row)
				if vec && n != stop || !vec && n != 0 {
					t.Fatalf("%d pixels, %s at %d: took %d, want %d (AVX2 %v)", w, kind, bad, n, stop, vec)
				}
				for x := range n {
					if math.Float32bits(one[x]) != math.Float32bits(row[3*x]) {
						t.Fatalf("%d pixels, %s at %d: pixel %d is %v, want %v", w, kind, bad, x, one[x], row[3*x])
					}
				}
			}
		}
	}
}

// TestVecRow: the grid's positions of rows of widths 1 to 40 and 6000
// (vecRow's intervals of eight and the scalar loop's rest) are those of
// the scalar loop alone, the node rows interpolated in y as Nodes.row
// interpolates them.
func TestVecRow(t *testing.T) {
	testtool.NeedVector(t, vec)
	rng := rand.New(rand.NewPCG(11, 12))
	widths := []int{6000}
	for w := 1; w <= 40; w++ {
		widths = append(widths, w)
	}
	for _, w := range widths {
		h := 20
		g, err := NewNodes(w, h, func(dst, xy []float32) error {
			for i := 0; i < len(xy); i += 2 {
				for ch := range 3 {
					dst[3*i+2*ch] = xy[i]*1.01 + rng.Float32()
					dst[3*i+2*ch+1] = xy[i+1]*0.99 + rng.Float32()
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, y := range []int{0, 3, 8, 19} {
			for ch := range 3 {
				sx, sy := make([]float32, w), make([]float32, w)
				g.row(y, ch, sx, sy)
				// The scalar loop's positions.
				j := min(y/Step, len(g.ys)-2)
				if len(g.ys) == 1 {
					j = 0
				}
				j1 := min(j+1, len(g.ys)-1)
				ty := float32(0)
				if g.ys[j1] > g.ys[j] {
					ty = float32(y-g.ys[j]) / float32(g.ys[j1]-g.ys[j])
				}
				nx := len(g.xs)
				for x := range w {
					k := int(g.kx[x])
					node := func(k int) (float32, float32) {
						ax, ay := g.node(j, k, ch)
						bx, by := g.node(j1, k, ch)
						return ax + ty*(bx-ax), ay + ty*(by-ay)
					}
					ax, ay := node(k)
					var dx, dy float32
					if k+1 < nx {
						bx, by := node(k + 1)
						dx, dy = bx-ax, by-ay
					}
					if wx, wy := ax+g.tx[x]*dx, ay+g.tx[x]*dy; sx[x] != wx || sy[x] != wy {
						t.Fatalf("width %d, row %d, channel %d, pixel %d: (%v, %v), the scalar loop's (%v, %v)", w, y, ch, x, sx[x], sy[x], wx, wy)
					}
				}
			}
		}
	}
}

// TestVecLerpDiffRow: a node row interpolated in y (vecLerpRow) and its
// differences to the next node (vecDiffRow) are the scalar loops' values
// for rows of 1 to 40 nodes, and the kernels do the whole groups of eight
// (of the differences: of the first len−1).
func TestVecLerpDiffRow(t *testing.T) {
	testtool.NeedVector(t, vec)
	rng := rand.New(rand.NewPCG(13, 14))
	for nx := 1; nx <= 40; nx++ {
		a, b := make([]float32, nx), make([]float32, nx)
		for k := range a {
			a[k], b[k] = rng.Float32()*6000, rng.Float32()*6000
		}
		ty := rng.Float32()
		l, d := make([]float32, nx), make([]float32, nx)
		n := vecLerpRow(a, b, ty, l)
		m := vecDiffRow(a, d)
		if vec && (n != nx&^7 || m != (nx-1)&^7) || !vec && (n != 0 || m != 0) {
			t.Fatalf("%d nodes: vecLerpRow did %d, vecDiffRow %d, with AVX2 %v", nx, n, m, vec)
		}
		for k := range n {
			if want := a[k] + ty*(b[k]-a[k]); l[k] != want {
				t.Fatalf("%d nodes: node %d interpolated %v, the scalar loop's %v", nx, k, l[k], want)
			}
		}
		for k := range m {
			if want := a[k+1] - a[k]; d[k] != want {
				t.Fatalf("%d nodes: difference %d is %v, the scalar loop's %v", nx, k, d[k], want)
			}
		}
	}
}
