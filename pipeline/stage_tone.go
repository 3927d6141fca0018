package pipeline

import (
	"context"
	"fmt"

	"github.com/rawbatch/rawbatch/pipeline/look"
)

// toneStage applies the camera look's saturation (job.lookSaturateRow)
// and the tone curve (job.toneCurve) hue-preservingly, in place; not
// linear.
var toneStage = Stage{Name: "tone", Scope: PerFile, Kind: Pointwise, Cost: noBuffers, run: stageTone, Row: toneRow}

func stageTone(_ context.Context, j *job) error {
	if k, _ := toneRow(j, nil); k != nil {
		j.image().parallel(k)
	}
	return nil
}

// toneRow is the stage's kernel (Stage.Row): the look's saturation, then
// the tone curve by applyTone's method; nil when neither applies.
func toneRow(j *job, _ *fusePass) (rowKernel, bool) {
	sat := j.lookSaturateRow()
	c := j.toneCurve()
	if j.cur != nil && j.cur.spec.Variant.HDR != "" {
		return hdrToneRow(sat, c), true
	}
	if j.cur != nil && j.cur.spec.Variant.Format == "uhdr" {
		// The look's saturation alone: the quantiser makes the SDR base
		// (the tone curve, as here for the other variants) and the HDR
		// rendition from this scene-referred image (quantiseUHDR).
		return sat, true
	}
	if c == nil {
		return sat, true
	}
	lut := look.ToneLUT(c)
	if sat == nil {
		return func(px []float32) { look.ToneRows(lut, px) }, true
	}
	return func(px []float32) {
		sat(px)
		look.ToneRows(lut, px)
	}, true
}

// hdrToneRow is an HDR variant's tone (its own step, PlanVariants): the
// look's saturation, then the HDR rendition, display-referred linear light
// relative to SDR white (1.0: colour.HDRReferenceWhite nits) with the
// headroom above it kept: the tone curve c up to its knee, linear light
// with the knee's gain above (look.HDRTone: shadows and mid-tones as the
// SDR rendition has them, no shoulder, values above SDR white as the scene
// has them, up to PQ's 10000 nits or HLG's 1000 at quantise); without a
// curve, scene-referred linear light. Negative values 0.
func hdrToneRow(sat rowKernel, c look.Curve) rowKernel {
	if c == nil {
		return func(px []float32) {
			if sat != nil {
				sat(px)
			}
			for i, v := range px {
				px[i] = max(v, 0)
			}
		}
	}
	return hdrRows(sat, look.NewHDRTone(c))
}

// hdrRows is hdrToneRow's kernel with the curve's HDR rendition h.
func hdrRows(sat rowKernel, h look.HDRTone) rowKernel {
	return func(px []float32) {
		if sat != nil {
			sat(px)
		}
		h.Rows(px)
	}
}

// ToneCurve names a tone curve applied to scene-referred linear RGB.
type ToneCurve string

const (
	// ToneNone leaves scene-referred values as they are (values above 1
	// clip at the output).
	ToneNone ToneCurve = "none"
	// ToneDefault is the file's DNG ProfileToneCurve when it has one, else
	// look.DefaultCurve (soft toe, mid grey 0.18 → 0.39, long shoulder),
	// applied hue-preservingly (DNG "RGB tone") in the working space.
	ToneDefault ToneCurve = "default"
)

// ParseToneCurve accepts "default" and "none".
func ParseToneCurve(s string) (ToneCurve, error) {
	switch ToneCurve(s) {
	case ToneDefault, ToneNone:
		return ToneCurve(s), nil
	}
	return "", fmt.Errorf("unknown tone curve %q (want default or none)", s)
}

// toneCurve returns the curve the default tone applies to the file: its
// DNG ProfileToneCurve (tag 50940, as the header read it) when it has a
// valid one, else look.DefaultCurve; nil for ToneNone.
func (j *job) toneCurve() look.Curve {
	if j.settings.Tone != ToneDefault {
		return nil
	}
	if j.cameraLook != nil {
		return j.cameraLook.Curve
	}
	if j.hdr != nil && len(j.hdr.ProfileToneCurve) >= 4 {
		if t, err := look.ProfileToneCurve(j.hdr.ProfileToneCurve); err == nil {
			return t
		}
	}
	return look.DefaultCurve
}

// applyTone applies curve c (nil: nothing) in place to every pixel of img
// by the DNG "RGB tone" method (look.RGBTone): the largest and smallest
// channel through c, the middle one at the same fraction between them,
// which keeps the hue. Inputs below 0 count as 0 and above 1 (the raw's
// clip level, the curve's white) as 1 for the curve; NaN becomes 0. The
// result is display-linear in [0, 1].
func applyTone(img Image, c look.Curve) {
	if c == nil {
		return
	}
	lut := look.ToneLUT(c)
	img.parallel(func(pix []float32) { look.ToneRows(lut, pix) })
}

// lookSaturateRow returns the kernel that scales pixels' chroma about
// their luminance by the camera look's saturation factor
// (look.SaturateRows, with the working space's luminance), in place,
// before the tone curve; nil without a look or at factor 1.
func (j *job) lookSaturateRow() rowKernel {
	l := j.cameraLook
	if l == nil || l.Saturation == 1 {
		return nil
	}
	k := float32(l.Saturation)
	var lum [3]float32
	for c := range 3 {
		lum[c] = float32(WorkingSpace.ToXYZ[1][c])
	}
	return func(pix []float32) { look.SaturateRows(pix, k, lum) }
}
