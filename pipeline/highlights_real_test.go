package pipeline

import (
	"image"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
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

// blackDots16 counts the pixels of img that are black (every channel
// below 2/255) while all 8 neighbours are bright (a channel at least
// 60/255): dots the capture sharpening's undershoot leaves beside bright
// light.
func blackDots16(img image.Image) int {
	b := img.Bounds()
	n := 0
	for y := 1; y < b.Dy()-1; y++ {
		for x := 1; x < b.Dx()-1; x++ {
			if r, g, bl := rgb16(img, x, y); max(r, g, bl) >= 2*257 {
				continue
			}
			bright := true
			for dy := -1; dy <= 1 && bright; dy++ {
				for dx := -1; dx <= 1; dx++ {
					if r, g, bl := rgb16(img, x+dx, y+dy); (dx != 0 || dy != 0) && max(r, g, bl) < 60*257 {
						bright = false
						break
					}
				}
			}
			if bright {
				n++
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
			if n := blackDots16(rec); n > 0 {
				t.Errorf("whole picture: %d black pixels among bright neighbours (the capture sharpening's undershoot)", n)
			}
			wr, wc := farFromMedian16(rec, image.Rectangle{}, 0.30), farFromMedian16(clip, image.Rectangle{}, 0.30)
			t.Logf("whole picture: %d pixels beyond 30 %%, clip %d", wr, wc)
			if float64(wr) > 1.05*float64(wc) {
				t.Errorf("whole picture: reconstruct leaves %d pixels beyond 30 %% of their 3×3 median, clip %d (more than 5 %% more)", wr, wc)
			}
		})
	}
}

// raggedScene is the camera raw signal (clip level 1) of a w×w surface of
// white-balanced colour bg lit by a ragged highlight: brightness rising to
// a centre whose outline wobbles with the angle, 3 % noise on every
// sample, one photosite in 400 hot (1) or dead (0), in camera raw as the
// as-shot neutral makes it (bg·neutral), so that the channels clip at
// different brightness, one or two before the others.
func raggedScene(w int, bg, neutral [3]float64, seed uint64) func(x, y, c int) float64 {
	hash := func(x, y, c int) uint64 {
		z := seed*0x9e3779b97f4a7c15 + uint64((y*w+x)*4+c+1)*0xbf58476d1ce4e5b9
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		return z ^ z>>31
	}
	return func(x, y, c int) float64 {
		switch hash(x, y, 3) % 800 {
		case 0:
			return 1
		case 1:
			return 0
		}
		u1 := (float64(hash(x, y, c)>>11) + 0.5) / (1 << 53)
		u2 := float64(hash(x, y, c+8)>>11) / (1 << 53)
		noise := math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
		cx := float64(w) / 2
		dx, dy := float64(x)-cx, float64(y)-cx
		d := math.Hypot(dx, dy) / (0.3 * float64(w) * (1 + 0.25*math.Sin(5*math.Atan2(dy, dx))))
		k := 0.45 + 1.8*math.Exp(-d*d)
		return bg[c] * neutral[c] * k * (1 + 0.03*noise)
	}
}

// medianStep is the 99.9th percentile over img of the largest difference
// of a channel between the 3×3 medians of a pixel and of its right or
// lower neighbour (fraction of full scale): the steepest transitions,
// isolated pixels (hot and dead photosites) left out.
func medianStep(img image.Image) float64 {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	med := make([][3]float64, w*h)
	var nb [3][9]float64
	for y := 1; y < h-1; y++ {
		for x := 1; x < w-1; x++ {
			k := 0
			for dy := -1; dy <= 1; dy++ {
				for dx := -1; dx <= 1; dx++ {
					cr, cg, cb := rgb16(img, x+dx, y+dy)
					nb[0][k], nb[1][k], nb[2][k] = float64(cr)/65535, float64(cg)/65535, float64(cb)/65535
					k++
				}
			}
			for c := range 3 {
				slices.Sort(nb[c][:])
				med[y*w+x][c] = nb[c][4]
			}
		}
	}
	var steps []float64
	for y := 1; y < h-2; y++ {
		for x := 1; x < w-2; x++ {
			m := 0.0
			for _, n := range []int{y*w + x + 1, (y+1)*w + x} {
				for c := range 3 {
					m = max(m, math.Abs(med[n][c]-med[y*w+x][c]))
				}
			}
			steps = append(steps, m)
		}
	}
	sort.Float64s(steps)
	return steps[len(steps)*999/1000]
}

// TestHighlightsRaggedDNG: DNGs, CFA and linear (already demosaiced), of
// ragged, noisy highlights clipped in one or two channels with hot and
// dead photosites, converted whole (16-bit PNG): reconstruct leaves no
// more isolated pixels (beyond 15 % of their 3×3 median) and no more
// isolated coloured pixels than clip does (a hot photosite is not
// whitened), and no steeper transition between neighbours' 3×3 medians
// than clip's (the noise's and the edge's) beyond 0.01.
func TestHighlightsRaggedDNG(t *testing.T) {
	const w = 192
	neutral := [3]float64{0.5, 1, 0.7}
	for _, c := range []struct {
		name string
		bg   [3]float64 // white-balanced surface colour
	}{
		{"blue", [3]float64{0.45, 0.55, 0.9}},
		{"pale green", [3]float64{0.5, 0.85, 0.8}},
		{"red", [3]float64{0.95, 0.5, 0.35}},
	} {
		for _, linear := range []bool{false, true} {
			name := c.name + " CFA"
			if linear {
				name = c.name + " linear"
			}
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				in := filepath.Join(dir, "ragged.dng")
				spec := synthdng.Spec{Width: w, Height: w, BlackLevel: 256, WhiteLevel: 16383, Orientation: 1,
					AsShotNeutral: neutral, Linear: linear, Scene: raggedScene(w, c.bg, neutral, 7)}
				if err := synthdng.WriteFile(in, spec); err != nil {
					t.Fatal(err)
				}
				s := DefaultSettings()
				s.Format, s.Lens = PNG16, LensOff
				s.Highlights = HighlightsReconstruct
				recPath, _ := convert(t, in, t.TempDir(), s)
				s.Highlights = HighlightsClip
				clipPath, _ := convert(t, in, t.TempDir(), s)
				rec, clip := decodeImage(t, recPath), decodeImage(t, clipPath)
				all := rec.Bounds()
				nr, nc := farFromMedian16(rec, all, 0.15), farFromMedian16(clip, all, 0.15)
				cr, cc := chromaOutliers16(rec, all, 0.1), chromaOutliers16(clip, all, 0.1)
				sr, sc := medianStep(rec), medianStep(clip)
				t.Logf("isolated %d (clip %d), coloured %d (clip %d), p99.9 step %.3f (clip %.3f)", nr, nc, cr, cc, sr, sc)
				if nr > nc {
					t.Errorf("reconstruct leaves %d pixels beyond 15 %% of their 3×3 median, clip %d", nr, nc)
				}
				if cr > cc {
					t.Errorf("reconstruct leaves %d isolated coloured pixels, clip %d", cr, cc)
				}
				if sr > sc+0.01 {
					t.Errorf("reconstruct's steps between neighbours (p99.9 %.3f) exceed clip's (%.3f)", sr, sc)
				}
			})
		}
	}
}
