package pipeline

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/rawbatch/rawbatch/pipeline/highlight"
	"github.com/rawbatch/rawbatch/pipeline/warp"
)

// Edit is one file's own develop settings, applied over the run's
// Settings for that file only: what a photographer's editor left in the
// file's XMP (the runner fills it from the sidecar with --sidecar geometry
// or basic; docs/usage.md "Sidecars"). The zero value changes nothing and
// hashes as nothing (DevelopHash), so records made without it stay valid.
type Edit struct {
	// Orientation replaces the file's own orientation: EXIF's values 1..8
	// (1 upright, 3 turned 180°, 6 turned 90° clockwise to show, 8 90°
	// counter-clockwise, 2, 4, 5, 7 mirrored); 0 keeps the file's.
	Orientation int `json:",omitempty"`
	// Crop, when set, cuts the output to a turned rectangle of the image
	// as stored (EditCrop); the output's size follows it.
	Crop *EditCrop `json:",omitempty"`
	// Exposure is added to --exposure, in EV: scene-referred linear light
	// times 2^Exposure, before the tone curve.
	Exposure float64 `json:",omitempty"`
	// Temperature and Tint, when Temperature > 0, replace --wb: the
	// white-balance multipliers that make neutral the light of Temperature
	// kelvin moved off the Planckian locus by Tint (KelvinMultipliers).
	Temperature float64 `json:",omitempty"`
	Tint        float64 `json:",omitempty"`
}

// EditCrop is a crop rectangle in Camera Raw's terms (crs:CropLeft,
// CropTop, CropRight, CropBottom, CropAngle): (Left, Top) and (Right,
// Bottom) are the turned rectangle's upper-left and lower-right corners
// as fractions of the width and height of the image as stored (the
// sensor's orientation, before Orientation; after --crop camera's
// picture area), and Angle the rectangle's turn about its centre in
// degrees (positive turns it clockwise as seen, y pointing down).
type EditCrop struct {
	Top, Left, Bottom, Right float64
	Angle                    float64
}

// Key is a text that changes exactly when e changes, "" for the zero
// Edit: its parts of DevelopHash, for a runner that joins a file's edit
// to the run's settings hash.
func (e Edit) Key() string { return strings.Join(e.hashParts(), "\x00") }

// hashParts are e's parts of DevelopHash: none for the zero Edit.
func (e Edit) hashParts() []string {
	var parts []string
	if e.Orientation != 0 {
		parts = append(parts, fmt.Sprintf("edit-orientation=%d", e.Orientation))
	}
	if c := e.Crop; c != nil {
		parts = append(parts, fmt.Sprintf("edit-crop=%g,%g,%g,%g,%g", c.Top, c.Left, c.Bottom, c.Right, c.Angle))
	}
	if e.Exposure != 0 {
		parts = append(parts, fmt.Sprintf("edit-exposure=%g", e.Exposure))
	}
	return append(parts, e.rawParts()...)
}

// rawParts are the parts of e that change the decoded image (the white
// balance, applied before the demosaic): the stage cache key's too. A
// Tint without a Temperature changes nothing but is hashed all the same.
func (e Edit) rawParts() []string {
	if e.Temperature > 0 || e.Tint != 0 {
		return []string{fmt.Sprintf("edit-wb=%g,%g", e.Temperature, e.Tint)}
	}
	return nil
}

// exifFlip maps EXIF Orientation 1..8 to LibRaw's flip code (bit 2:
// transpose, bit 1: turn rows upside down, bit 0: mirror columns; the
// bits NewOriented reads); ok false for another value.
func exifFlip(o int) (flip int, ok bool) {
	flips := [9]int{-1, 0, 1, 3, 2, 4, 6, 7, 5}
	if o < 1 || o > 8 {
		return 0, false
	}
	return flips[o], true
}

// applyEditOrientation makes j's orientation the Edit's, when it has one,
// right after LibRaw identified the file: every later step (the
// orientation view, the streamed conversion, the stage cache) reads
// j.info.Flip.
func (j *job) applyEditOrientation() {
	if f, ok := exifFlip(j.settings.Edit.Orientation); ok {
		j.info.Flip = f
	}
}

// editCropStage cuts the shared camera image to the Edit's crop, turned
// by its angle (Settings.Edit.Crop): a bicubic remap (pipeline/warp, Keys
// a = −0.5) of the rectangle into an upright image of its own size,
// rounded to whole pixels; an angle of 0 with corners on pixel edges
// copies pixels unchanged. It runs after the exposure anchor (measured on
// the whole picture, as the embedded preview shows it) and before the
// camera matrix, in the sensor's orientation (the crop's frame), so the
// orientation stage turns the cut image as it would the whole one, and
// the variants are sized from the cut image (the rest of the plan is made
// again for its size). A crop outside the image is clamped to it; an
// empty one is a warning and leaves the image whole. Variants made from
// the embedded preview (source=preview) are not cut.
var editCropStage = Stage{Name: "edit-crop", Scope: PerFile, Kind: Spatial, Linear: true, Cost: editCropCost,
	Active: func(s Settings) bool { return s.Edit.Crop != nil }, run: stageEditCrop, versionIfActive: true}

// editCropCost: the cut image (at most the whole image, W×H×3 float32)
// beside its source, freed when the step ends.
func editCropCost(m memCtx) StepMemory { return StepMemory{Alloc: 12 * m.px()} }

// cropGeometry is an EditCrop in the pixels of a w×h image: the output
// size ow×oh, the rectangle's centre (cx, cy, in pixel-edge coordinates:
// 0 is the left edge of the first pixel) and its turn's cosine and sine.
type cropGeometry struct {
	ow, oh           int
	cx, cy, cos, sin float64
}

// geometry returns c's cropGeometry on a w×h image; ok false when the
// rectangle is empty or not a number. The rectangle's half diagonal
// d = ((Right−Left)·w/2, (Bottom−Top)·h/2) is its unturned half diagonal
// turned by Angle, so the unturned half sizes are d turned back by −Angle.
func (c EditCrop) geometry(w, h int) (g cropGeometry, ok bool) {
	a := c.Angle * math.Pi / 180
	g.cos, g.sin = math.Cos(a), math.Sin(a)
	g.cx, g.cy = (c.Left+c.Right)/2*float64(w), (c.Top+c.Bottom)/2*float64(h)
	dx, dy := (c.Right-c.Left)/2*float64(w), (c.Bottom-c.Top)/2*float64(h)
	hw := dx*g.cos + dy*g.sin
	hh := -dx*g.sin + dy*g.cos
	if !(hw >= 0.5 && hh >= 0.5) || math.IsInf(hw, 0) || math.IsInf(hh, 0) {
		return g, false
	}
	g.ow, g.oh = max(1, int(math.Round(2*hw))), max(1, int(math.Round(2*hh)))
	g.ow, g.oh = min(g.ow, 4*w), min(g.oh, 4*h)
	return g, true
}

// source returns the input position (pixel centres at integers, as
// pipeline/warp takes them) of output pixel (x, y).
func (g cropGeometry) source(x, y int) (float64, float64) {
	u := float64(x) + 0.5 - float64(g.ow)/2
	v := float64(y) + 0.5 - float64(g.oh)/2
	return g.cx + u*g.cos - v*g.sin - 0.5, g.cy + u*g.sin + v*g.cos - 0.5
}

func stageEditCrop(_ context.Context, j *job) error {
	c := j.settings.Edit.Crop
	w, h := j.img.W, j.img.H
	if c == nil || j.camera == nil || w <= 0 || h <= 0 {
		return nil
	}
	g, ok := c.geometry(w, h)
	if !ok {
		j.warnings = append(j.warnings, fmt.Sprintf("sidecar crop %g,%g,%g,%g at %g° is empty: not applied", c.Left, c.Top, c.Right, c.Bottom, c.Angle))
		return nil
	}
	if len(j.camera) != w*h*j.colors {
		return fmt.Errorf("sidecar crop: the image holds %d values, not %d×%d×%d", len(j.camera), w, h, j.colors)
	}
	j.camera = warp.Remap(j.camera, w, h, j.colors, g.ow, g.oh, func(y, _ int, sx, sy []float32) {
		for x := range sx {
			fx, fy := g.source(x, y)
			sx[x], sy[x] = float32(fx), float32(fy)
		}
	})
	j.img = Image{W: g.ow, H: g.oh}
	j.giveBack()
	return nil
}

// KelvinMultipliers returns the white-balance multipliers (camera R, G, B
// gains, G = 1) that make neutral a light of t kelvin and tint: its
// chromaticity is the Planckian locus's at t (highlight.PlanckianXYZ)
// moved by tint/3000 in CIE 1960 (u, v) along the locus's normal, towards
// green for a positive tint (so that, as in Camera Raw, a larger Tint
// makes the picture more magenta and a larger Temperature warmer); its
// camera RGB is camXYZ (XYZ → camera, cameraXYZ) times its XYZ, and each
// multiplier is G/channel. ok false when the camera RGB is not positive.
func KelvinMultipliers(camXYZ [3][3]float64, t, tint float64) (mul [3]float64, ok bool) {
	xyz := tintedXYZ(t, tint)
	var c [3]float64
	for i := range 3 {
		for k := range 3 {
			c[i] += camXYZ[i][k] * xyz[k]
		}
	}
	if !(c[0] > 0 && c[1] > 0 && c[2] > 0) {
		return mul, false
	}
	return [3]float64{c[1] / c[0], 1, c[1] / c[2]}, true
}

// tintedXYZ is XYZ (Y = 1) of the light of t kelvin moved by tint/3000
// along the Planckian locus's unit normal in CIE 1960 (u, v), towards +v
// (green) for a positive tint; the normal is taken from the locus at t
// ± 1 mired.
func tintedXYZ(t, tint float64) [3]float64 {
	uv := func(t float64) (float64, float64) {
		p := highlight.PlanckianXYZ(t)
		d := p[0] + 15*p[1] + 3*p[2]
		return 4 * p[0] / d, 6 * p[1] / d
	}
	u, v := uv(t)
	m := 1e6 / t
	u1, v1 := uv(1e6 / (m - 1))
	u2, v2 := uv(1e6 / (m + 1))
	tu, tv := u2-u1, v2-v1
	n := math.Hypot(tu, tv)
	nu, nv := -tv/n, tu/n
	if nv < 0 {
		nu, nv = -nu, -nv
	}
	if n > 0 {
		u += tint / 3000 * nu
		v += tint / 3000 * nv
	}
	// (u, v) → (x, y): x = 3u/(2u − 8v + 4), y = 2v/(2u − 8v + 4).
	d := 2*u - 8*v + 4
	x, y := 3*u/d, 2*v/d
	return [3]float64{x / y, 1, (1 - x - y) / y}
}
