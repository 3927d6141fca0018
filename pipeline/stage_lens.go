package pipeline

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/rawbatch/rawbatch/pipeline/internal/lensfun"
	"github.com/rawbatch/rawbatch/pipeline/look"
	"github.com/rawbatch/rawbatch/pipeline/warp"
)

// lensStage corrects the lens with lensfun (docs/lens.md): on the
// demosaiced linear camera RGB, after the DNG opcodes and highlights and
// before the camera matrix, vignetting (a gain per pixel), then
// distortion and transverse chromatic aberration in one remap through
// pipeline/warp (Keys bicubic) with lensfun's per-channel source
// positions, auto-scaled so that no empty corners remain. It runs after
// the stage cache point: the cached image is the uncorrected one, and the
// lens settings are in the settings hash, not the cache key.
var lensStage = Stage{Name: "lens", Scope: PerFile, Kind: Spatial, Linear: true, Cost: lensCost,
	Active: func(s Settings) bool { return s.lens() != LensOff }, run: stageLens}

// lensBand is the number of rows whose source positions are computed at
// once (W×lensBand×6 float32) and remapped together.
const lensBand = 32

// lensDBBytes is what loading lensfun's system database costs in memory:
// its parsed cameras and lenses and the library's pages (VmRSS grew by
// 3.7 MB at lensfun.Open on Debian 12's liblensfun-data-v1).
const lensDBBytes = 4 << 20

// lensCost: the corrected image (W×H×3 float32) replaces the input, which
// is freed when the step ends; lensfun's database and a band's positions
// and remapped rows are scratch.
func lensCost(m memCtx) StepMemory {
	img := 12 * m.px()
	band := int64(m.step.W) * lensBand * (6*4 + 12)
	return StepMemory{Scratch: lensDBBytes + band, Alloc: img, Free: img}
}

// LensCorrection is what the lens stage did with a file (Result.Lens).
type LensCorrection struct {
	// Profile is the lensfun lens used ("Maker Model"); "" when none was.
	Profile string `json:",omitempty"`
	// Camera is the lensfun camera matched ("Maker Model"); "" when the
	// camera is not in the database.
	Camera string `json:",omitempty"`
	// LookedUp is the lens name looked up: --lens-model, else the file's
	// (EXIF LensModel, a maker note, or LibRaw's lens name).
	LookedUp string `json:",omitempty"`
	// Corrections are the corrections applied ("vignetting, distortion,
	// TCA"); "" when none.
	Corrections string `json:",omitempty"`
	// FocalLength (mm), Aperture (f-number) and Distance (m; 1000 when
	// the file does not say) the profile was interpolated at.
	FocalLength, Aperture, Distance float64 `json:",omitempty"`
	// Scale is the auto-scale of the geometric corrections (> 1 enlarges,
	// so that no empty corners remain; 1 without geometric corrections).
	Scale float64 `json:",omitempty"`
	// Reason says why nothing was corrected: "no lens profile",
	// "corrected by the DNG's opcodes", "no focal length", ...
	Reason string `json:",omitempty"`
}

// Summary is the correction in a few words, for the per-file line:
// "lens Rawbatch Barrel 24mm f/2.8", `no lens profile for "NAME"` (with
// why, when the camera is unknown), or the reason; "" for nil.
func (l *LensCorrection) Summary() string {
	switch {
	case l == nil:
		return ""
	case l.Profile != "" && l.Corrections != "":
		return "lens " + l.Profile
	case strings.HasPrefix(l.Reason, "no lens profile") && l.LookedUp != "":
		// "no lens profile for "NAME"", and why when there is more to say
		// (the camera is not in the database).
		return fmt.Sprintf("no lens profile for %q", l.LookedUp) + strings.TrimPrefix(l.Reason, "no lens profile")
	}
	return l.Reason
}

// lensLookup is what the stage looks up for a file: the camera makers and
// models to try (the file's EXIF, then LibRaw's names), the lens name and
// the shooting parameters.
type lensLookup struct {
	cameras                   [][2]string
	lens                      string
	focal, aperture, distance float64
}

// lensLookup gathers j's camera, lens and shooting parameters, --lens-model
// overriding the file's lens name.
func (j *job) lensLookup() lensLookup {
	var l lensLookup
	add := func(mk, md string) {
		mk, md = strings.TrimSpace(mk), strings.TrimSpace(md)
		if md == "" {
			return
		}
		for _, c := range l.cameras {
			if strings.EqualFold(c[0], mk) && strings.EqualFold(c[1], md) {
				return
			}
		}
		l.cameras = append(l.cameras, [2]string{mk, md})
	}
	if j.hdr != nil {
		add(j.hdr.EXIF.Make, j.hdr.EXIF.Model)
		l.lens, l.focal, l.aperture = j.hdr.EXIF.Lens, j.hdr.EXIF.FocalLength, j.hdr.EXIF.FNumber
	}
	add(j.info.Make, j.info.Model)
	if l.lens == "" {
		l.lens = j.info.Lens
	}
	if !(l.focal > 0) {
		l.focal = j.info.FocalLength
	}
	if !(l.aperture > 0) {
		l.aperture = j.info.Aperture
	}
	if j.settings.LensModel != "" {
		l.lens = j.settings.LensModel
	}
	l.lens = strings.TrimSpace(l.lens)
	l.distance = 1000 // the files read do not give the focus distance: infinity
	return l
}

func stageLens(ctx context.Context, j *job) error {
	lc := &LensCorrection{}
	j.lens = lc
	if j.lensByOpcodes {
		lc.Reason = "corrected by the DNG's opcodes"
		return nil
	}
	if j.colors != 3 {
		lc.Reason = fmt.Sprintf("%d colour channels", j.colors)
		return nil
	}
	lk := j.lensLookup()
	lc.LookedUp = lk.lens
	var extra []string
	if j.settings.LensDB != "" {
		extra = append(extra, j.settings.LensDB)
	}
	db, err := lensfun.Open(extra...)
	if err != nil {
		return fmt.Errorf("lens correction: %w", err)
	}
	defer db.Close()
	var cam *lensfun.Camera
	for _, c := range lk.cameras {
		if cam, err = db.FindCamera(c[0], c[1]); err != nil {
			return fmt.Errorf("lens correction: %w", err)
		} else if cam != nil {
			break
		}
	}
	if cam != nil {
		lc.Camera = strings.TrimSpace(cam.Maker + " " + cam.Model)
	}
	var lens *lensfun.Lens
	if cam != nil && lk.lens != "" {
		if lens, err = db.FindLens(cam, "", lk.lens); err != nil {
			return fmt.Errorf("lens correction: %w", err)
		}
	}
	if lens == nil {
		lc.Reason = "no lens profile"
		if cam == nil && len(lk.cameras) > 0 {
			lc.Reason = "no lens profile (camera not in lensfun's database)"
		}
		if lk.lens == "" {
			lc.Reason = "no lens profile (the file names no lens)"
		}
		return nil
	}
	lc.Profile = lens.Name()
	if !(lk.focal > 0) {
		lc.Reason = "no focal length"
		return nil
	}
	lc.FocalLength, lc.Aperture, lc.Distance = lk.focal, lk.aperture, lk.distance
	w, h := j.img.W, j.img.H
	m, err := db.NewModifier(lens, cam.CropFactor, w, h, lk.focal, lk.aperture, lk.distance,
		lensfun.Vignetting|lensfun.Distortion|lensfun.TCA, true)
	if err != nil {
		return fmt.Errorf("lens correction: %w", err)
	}
	defer m.Close()
	lc.Scale = m.Scale
	if m.Applied == 0 {
		lc.Reason = fmt.Sprintf("the profile has no calibration at %g mm", lk.focal)
		return nil
	}
	lc.Corrections = m.Applied.String()
	if m.Applied&lensfun.Vignetting != 0 {
		if j.cached != nil && j.cached.entry != nil && len(j.camera) > 0 && len(j.cached.pix) > 0 && &j.camera[0] == &j.cached.pix[0] {
			// The image is the stage cache's read-only mapping: correct
			// a copy, and give the mapping back.
			j.camera = slices.Clone(j.camera)
			j.releaseCached()
		}
		for y := 0; y < h; y += lensBand {
			n := min(lensBand, h-y)
			if err := m.Devignette(j.camera[y*w*3:(y+n)*w*3], y, n); err != nil {
				return fmt.Errorf("lens correction: %w", err)
			}
		}
	}
	if m.Applied&(lensfun.Distortion|lensfun.TCA) == 0 {
		return nil
	}
	out, err := lensRemap(ctx, j.camera, w, h, m.Coordinates)
	if err != nil {
		return fmt.Errorf("lens correction: %w", err)
	}
	j.camera = out
	if err := j.lensPreview(ctx, db, lens, cam.CropFactor, lk, m.Applied&^lensfun.Vignetting); err != nil {
		return fmt.Errorf("lens correction of the embedded preview: %w", err)
	}
	return nil
}

// lensPreview gives the embedded preview, when one is kept (for the
// exposure anchor and the camera look, which compare it cell by cell with
// the camera image), the geometric corrections fix of the camera image:
// the same lensfun model at the preview's size, auto-scaled alike, so the
// two stay aligned (the scale and the distortion are relative to the
// image's size). Its vignetting is left as the camera rendered it.
func (j *job) lensPreview(ctx context.Context, db *lensfun.DB, lens *lensfun.Lens, crop float64, lk lensLookup, fix lensfun.Corrections) error {
	p := j.preview
	if p == nil || fix == 0 {
		return nil
	}
	// Both the reduced preview and its score grid (Cells, which the
	// exposure anchor and the camera look compare) are corrected.
	if p.Image.W < 2 || p.Image.H < 2 || len(p.Image.Pix) != p.Image.W*p.Image.H*3 {
		return nil
	}
	if err := lensWarpImage(ctx, db, lens, crop, lk, fix, &p.Image); err != nil {
		return err
	}
	if p.Cells.W > 0 {
		cells, _, _ := look.Reduce(p.Image, p.Cells.W, p.Cells.H, 0)
		p.Cells = cells
	}
	return nil
}

// lensWarpImage puts img (W×H×3 float32) through the geometric corrections
// fix of the lens at img's size, auto-scaled as the camera image is.
func lensWarpImage(ctx context.Context, db *lensfun.DB, lens *lensfun.Lens, crop float64, lk lensLookup, fix lensfun.Corrections, img *look.Image) error {
	m, err := db.NewModifier(lens, crop, img.W, img.H, lk.focal, lk.aperture, lk.distance, fix, true)
	if err != nil {
		return err
	}
	defer m.Close()
	out, err := lensRemap(ctx, img.Pix, img.W, img.H, m.Coordinates)
	if err != nil {
		return err
	}
	img.Pix = out
	return nil
}

// lensRemap resamples src (w×h×3) through per-channel source positions:
// coords fills, for rows y0 … y0+rows−1, 6 float32 a pixel (x, y of red,
// green, blue in src), as lensfun.Modifier.Coordinates does. The positions
// are computed band by band on the calling goroutine (lensfun's handles
// belong to its thread), each band remapped by warp.Remap in parallel.
func lensRemap(ctx context.Context, src []float32, w, h int, coords func(dst []float32, y0, rows int) error) ([]float32, error) {
	out := make([]float32, len(src))
	pos := make([]float32, w*lensBand*6)
	for y0 := 0; y0 < h; y0 += lensBand {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := min(lensBand, h-y0)
		p := pos[:w*n*6]
		if err := coords(p, y0, n); err != nil {
			return nil, err
		}
		band := warp.Remap(src, w, h, 3, w, n, func(y, ch int, sx, sy []float32) {
			row := p[y*w*6:]
			for i := range sx {
				sx[i], sy[i] = row[i*6+2*ch], row[i*6+2*ch+1]
			}
		})
		copy(out[y0*w*3:], band)
	}
	return out, nil
}
