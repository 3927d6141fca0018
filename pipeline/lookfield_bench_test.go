package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/look"
)

// BenchmarkPreviewField measures how much of the look table's residual
// is geometry, not colour: the embedded preview may show a smaller part
// of the sensor than LibRaw's visible area (the D30 CRW's 1440×960 JPEG
// is the camera's 2160×1440 picture; LibRaw's area is 2176×1448), and the
// look score (look.ScorePreview) centre-crops the preview to the output's
// aspect only, so its cells are misaligned by up to the margin. For each
// sample file with a preview and --look default and camera, it prints the
// look table's score, then the whole (uncropped) preview against the
// output with symmetric margins (mx, my output pixels, by 2 up to 24 and
// 20) cropped off, both reduced to the output's grid: without margins,
// and at the margins that score lowest (where a cell covers the same
// part of the picture in both). A measurement, not a test: docs/look.md
// reads it.
func BenchmarkPreviewField(b *testing.B) {
	for range b.N {
		fmt.Printf("\n|file|look|look table|whole preview, no margins|margins mx, my|whole preview at the margins|\n|---|---|---|---|---|---|\n")
		for _, f := range []string{"canon_eos_6d.dng", "canond30_CRW.CRW"} {
			in := filepath.Join(testdata, "raw", f)
			prev, space := previewUpright(b, in)
			for _, l := range []Look{LookDefault, LookCamera} {
				s := DefaultSettings()
				s.Format = PNG16
				s.Look = l
				s.Crop = CropSensor // LibRaw's visible area: what the margins are measured in
				out := filepath.Join(b.TempDir(), "out.png")
				if _, err := ConvertFile(context.Background(), in, out, s); err != nil {
					b.Fatal(err)
				}
				o := outputLinear(b, out)
				table, err := look.ScorePreview(o, colour.SRGB, prev, space)
				if err != nil {
					b.Fatal(err)
				}
				// The whole preview against the output's crop, on the
				// output's grid: a cell covers the same part of the
				// picture in both when the margins are the preview's.
				gw, gh := look.GridSize(o.W, o.H, look.GridWidth)
				pg, _, err := look.Reduce(prev, gw, gh, 0)
				if err != nil {
					b.Fatal(err)
				}
				score := func(mx, my int) float64 {
					c := look.Image{W: o.W - 2*mx, H: o.H - 2*my}
					c.Pix = make([]float32, 3*c.W*c.H)
					for y := range c.H {
						copy(c.Pix[3*y*c.W:3*(y+1)*c.W], o.Pix[3*((y+my)*o.W+mx):3*((y+my)*o.W+mx+c.W)])
					}
					cg, _, err := look.Reduce(c, gw, gh, 0)
					if err != nil {
						b.Fatal(err)
					}
					d, err := look.MeanDeltaE2000(cg, colour.SRGB, pg, space, nil)
					if err != nil {
						b.Fatal(err)
					}
					return d
				}
				base := score(0, 0)
				best, bx, by := base, 0, 0
				for my := 0; my <= 20; my += 2 {
					for mx := 0; mx <= 24; mx += 2 {
						if d := score(mx, my); d < best {
							best, bx, by = d, mx, my
						}
					}
				}
				fmt.Printf("|%s|%s|%.2f|%.2f|%d, %d|%.2f|\n", f, l, table, base, bx, by, best)
			}
		}
	}
}
