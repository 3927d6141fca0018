package pipeline

import (
	"context"
	"runtime"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/internal/par"
	"github.com/rawbatch/rawbatch/pipeline/internal/thp"
	"github.com/rawbatch/rawbatch/pipeline/look"
)

// outputSpaceStage converts to the variant's linear space, sharpens and
// clips; a full-size variant gets its own copy of the shared image unless
// it takes the shared image over or shares an earlier variant's.
var outputSpaceStage = Stage{Name: "output-space", Scope: PerVariant, Kind: Spatial, Cost: outputSpaceCost, run: stageOutputSpace,
	Row: outputSpaceRow, fuses: func(_ Settings, v Variant) bool { return v.Sharpen == 0 }}

// outputSpaceCost: nothing in a fused pass (it reads the shared or its
// resized image in place); otherwise a full-size variant's copy (12 bytes per pixel) unless
// it converts the shared image in place or reuses its rendition's; the
// unsharp mask's rows (about five rows of 12 bytes per pixel per band, a
// band per thread).
func outputSpaceCost(m memCtx) StepMemory {
	var sm StepMemory
	if !m.resized && !m.step.takesShared && !m.step.reuses && !m.step.renderFused {
		sm.Alloc = 12 * m.px()
	}
	if m.v.Sharpen > 0 {
		sm.Scratch = 5 * 12 * int64(m.step.W) * int64(max(1, m.threads))
	}
	return sm
}

// stageOutputSpace converts the variant's image from the working space into
// the variant's linear colour space (ConvertMatrix: primaries and, for
// ProPhoto, Bradford adaptation to D50), sharpens it (Variant.Sharpen) and
// clips every sample to [0, 1] (NaN to 0). A full-size variant gets its own
// copy of the shared image, except the last one, which converts the shared
// image in place (each pixel is read before it is written), so a
// single-variant conversion needs no second full-size buffer.
func stageOutputSpace(_ context.Context, j *job) error {
	v := j.cur
	v.space = variantSpace(v.spec.Variant)
	key := renderKey(v.spec.Variant)
	if !v.owned && v.img.Pix == nil {
		v.img = j.img // a full-size variant renders from the shared image
	}
	if img, ok := j.rendered[key]; ok && !v.owned {
		// An earlier variant of the same space, size and sharpening (a JPEG
		// and a TIFF of one rendition) rendered this image: share it; the
		// later stages only read it.
		v.img = img
		j.release(v)
		return nil
	}
	defer func() {
		if !v.owned && j.laterNeeds(v, key) {
			if j.rendered == nil {
				j.rendered = map[string]Image{}
			}
			j.rendered[key] = v.img
		}
		j.release(v)
	}()
	src := v.img.Pix
	dst := src
	inPlace := true
	if !v.owned {
		if j.laterNeedsShared(v, key) {
			dst, inPlace = thp.Floats(len(src)), false
		} else {
			// No later variant renders from the shared image: take it
			// over and convert it in place (each pixel is read before it
			// is written).
			defer func() { j.img = Image{W: j.img.W, H: j.img.H} }()
		}
	}
	sharpen := v.spec.Variant.Sharpen > 0
	gamut := j.settings.compressGamut()
	lum := spaceLuminance(v.space)
	// Sharpening clips after it: the matrix alone first. An HDR
	// variant keeps its light above SDR white (hdrToneRow): no clip (its
	// quantiser takes negatives to 0).
	hdr := v.spec.Variant.HDR != ""
	k := outputSpaceKernel(v.space, !sharpen && !hdr, gamut && !sharpen && !hdr)
	if v.spec.Variant.Format == "uhdr" {
		// Kept in the working space, scene-referred: the quantiser
		// converts the base and the HDR rendition (quantiseUHDR).
		k = func([]float32) {}
	}
	row := v.img.W * 3
	par.Rows(v.img.H, func(lo, hi int) {
		src, dst := src[lo*row:hi*row], dst[lo*row:hi*row]
		if !inPlace {
			copy(dst, src)
		}
		k(dst)
	})
	v.img = Image{W: v.img.W, H: v.img.H, Pix: dst}
	if sharpen {
		unsharp(v.img, float32(v.spec.Variant.Sharpen))
		if hdr {
			return nil
		}
		if gamut {
			v.img.parallel(func(pix []float32) { look.GamutRows(pix, lum) })
			return nil
		}
		v.img.parallel(func(pix []float32) {
			for i, x := range pix {
				if !(x > 0) {
					pix[i] = 0
				} else if x > 1 {
					pix[i] = 1
				}
			}
		})
	}
	return nil
}

// spaceLuminance returns the row of sp's RGB→XYZ matrix that gives Y.
func spaceLuminance(sp *colour.Space) [3]float32 {
	var lum [3]float32
	for k := range 3 {
		lum[k] = float32(sp.ToXYZ[1][k])
	}
	return lum
}

// outputSpaceKernel returns the kernel that converts working-space pixels
// to sp's linear RGB (ConvertMatrix) and, with clip, brings them into
// [0, 1]: by look.GamutPixel with gamut, each channel clipped otherwise (NaN to
// 0).
func outputSpaceKernel(sp *colour.Space, clip, gamut bool) rowKernel {
	m := colour.ConvertMatrix(WorkingSpace, sp)
	var mf [3][3]float32
	for i := range 3 {
		for k := range 3 {
			mf[i][k] = float32(m[i][k])
		}
	}
	lum := spaceLuminance(sp)
	if clip && gamut {
		convert := matrixKernel(func(i, k int) float64 { return m[i][k] })
		return func(px []float32) {
			convert(px)
			look.GamutRows(px, lum)
		}
	}
	return func(px []float32) {
		for i := 0; i+2 < len(px); i += 3 {
			r, g, b := px[i], px[i+1], px[i+2]
			for c := range 3 {
				x := mf[c][0]*r + mf[c][1]*g + mf[c][2]*b
				if clip {
					if !(x > 0) {
						x = 0
					} else if x > 1 {
						x = 1
					}
				}
				px[i+c] = x
			}
		}
	}
}

// outputSpaceRow is the stage's fused form (Stage.Row), for a variant
// without sharpening: the variant reads the shared image (a full-size
// variant: no copy, since the pass only reads it) or its own resized one,
// and the kernel is outputSpaceKernel's conversion and clip.
func outputSpaceRow(j *job, p *fusePass) (rowKernel, bool) {
	v := j.cur
	if p.writes && !v.owned {
		return nil, false // would write the shared image: run copies it
	}
	v.space = variantSpace(v.spec.Variant)
	if !v.owned {
		v.img = j.img
		j.release(v)
	}
	if v.spec.Variant.Format == "uhdr" {
		return nil, true // working space kept, as in stageOutputSpace
	}
	hdr := v.spec.Variant.HDR != "" // kept above SDR white, as in stageOutputSpace
	return outputSpaceKernel(v.space, !hdr, !hdr && j.settings.compressGamut()), true
}

// unsharp sharpens img in place by an unsharp mask: x + amount·(x − blur(x)),
// blur being a 3×3 binomial filter (1 2 1)/4 in each direction (applied
// separably), per channel, in linear light; pixels beyond the edges repeat
// the edge pixel.
//
// It needs no copy of the image: the rows are cut into contiguous bands,
// one per processor, done in parallel; each band keeps the horizontal blurs
// of three rows (a row is overwritten only after its own), and the original
// rows just outside it (which the neighbouring bands change) are saved
// before any band starts. Extra memory: about five rows per band.
func unsharp(img Image, amount float32) {
	w, h := img.W, img.H
	if w < 3 || h < 3 {
		return
	}
	rowLen := w * 3
	row := func(y int) []float32 { return img.Pix[y*rowLen : (y+1)*rowLen] }
	nb := min(runtime.GOMAXPROCS(0), h)
	start := func(b int) int { return h * b / nb }
	// above[b], below[b]: the original rows just outside band b (clamped).
	above, below := make([][]float32, nb), make([][]float32, nb)
	for b := range nb {
		above[b] = append([]float32(nil), row(max(start(b)-1, 0))...)
		below[b] = append([]float32(nil), row(min(start(b+1), h-1))...)
	}
	// hblur sets dst to the horizontal (1 2 1)/4 blur of src.
	hblur := func(dst, src []float32) {
		for x := range w {
			l, r := max(x-1, 0)*3, min(x+1, w-1)*3
			for c := range 3 {
				dst[x*3+c] = (src[l+c] + 2*src[x*3+c] + src[r+c]) / 4
			}
		}
	}
	par.Range(nb, 1, func(lo, hi int) {
		prev, cur, next := make([]float32, rowLen), make([]float32, rowLen), make([]float32, rowLen)
		for b := lo; b < hi; b++ {
			y0, y1 := start(b), start(b+1)
			hblur(prev, above[b])
			hblur(cur, row(y0))
			for y := y0; y < y1; y++ {
				src := below[b] // row y+1, outside the band (or the clamped edge)
				if y+1 < y1 {
					src = row(y + 1)
				}
				hblur(next, src)
				px := row(y)
				for i, x := range px {
					blur := (prev[i] + 2*cur[i] + next[i]) / 4
					px[i] = x + amount*(x-blur)
				}
				prev, cur, next = cur, next, prev
			}
		}
	})
}

// compressGamut reports whether the output-space stage brings colours in
// by gamutInto instead of clipping each channel: with a tone curve;
// --tone none keeps the per-channel clip of the scene-referred reference
// rendering (the dcraw_emu comparisons).
func (s Settings) compressGamut() bool { return s.Tone != ToneNone }
