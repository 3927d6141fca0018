package pipeline

import (
	"fmt"

	"github.com/rawbatch/rawbatch/pipeline/header"
)

// This file is the one home of the picture-area rule (--crop,
// docs/crop.md): which rectangle of LibRaw's visible area the camera calls
// its picture, where that comes from, when it is believed, and how it
// scales under --half-size. DecodedSize, the stage cache's size check, the
// preview's grid and the crop stage (stage_crop.go) all ask it.

// Sources of a Crop (Crop.Source).
const (
	// CropFromDNG: DNG DefaultCropOrigin/DefaultCropSize (tags 50719,
	// 50720), relative to the ActiveArea (50829).
	CropFromDNG = "dng-defaultcrop"
	// CropFromCanon: Canon SensorInfo's borders (maker note 0xE0; CIFF
	// 0x1031 in a CRW).
	CropFromCanon = "canon-sensorinfo"
	// CropFromLibRaw: LibRaw's inset crop (sizes.raw_inset_crops[0], 0.21;
	// sizes.raw_inset_crop, 0.20), filled from some makers' notes.
	CropFromLibRaw = "libraw-inset"
	// CropNone: the file states no usable picture area; the output is
	// LibRaw's visible area.
	CropNone = "none"
	// CropFromSensor: --crop sensor, LibRaw's visible area.
	CropFromSensor = "sensor"
)

// Crop is the rectangle of LibRaw's visible area a file's output covers:
// X, Y (its top-left corner) and W, H in pixels of the decoded image
// (halved with --half-size), in sensor orientation (before rotation), and
// where it came from (Source: CropFromDNG, CropFromCanon, CropFromLibRaw,
// CropNone or CropFromSensor). The report's "crop".
type Crop struct {
	Source string `json:"source"`
	X      int    `json:"x"`
	Y      int    `json:"y"`
	W      int    `json:"w"`
	H      int    `json:"h"`
}

// maxCropFraction is the most of the visible area's width or height a
// picture area may take off; a larger one is taken for odd metadata and
// ignored (D30: 16 of 2176 columns, 8 of 1448 rows; DNGs from Adobe's
// converters: a few pixels a side).
const maxCropFraction = 0.10

// pictureArea returns the camera's picture area of the file h describes,
// at full size, relative to LibRaw's visible area (h.VisibleArea), in
// sensor orientation; ok false (with Source CropNone) when the file states
// none or LibRaw did not open it. The first source the file has, in the
// order DNG DefaultCrop, Canon SensorInfo, LibRaw's inset crop, is taken;
// when it does not lie inside the visible area, or removes more than
// maxCropFraction of its width or height, it is ignored and warn says so.
func pictureArea(h *header.Header) (c Crop, ok bool, warn string) {
	if h == nil {
		return Crop{Source: CropNone}, false, ""
	}
	vx, vy, vw, vh := h.VisibleArea[0], h.VisibleArea[1], h.VisibleArea[2], h.VisibleArea[3]
	c = Crop{Source: CropNone, W: vw, H: vh}
	if vw <= 0 || vh <= 0 {
		return c, false, ""
	}
	var raw [4]int // x, y, w, h in raw pixels
	switch dc, sa, ic := h.DefaultCrop, h.SensorArea, h.InsetCrop; {
	case h.Format == "DNG" && dc[2] > 0 && dc[3] > 0:
		// DefaultCropOrigin is relative to the ActiveArea's corner
		// (top, left, bottom, right); LibRaw's visible area is the
		// ActiveArea (its margins), so this is usually DefaultCropOrigin.
		c.Source, raw = CropFromDNG, [4]int{h.ActiveArea[1] + dc[0], h.ActiveArea[0] + dc[1], dc[2], dc[3]}
	case sa[2] > 0 && sa[3] > 0:
		c.Source, raw = CropFromCanon, sa
	case ic[2] > 0 && ic[3] > 0:
		c.Source, raw = CropFromLibRaw, ic
	default:
		return c, false, ""
	}
	x, y, w, hh := raw[0]-vx, raw[1]-vy, raw[2], raw[3]
	switch {
	case x < 0 || y < 0 || x+w > vw || y+hh > vh:
		warn = fmt.Sprintf("crop: ignored the picture area of %s (%d×%d at %d,%d): it does not lie inside LibRaw's visible area of %d×%d; the output covers the visible area",
			c.Source, w, hh, x, y, vw, vh)
	case float64(vw-w) > maxCropFraction*float64(vw) || float64(vh-hh) > maxCropFraction*float64(vh):
		warn = fmt.Sprintf("crop: ignored the picture area of %s (%d×%d at %d,%d): it would remove more than %.0f %% of the %d×%d visible area's width or height; the output covers the visible area",
			c.Source, w, hh, x, y, 100*maxCropFraction, vw, vh)
	default:
		return Crop{Source: c.Source, X: x, Y: y, W: w, H: hh}, true, ""
	}
	return Crop{Source: CropNone, W: vw, H: vh}, false, warn
}

// scaledCrop is the crop the crop stage applies to a decoded image of
// w×h pixels (sensor orientation) for the settings s: the picture area
// (pictureArea), halved with s.HalfSize (corner x/2, y/2, size (w+1)/2,
// (h+1)/2 kept inside the halved area); ok false when s is --crop sensor,
// the file states no usable area, or w×h is not LibRaw's visible area
// (halved with HalfSize, halvedIf) — a Fuji SuperCCD's rotated or a
// stretched non-square-pixel image, which keeps its decoded size.
func scaledCrop(h *header.Header, s Settings, w, hgt int) (Crop, bool) {
	if s.crop() != CropCamera {
		return Crop{}, false
	}
	c, ok, _ := pictureArea(h)
	if !ok {
		return Crop{}, false
	}
	vw, vh := halvedIf(s.HalfSize, h.VisibleArea[2], h.VisibleArea[3])
	if w != vw || hgt != vh {
		return Crop{}, false
	}
	if s.HalfSize {
		c.X, c.Y = c.X/2, c.Y/2
		c.W, c.H = min((c.W+1)/2, vw-c.X), min((c.H+1)/2, vh-c.Y)
	}
	return c, true
}

// croppedSize returns the size the crop stage makes of a decoded image of
// w×h pixels for s (w×h when it does not crop it): what the plan is
// checked against after the demosaic stage.
func croppedSize(h *header.Header, s Settings, w, hgt int) (int, int) {
	if c, ok := scaledCrop(h, s, w, hgt); ok {
		return c.W, c.H
	}
	return w, hgt
}

// plannedCropSize returns DecodedSize's crop of the size w×h (the header's
// Width×Height halved with HalfSize, after rotation): the cropped size,
// swapped as w×h is when the header's size is the visible area
// transposed (orientation 5..8).
func plannedCropSize(h *header.Header, s Settings, w, hgt int) (int, int) {
	if h == nil {
		return w, hgt
	}
	vw, vh := halvedIf(s.HalfSize, h.VisibleArea[2], h.VisibleArea[3])
	switch {
	case w == vw && hgt == vh:
		return croppedSize(h, s, w, hgt)
	case w == vh && hgt == vw:
		cw, ch := croppedSize(h, s, vw, vh)
		return ch, cw
	}
	return w, hgt
}

// cropInPlace moves the rows of the crop c of the interleaved image pix
// (w pixels wide, nc channels) to the start of pix and returns the
// cropped image, c.W×c.H×nc, sharing pix's memory: each row is moved to
// an address at or before its own, in order, so no row is overwritten
// before it is moved and no second buffer is needed.
func cropInPlace(pix []float32, w, nc int, c Crop) []float32 {
	row := c.W * nc
	for r := range c.H {
		src := ((c.Y+r)*w + c.X) * nc
		copy(pix[r*row:(r+1)*row], pix[src:src+row])
	}
	return pix[:c.H*row]
}
