package pipeline

import (
	"image"
	"math"
	"path/filepath"
	"slices"
	"testing"
)

// farFromMedian16 counts the pixels of img within r (all of img when r is
// empty) of which a channel differs from the median of its 3×3
// neighbourhood by more than frac of that median (at least 8/255 of full
// scale): isolated outliers.
func farFromMedian16(img image.Image, r image.Rectangle, frac float64) int {
	b := img.Bounds()
	if r.Empty() {
		r = image.Rect(0, 0, b.Dx(), b.Dy())
	}
	r = r.Intersect(image.Rect(1, 1, b.Dx()-1, b.Dy()-1))
	n := 0
	var nb [3][9]float64
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			k := 0
			for dy := -1; dy <= 1; dy++ {
				for dx := -1; dx <= 1; dx++ {
					cr, cg, cb := rgb16(img, x+dx, y+dy)
					nb[0][k], nb[1][k], nb[2][k] = float64(cr)/65535, float64(cg)/65535, float64(cb)/65535
					k++
				}
			}
			for c := range 3 {
				v := nb[c][4]
				s := nb[c]
				slices.Sort(s[:])
				if math.Abs(v-s[4]) > frac*math.Max(s[4], 8.0/255) {
					n++
					break
				}
			}
		}
	}
	return n
}

// chromaOutliers16 counts the pixels of img within r of which a colour
// difference, R − G or B − G, differs from the median of its 3×3
// neighbourhood's by more than lim (fraction of full scale): isolated
// coloured pixels, whatever their brightness.
func chromaOutliers16(img image.Image, r image.Rectangle, lim float64) int {
	b := img.Bounds()
	r = r.Intersect(image.Rect(1, 1, b.Dx()-1, b.Dy()-1))
	n := 0
	var nb [2][9]float64
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			k := 0
			for dy := -1; dy <= 1; dy++ {
				for dx := -1; dx <= 1; dx++ {
					cr, cg, cb := rgb16(img, x+dx, y+dy)
					nb[0][k] = (float64(cr) - float64(cg)) / 65535
					nb[1][k] = (float64(cb) - float64(cg)) / 65535
					k++
				}
			}
			for c := range 2 {
				v := nb[c][4]
				s := nb[c]
				slices.Sort(s[:])
				if math.Abs(v-s[4]) > lim {
					n++
					break
				}
			}
		}
	}
	return n
}

// TestHighlightsRealClipping: on the partial clipping of the sample files
// (the 6D DNG's bluish reflection on the desk, a linear DNG; the D30 CRW's
// blown area beside the candle) reconstruct leaves no more isolated
// pixels (beyond 15 % of their 3×3 median) than clip in those areas, and
// over the whole pictures at most 5 % more pixels beyond 30 % than clip.
func TestHighlightsRealClipping(t *testing.T) {
	if testing.Short() {
		t.Skip("converts two sample files twice")
	}
	for _, c := range []struct {
		file string
		area image.Rectangle // of the output, --lens off
	}{
		{"canon_eos_6d.dng", image.Rect(740, 766, 860, 816)},
		{"canond30_CRW.CRW", image.Rect(935, 0, 1005, 45)},
	} {
		t.Run(c.file, func(t *testing.T) {
			in := filepath.Join(testdata, "raw", c.file)
			dir := t.TempDir()
			s := DefaultSettings()
			s.Format, s.Lens = PNG16, LensOff
			s.Highlights = HighlightsReconstruct
			recPath, _ := convert(t, in, filepath.Join(dir), s)
			rec := decodeImage(t, recPath)
			s.Highlights = HighlightsClip
			clipDir := t.TempDir()
			clipPath, _ := convert(t, in, clipDir, s)
			clip := decodeImage(t, clipPath)
			nr, nc := farFromMedian16(rec, c.area, 0.15), farFromMedian16(clip, c.area, 0.15)
			t.Logf("area %v: %d isolated pixels, clip %d", c.area, nr, nc)
			if nr > nc {
				t.Errorf("area %v: reconstruct leaves %d pixels beyond 15 %% of their 3×3 median, clip %d", c.area, nr, nc)
			}
			cr, cc := chromaOutliers16(rec, c.area, 0.1), chromaOutliers16(clip, c.area, 0.1)
			t.Logf("area %v: %d isolated coloured pixels, clip %d", c.area, cr, cc)
			if cr > cc {
				t.Errorf("area %v: reconstruct leaves %d isolated coloured pixels (R − G or B − G beyond 0.1 of its 3×3 median), clip %d", c.area, cr, cc)
			}
			wr, wc := farFromMedian16(rec, image.Rectangle{}, 0.30), farFromMedian16(clip, image.Rectangle{}, 0.30)
			t.Logf("whole picture: %d pixels beyond 30 %%, clip %d", wr, wc)
			if float64(wr) > 1.05*float64(wc) {
				t.Errorf("whole picture: reconstruct leaves %d pixels beyond 30 %% of their 3×3 median, clip %d (more than 5 %% more)", wr, wc)
			}
		})
	}
}
