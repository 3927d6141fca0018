package lens

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// testLens is a lens for the band's tests on a w×h image: a barrel
// distortion with TCA (points) and a radial vignetting of one gain for
// the three channels (devignette).
func testLens(w, h int) (points func(dst, xy []float32) error, devignette func(pix []float32, y0, rows int) error) {
	cx, cy := float64(w-1)/2, float64(h-1)/2
	half := math.Hypot(cx, cy)
	points = func(dst, xy []float32) error {
		for i := 0; i < len(xy); i += 2 {
			dx, dy := float64(xy[i])-cx, float64(xy[i+1])-cy
			r2 := (dx*dx + dy*dy) / (half * half)
			for ch := range 3 {
				f := 0.97 * (1 + 0.04*r2) * (1 + 0.001*float64(ch-1))
				dst[3*i+2*ch], dst[3*i+2*ch+1] = float32(cx+dx*f), float32(cy+dy*f)
			}
		}
		return nil
	}
	devignette = func(pix []float32, y0, rows int) error {
		for r := range rows {
			for x := range w {
				dx, dy := float64(x)-cx, float64(y0+r)-cy
				g := float32(1 + 0.8*(dx*dx+dy*dy)/(half*half))
				for c := range 3 {
					pix[3*(r*w+x)+c] *= g
				}
			}
		}
		return nil
	}
	return points, devignette
}

// TestBandMatchesWhole: the band form (Band.Rows: its rows devignetted,
// copied planar, sampled a channel's groups at a time) gives bit for bit
// the reference's values (refDevignette, then refRemap: reference_test.go) in orientation
// 1, over bands of several heights, for widths that are and are not
// multiples of eight.
func TestBandMatchesWhole(t *testing.T) {
	for _, size := range [][2]int{{203, 150}, {256, 97}} {
		w, h := size[0], size[1]
		points, devignette := testLens(w, h)
		rng := rand.New(rand.NewPCG(uint64(w), uint64(h)))
		src := make([]float32, w*h*3)
		for i := range src {
			src[i] = rng.Float32()
		}
		whole := append([]float32(nil), src...)
		if err := refDevignette(devignette, whole, w, h); err != nil {
			t.Fatal(err)
		}
		want, err := refRemap(context.Background(), whole, w, h, points)
		if err != nil {
			t.Fatal(err)
		}
		for _, band := range []int{7, 40, h} {
			img := append([]float32(nil), src...)
			b := NewBand(w, h, 0)
			gains, gc, ys, err := NodeGainsCompact(devignette, w, h)
			if err != nil || gc != 1 {
				t.Fatalf("gains: %v, %d a pixel", err, gc)
			}
			b.SetGains(gains, gc, ys)
			g, err := NewNodes(w, h, points)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := b.SetGrid(g); !ok {
				t.Fatal("grid not finite")
			}
			b.Start()
			row := func(y int) []float32 { return img[y*w*3 : (y+1)*w*3] }
			runBands(b, h, band, row)
			for i := range want {
				if img[i] != want[i] {
					t.Fatalf("%d×%d, bands of %d: value %d (row %d) is %v, the whole image's %v", w, h, band, i, i/(3*w), img[i], want[i])
				}
			}
		}
	}
}

// runBands drives b over an h-row image as a stream does: rows arrive
// band at a time, and b finishes each row once the rows its lookahead
// reads are there (all of them at the end). row returns row y.
func runBands(b *Band, h, band int, row func(y int) []float32) {
	done := 0
	for made := band; done < h; made += band {
		target := min(h, made) - b.Lookahead()
		if made >= h {
			target = h
		}
		if target > done {
			b.Rows(done, target, row)
			done = target
		}
	}
}
