package lens

import (
	"context"
	"runtime"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/internal/lensfun"
)

// BenchmarkLensStream compares the lens correction of a 24 MP image
// (6000×4000, the EF 24-105 at 24 mm f/4 on the 6D: vignetting,
// distortion, TCA) on the reference path (whole: refDevignette and
// refRemap, into a second image) with the band form's (band: the tables as
// lensBand makes them, then the filter over 128-row bands of a window,
// here the whole image, with its lookahead), orientation 1 and 6.
// lensfun's own work (the node rows' gains and the nodes' positions, the
// same on both paths, about 75 ms on one thread) is done once beforehand
// (lensfun's handles belong to the benchmark's thread): both time the
// pixels' work.
func BenchmarkLensStream(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	db, err := lensfun.Open()
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	cam, err := db.FindCamera("Canon", "Canon EOS 6D")
	if err != nil || cam == nil {
		b.Fatal("no 6D", err)
	}
	lens, err := db.FindLens(cam, "", "EF24-105mm f/4L IS USM")
	if err != nil || lens == nil {
		b.Fatal("no EF 24-105", err)
	}
	const w, h = 6000, 4000
	m, err := db.NewModifier(lens, cam.CropFactor, w, h, 24, 4, 1000, lensfun.Vignetting|lensfun.Distortion|lensfun.TCA, true)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ys := nodeCoords(h)
	nodeGains, _, err := nodeGains(m.Devignette, w, h)
	if err != nil {
		b.Fatal(err)
	}
	devignette := func(pix []float32, y0, rows int) error { // a node row's gains, as lensfun gave them
		for k, y := range ys {
			if y == y0 {
				copy(pix, nodeGains[k*w*3:(k+1)*w*3])
			}
		}
		return nil
	}
	// lensfun's positions of each node row (NewNodes asks for one at a
	// time), by the row's y.
	rows := map[float32][]float32{}
	if _, err := NewNodes(w, h, func(dst, xy []float32) error {
		err := m.Points(dst, xy)
		rows[xy[1]] = append([]float32(nil), dst...)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	points := func(dst, xy []float32) error { copy(dst, rows[xy[1]]); return nil }
	src := make([]float32, w*h*3)
	for i := range src {
		src[i] = float32(i%977) / 977
	}
	b.Run("whole", func(b *testing.B) {
		img := make([]float32, len(src))
		for b.Loop() {
			copy(img, src)
			if err := refDevignette(devignette, img, w, h); err != nil {
				b.Fatal(err)
			}
			if _, err := refRemap(context.Background(), img, w, h, points); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, flip := range []int{0, 5} {
		uw, uh := w, h
		if flip&4 != 0 {
			uw, uh = h, w
		}
		name := map[int]string{0: "band_o1", 5: "band_o6"}[flip]
		b.Run(name, func(b *testing.B) {
			img := make([]float32, len(src))
			row := func(y int) []float32 { return img[y*uw*3 : (y+1)*uw*3] }
			for b.Loop() {
				copy(img, src)
				lb := NewBand(uw, uh, flip)
				gains, gc, ys, err := NodeGainsCompact(devignette, w, h)
				if err != nil {
					b.Fatal(err)
				}
				lb.SetGains(gains, gc, ys)
				g, err := NewNodes(w, h, points)
				if err != nil {
					b.Fatal(err)
				}
				lb.SetGrid(g)
				lb.Start()
				runBands(lb, uh, 128, row)
			}
		})
	}
}
