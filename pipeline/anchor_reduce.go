package pipeline

import (
	"fmt"
	"image"
	"math"
	"sync"

	"github.com/rawbatch/rawbatch/pipeline/demosaic"
	"github.com/rawbatch/rawbatch/pipeline/internal/par"
	"github.com/rawbatch/rawbatch/pipeline/lens"
	"github.com/rawbatch/rawbatch/pipeline/look"
)

// The exposure anchor's and the camera look's grids measured from the CFA
// data before demosaic (docs/pipeline.md "Exposure anchor"): each cell's
// photosites of each colour, normalised as the demosaic normalises them
// (black level off, the white-balance multiplier over white − black,
// clamped to [0, 1]), are averaged per colour — a superpixel box
// reduction straight to the anchor's grid, one parallel read of the raw
// data. The means match the box means of the demosaiced image within the
// demosaic's interpolation (cells are 20 to 30 pixels a side), so the
// anchor's result is known before the demosaic starts and a streamed
// conversion of a file with a preview runs in one pass.

// anchorCFA is the CFA data reduced for the anchor (reduceCFA): per fine
// cell (Sub·GW × Sub·GH of them, Reduce's boundaries ⌊i·W/n⌋ over the
// W×H region, sensor orientation) the sums and counts of the normalised
// samples of each colour (R, G, B) and the count of clipped samples.
type anchorCFA struct {
	W, H, GW, GH, Sub int
	sum               []float64 // 3 a fine cell
	n                 []int32   // 3 a fine cell
	clipped           []int32   // 1 a fine cell
}

// anchorFromCFA reports whether the anchor's grids of j are measured from
// the CFA data (anchorCFA) rather than from the demosaiced image: the
// anchor or camera look measures a kept preview, and nothing between the
// demosaic and the anchor changes the brightness a cell's mean sees
// beyond what the CFA gives and the cells can be given: no DNG
// OpcodeList3 (applied to camera RGB); and cells (the camera look's:
// sub-cells) of at least minCFACell photosites a side in the w×h region
// measured, so that each holds several samples of every colour.
// Highlight reconstruction only changes clipped cells, which the anchor
// leaves out; denoise and capture sharpening keep the means. A lensfun
// correction's vignetting gains are applied to the cells
// (anchorVignette); its geometry (distortion, TCA, the auto-scale) is
// left out of both sides: neither the cells nor the preview they are
// compared with are warped, so the two stay aligned as when both are.
func anchorFromCFA(j *job, w, h int) bool {
	if anchorStoredRows || j.preview == nil || !j.settings.needsPreview() {
		return false
	}
	gw, gh := anchorGridSize(j.preview)
	if j.settings.Look == LookCamera {
		// The camera look's sub-cells (look.SubGrid) are the cells measured.
		sub := look.SubCells(w, h, gw, gh, look.MaxSub)
		gw, gh = sub*gw, sub*gh
	}
	if w < minCFACell*gw || h < minCFACell*gh {
		return false
	}
	if hd := j.hdr; opcodesActive(j.settings) && hd != nil && hd.OpcodeLists != nil && hd.OpcodeLists.Length[2] > 0 {
		return false
	}
	return true
}

// anchorVignette is a lensfun vignetting correction's gains for the
// anchor's CFA cells (lens.NodeGainsCompact's node rows: gains of gc
// channels a pixel of each node row ys of a w×h image in the sensor's
// frame, the region the cells cover).
type anchorVignette struct {
	gains []float32
	gc    int
	ys    []int
	w, h  int
}

// devignette multiplies each fine cell's sums by the gains v at the
// cell's centre (the gains vary over tens of cells: a cell's mean gain is
// its centre's within rounding). Clipped counts stay: a clipped sample is
// left out of the anchor whatever its gain.
func (g *anchorCFA) devignette(v *anchorVignette) {
	fw, fh := g.Sub*g.GW, g.Sub*g.GH
	for fy := range fh {
		cy := (fy*g.H/fh + (fy+1)*g.H/fh) / 2
		cy = cy * v.h / max(1, g.H)
		for fx := range fw {
			cx := (fx*g.W/fw + (fx+1)*g.W/fw) / 2
			gain := lens.GainAt(v.gains, v.gc, v.ys, v.w, v.h, cx*v.w/max(1, g.W), cy)
			o := 3 * (fy*fw + fx)
			for c := range 3 {
				g.sum[o+c] *= float64(gain[c])
			}
		}
	}
}

// minCFACell is the smallest cell side, in photosites, the anchor
// measures on the CFA data (4: at least 4 red and 4 blue samples a cell;
// a smaller image's cells are measured on the demosaiced image: the means
// of fewer samples stray from the demosaiced cells' — on the D30's 2×2
// sub-cells the camera look's residual rose from 3.30 to 3.48 ΔE2000).
const minCFACell = 4

// anchorStoredRows, when set (tests), measures the anchor on the
// demosaiced image as before: a streamed file with a preview stores its
// finished rows and runs in two passes (stream_twopass.go).
var anchorStoredRows bool

// anchorGridSize is the grid the anchor compares on for preview p (the
// look score's, Preview.Cells; else GridSize of the preview).
func anchorGridSize(p *look.Preview) (int, int) {
	if p.Cells.W > 0 {
		return p.Cells.W, p.Cells.H
	}
	return look.GridSize(p.Image.W, p.Image.H, look.GridWidth)
}

// reduceAnchorCFA sets j.cfaGrid from c, the region r of it (empty: all)
// being the image the anchor would measure, when anchorFromCFA.
func (j *job) reduceAnchorCFA(c demosaic.CFA, r image.Rectangle) error {
	j.cfaGrid = nil
	if r.Empty() {
		r = image.Rect(0, 0, c.W, c.H)
	}
	if !anchorFromCFA(j, r.Dx(), r.Dy()) {
		return nil
	}
	gw, gh := anchorGridSize(j.preview)
	sub := 1
	if j.settings.Look == LookCamera {
		sub = look.SubCells(r.Dx(), r.Dy(), gw, gh, look.MaxSub)
	}
	g, err := reduceCFA(c, r, gw, gh, sub, anchorClip)
	if err != nil {
		return err
	}
	j.cfaGrid = g
	return nil
}

// reduceCFA reduces the region r of c to gw×gh cells of sub×sub fine
// cells (anchorCFA), counting as clipped the samples at or above clip.
func reduceCFA(c demosaic.CFA, r image.Rectangle, gw, gh, sub int, clip float32) (*anchorCFA, error) {
	w, h := r.Dx(), r.Dy()
	if gw <= 0 || gh <= 0 || sub < 1 || sub*gw > w || sub*gh > h || r.Min.X < 0 || r.Min.Y < 0 || r.Max.X > c.W || r.Max.Y > c.H {
		return nil, fmt.Errorf("anchor: cannot reduce %v of a %d×%d CFA to %d×%d cells of %d×%d", r, c.W, c.H, gw, gh, sub, sub)
	}
	if len(c.Pix) < (c.H-1)*c.Stride+c.W {
		return nil, fmt.Errorf("anchor: %d CFA samples for %d×%d", len(c.Pix), c.W, c.H)
	}
	fw, fh := sub*gw, sub*gh
	g := &anchorCFA{W: w, H: h, GW: gw, GH: gh, Sub: sub,
		sum: make([]float64, 3*fw*fh), n: make([]int32, 3*fw*fh), clipped: make([]int32, fw*fh)}
	// The fine cell of each column of the region.
	col := make([]int32, w)
	for i := range fw {
		for x := i * w / fw; x < (i+1)*w/fw; x++ {
			col[x] = int32(i)
		}
	}
	if c.BlackPattern == nil && integerBlack(c) {
		g.reduceInt(c, r, clip)
		return g, nil
	}
	par.Range(fh, 1, func(lo, hi int) {
		acc := make([]float32, 3*fw)
		cnt := make([]int32, 3*fw)
		for fy := lo; fy < hi; fy++ {
			clear(acc)
			clear(cnt)
			ncl := g.clipped[fy*fw : (fy+1)*fw]
			for y := r.Min.Y + fy*h/fh; y < r.Min.Y+(fy+1)*h/fh; y++ {
				row := c.Pix[y*c.Stride+r.Min.X : y*c.Stride+r.Max.X]
				var pat []float32
				if c.BlackPattern != nil {
					k := y % c.PatternRows
					pat = c.BlackPattern[k*c.PatternCols : (k+1)*c.PatternCols]
				}
				for x, raw := range row {
					ax := r.Min.X + x
					p := (y&1)*2 + ax&1
					b := c.Black[p]
					if pat != nil {
						b += pat[ax%c.PatternCols]
					}
					v := min(max((float32(raw)-b)*c.Scale[p], 0), 1)
					k := 3*int(col[x]) + int(c.Colour[p])
					acc[k] += v
					cnt[k]++
					if v >= clip {
						ncl[col[x]]++
					}
				}
			}
			// A fine row's sums are of at most a few hundred samples a
			// cell (float32 keeps them to 1e-5), then kept as float64.
			o := 3 * fy * fw
			for k := range acc {
				g.sum[o+k] = float64(acc[k])
				g.n[o+k] = cnt[k]
			}
		}
	})
	return g, nil
}

// cells returns the grid's gw×gh cells (the mean of each colour, sensor
// orientation) and, with clip, the fraction of each cell's pixels counted
// clipped (clipped samples over pixels), as look.Reduce returns them.
func (g *anchorCFA) cells(clip bool) (look.Image, []float32) {
	out := look.Image{W: g.GW, H: g.GH, Pix: make([]float32, 3*g.GW*g.GH)}
	var frac []float32
	if clip {
		frac = make([]float32, g.GW*g.GH)
	}
	fw := g.Sub * g.GW
	for j := range g.GH {
		y0, y1 := j*g.H/g.GH, (j+1)*g.H/g.GH
		for i := range g.GW {
			x0, x1 := i*g.W/g.GW, (i+1)*g.W/g.GW
			var s [3]float64
			var n [3]int64
			var ncl int64
			for b := range g.Sub {
				for a := range g.Sub {
					f := (g.Sub*j+b)*fw + g.Sub*i + a
					for c := range 3 {
						s[c] += g.sum[3*f+c]
						n[c] += int64(g.n[3*f+c])
					}
					ncl += int64(g.clipped[f])
				}
			}
			o := 3 * (j*g.GW + i)
			for c := range 3 {
				if n[c] > 0 {
					out.Pix[o+c] = float32(s[c] / float64(n[c]))
				}
			}
			if frac != nil {
				frac[j*g.GW+i] = float32(float64(ncl) / float64((y1-y0)*(x1-x0)))
			}
		}
	}
	return out, frac
}

// subGrid returns the grid's sub-cells (look.SubGrid, values as cells'):
// each fine cell's mean of each colour; a colour with no sample in a fine
// cell (a sub-cell of one pixel a side) takes its cell's mean.
func (g *anchorCFA) subGrid() (look.SubGrid, error) {
	cells, _ := g.cells(false)
	fw, fh := g.Sub*g.GW, g.Sub*g.GH
	img := look.Image{W: fw, H: fh, Pix: make([]float32, 3*fw*fh)}
	for fy := range fh {
		for fx := range fw {
			f := fy*fw + fx
			cell := 3 * ((fy/g.Sub)*g.GW + fx/g.Sub)
			for c := range 3 {
				if n := g.n[3*f+c]; n > 0 {
					img.Pix[3*f+c] = float32(g.sum[3*f+c] / float64(n))
				} else {
					img.Pix[3*f+c] = cells.Pix[cell+c]
				}
			}
		}
	}
	return look.NewSubGrid(img, g.W, g.H, g.GW, g.GH, g.Sub)
}

// anchorRegion is the part of the full-size CFA c the crop stage keeps
// of the whole image demosaiced from it (empty: all), as cropBand makes a
// stream's region; with HalfSize too, since c is the CFA at full size
// (halfOwn measures the anchor's cells on it).
func anchorRegion(j *job, c demosaic.CFA) image.Rectangle {
	s := j.settings
	s.HalfSize = false
	if !cropStage.Active(s) {
		return image.Rectangle{}
	}
	if cr, ok := scaledCrop(j.hdr, s, c.W, c.H); ok {
		return image.Rect(cr.X, cr.Y, cr.X+cr.W, cr.Y+cr.H)
	}
	return image.Rectangle{}
}

// integerBlack reports whether c's black levels are whole DN (as the
// raw data's are; reduceInt's clamp is then the demosaic's exactly).
func integerBlack(c demosaic.CFA) bool {
	for _, b := range c.Black {
		if b != float32(int32(b)) || b < 0 || b > 65535 {
			return false
		}
	}
	return true
}

// colSums is reduceInt's per-column sums of a fine row, for each row
// parity, and the per-column count of clipped samples.
type colSums struct {
	cols [2][]uint32
	n    []uint16
}

// reduceInt is reduceCFA's sums for whole black levels and no black
// pattern: each phase's samples clamped in DN to [black, black + 1/scale]
// (the demosaic's clamp to [0, 1]) and summed as integers, a fine row's
// rows into per-column sums first (demosaic.SumRow, a row parity's apart)
// and then each cell's columns, normalised once: (Σ − n·black)·scale. A
// sample counts clipped at black + clip/scale DN and above.
func (g *anchorCFA) reduceInt(c demosaic.CFA, r image.Rectangle, clip float32) {
	fw, fh := g.Sub*g.GW, g.Sub*g.GH
	w, h := g.W, g.H
	var lo, hi, ct [4]uint16
	for p := range 4 {
		lo[p] = uint16(c.Black[p])
		top := float64(c.Black[p]) + 1/float64(c.Scale[p])
		hi[p] = uint16(min(65535, max(float64(lo[p]), math.Floor(top))))
		ct[p] = uint16(min(65535, max(float64(lo[p]), math.Ceil(float64(c.Black[p])+float64(clip)/float64(c.Scale[p])))))
	}
	// The bounds of a row parity's samples by their column's parity
	// within the region's row (column r.Min.X + x).
	var rlo, rhi, rct [2][2]uint16
	for py := range 2 {
		for px := range 2 {
			p := py*2 + (r.Min.X+px)&1
			rlo[py][px], rhi[py][px], rct[py][px] = lo[p], hi[p], ct[p]
		}
	}
	// Each range's column sums, reused by the next range.
	var pool sync.Pool // *colSums
	par.Range(fh, 1, func(f0, f1 int) {
		cs, _ := pool.Get().(*colSums)
		if cs == nil {
			cs = &colSums{cols: [2][]uint32{make([]uint32, w), make([]uint32, w)}, n: make([]uint16, w)}
		}
		defer pool.Put(cs)
		cols, ncols := cs.cols, cs.n
		for fy := f0; fy < f1; fy++ {
			clear(cols[0])
			clear(cols[1])
			clear(ncols)
			var rows [2]int32 // the fine row's rows of each parity
			for y := r.Min.Y + fy*h/fh; y < r.Min.Y+(fy+1)*h/fh; y++ {
				py := y & 1
				row := c.Pix[y*c.Stride+r.Min.X : y*c.Stride+r.Max.X]
				demosaic.SumRow(row, rlo[py], rhi[py], rct[py], cols[py], ncols)
				rows[py]++
			}
			ncl := g.clipped[fy*fw : (fy+1)*fw]
			o := 3 * fy * fw
			for fx := range fw {
				x0, x1 := fx*w/fw, (fx+1)*w/fw
				var s [4]uint64
				var cl int32
				for x := x0; x < x1; x++ {
					px := (r.Min.X + x) & 1
					s[px] += uint64(cols[0][x])
					s[2+px] += uint64(cols[1][x])
					cl += int32(ncols[x])
				}
				ncl[fx] += cl
				// Columns of each parity in x0 … x1−1 (by the region's
				// absolute column r.Min.X + x).
				var ncol [2]int32
				ncol[(r.Min.X+x0)&1] = int32(x1-x0+1) / 2
				ncol[(r.Min.X+x0+1)&1] = int32(x1-x0) / 2
				for p := range 4 {
					n := rows[p/2] * ncol[p&1]
					if n == 0 {
						continue
					}
					k := o + 3*fx + int(c.Colour[p])
					g.sum[k] += (float64(s[p]) - float64(n)*float64(c.Black[p])) * float64(c.Scale[p])
					g.n[k] += n
				}
			}
		}
	})
}
