package pipeline

import (
	"image"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/colour"
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

// areaDeltaE returns the mean and the 99th percentile of CIEDE2000 over
// the rectangle r of img (16-bit sRGB) against the embedded preview of
// in, upright and resampled bilinearly to img's size (display-linear in
// its own space).
func areaDeltaE(t testing.TB, in string, img image.Image, r image.Rectangle) (mean, p99 float64) {
	t.Helper()
	prev, space := previewUpright(t, in)
	W, H := img.Bounds().Dx(), img.Bounds().Dy()
	var des []float64
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			fx := (float64(x)+0.5)*float64(prev.W)/float64(W) - 0.5
			fy := (float64(y)+0.5)*float64(prev.H)/float64(H) - 0.5
			x0, y0 := int(math.Floor(fx)), int(math.Floor(fy))
			tx, ty := fx-float64(x0), fy-float64(y0)
			at := func(xx, yy, c int) float64 {
				xx, yy = min(max(xx, 0), prev.W-1), min(max(yy, 0), prev.H-1)
				return float64(prev.Pix[3*(yy*prev.W+xx)+c])
			}
			var lin [3]float64
			for c := range 3 {
				lin[c] = (1-ty)*((1-tx)*at(x0, y0, c)+tx*at(x0+1, y0, c)) + ty*((1-tx)*at(x0, y0+1, c)+tx*at(x0+1, y0+1, c))
			}
			cr, cg, cb := rgb16(img, x, y)
			des = append(des, colour.DeltaE2000(colour.SRGB16ToLab(cr, cg, cb), space.LinearToLab(lin)))
		}
	}
	var sum float64
	for _, d := range des {
		sum += d
	}
	sort.Float64s(des)
	return sum / float64(len(des)), des[len(des)*99/100]
}

// TestHighlightsRealClipping: on the partial clipping of the sample files
// (the 6D DNG's bluish reflection on the desk, a linear DNG; the D30 CRW's
// blown area beside the candle) reconstruct leaves no more isolated
// pixels (beyond 15 % of their 3×3 median) than clip in those areas, and
// over the whole pictures at most 5 % more pixels beyond 30 % than clip;
// and that in the 6D's area, where the camera's JPEG shows a light blue
// patch, the output is within a mean ΔE2000 of 6 (99th percentile 20) of
// that JPEG (clip: 7.4 and 19.3, the shoulder's colour flattened to a
// saturated blue at the clip).
func TestHighlightsRealClipping(t *testing.T) {
	if testing.Short() {
		t.Skip("converts two sample files twice")
	}
	for _, c := range []struct {
		file      string
		area      image.Rectangle // of the output, --lens off
		mean, p99 float64         // the most ΔE2000 to the camera's JPEG there; 0: not checked
	}{
		{"canon_eos_6d.dng", image.Rect(740, 766, 860, 816), 6, 20},
		{"canond30_CRW.CRW", image.Rect(935, 0, 1005, 45), 0, 0},
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
			mean, p99 := areaDeltaE(t, in, rec, c.area)
			t.Logf("area %v: ΔE2000 to the camera's JPEG mean %.2f, p99 %.2f", c.area, mean, p99)
			if c.mean > 0 && (mean > c.mean || p99 > c.p99) {
				t.Errorf("area %v: ΔE2000 to the camera's JPEG mean %.2f, p99 %.2f; want at most %g and %g", c.area, mean, p99, c.mean, c.p99)
			}
			wr, wc := farFromMedian16(rec, image.Rectangle{}, 0.30), farFromMedian16(clip, image.Rectangle{}, 0.30)
			t.Logf("whole picture: %d pixels beyond 30 %%, clip %d", wr, wc)
			if float64(wr) > 1.05*float64(wc) {
				t.Errorf("whole picture: reconstruct leaves %d pixels beyond 30 %% of their 3×3 median, clip %d (more than 5 %% more)", wr, wc)
			}
		})
	}
}
