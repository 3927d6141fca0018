package pipeline

import (
	"context"
	"fmt"
)

// cropStage crops the demosaiced camera image to the camera's picture area
// (--crop camera, pictureArea in crop.go, docs/crop.md), in place: the
// rows of the area move to the start of the buffer. It runs right after
// demosaic, before highlights and the stage cache's store, so the cache
// holds the cropped image (CacheKey has the crop setting) and the
// exposure anchor, the look fits and every later stage see the picture
// area.
var cropStage = Stage{Name: "crop", Scope: PerFile, Kind: Spatial, Linear: true, Cost: noBuffers,
	Active: func(s Settings) bool { return s.crop() == CropCamera }, run: stageCrop,
	Band: cropBand} // stream.go

// stageCrop crops j.camera to the picture area (scaledCrop) and records
// the crop used (Result.Crop). A cached image is cropped already; an
// implausible picture area, or a decoded image that is not LibRaw's
// visible area, leaves the image as it is with a warning.
func stageCrop(_ context.Context, j *job) error {
	w, h := j.img.W, j.img.H
	_, _, warn := pictureArea(j.hdr)
	if warn != "" {
		j.warnings = append(j.warnings, warn)
	}
	if j.fromCache {
		// The entry was stored after this stage (its key has the crop
		// setting): only the record of what was cropped is made again.
		vw, vh := 0, 0
		if j.hdr != nil {
			vw, vh = halvedIf(j.settings.HalfSize, j.hdr.VisibleArea[2], j.hdr.VisibleArea[3])
		}
		if c, ok := scaledCrop(j.hdr, j.settings, vw, vh); ok && c.W == w && c.H == h {
			j.crop = &c
			j.cropFrame = [2]int{vw, vh}
			return nil
		}
		j.crop = &Crop{Source: CropNone, W: w, H: h}
		return nil
	}
	c, ok := scaledCrop(j.hdr, j.settings, w, h)
	if !ok {
		if p, stated, _ := pictureArea(j.hdr); stated {
			j.warnings = append(j.warnings, fmt.Sprintf("crop: the picture area of %s not applied: the decoded image is %d×%d, not LibRaw's visible area", p.Source, w, h))
		}
		j.crop = &Crop{Source: CropNone, W: w, H: h}
		return nil
	}
	if j.camera != nil { // nil: streamed, the crop is the demosaic's region (stream.go)
		j.camera = cropInPlace(j.camera, w, j.colors, c)
	}
	j.img = Image{W: c.W, H: c.H}
	j.crop = &c
	j.cropFrame = [2]int{w, h}
	return nil
}

// cropResult is the crop a converted file's output covers (Result.Crop):
// the crop stage's record, or with --crop sensor LibRaw's visible area;
// nil when nothing was decoded.
func (j *job) cropResult() *Crop {
	if j.crop != nil || !j.decoded && !j.fromCache {
		return j.crop
	}
	if j.hdr == nil {
		return nil
	}
	w, h := halvedIf(j.settings.HalfSize, j.hdr.VisibleArea[2], j.hdr.VisibleArea[3])
	return &Crop{Source: CropFromSensor, W: w, H: h}
}

// pictureSize returns the full-size width and height in pixels, in sensor
// orientation, of the area the outputs cover: the picture area with
// --crop camera (when it applies to LibRaw's visible area, j.info), else
// the visible area. The preview's grid is made for it before decoding.
func (j *job) pictureSize() (w, h int) {
	w, h = j.info.Width, j.info.Height
	if j.hdr != nil && j.hdr.VisibleArea[2] == w && j.hdr.VisibleArea[3] == h {
		s := j.settings
		s.HalfSize = false
		return croppedSize(j.hdr, s, w, h)
	}
	return w, h
}
