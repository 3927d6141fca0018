package pipeline

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/rawbatch/rawbatch/pipeline/dngopcode"
	"github.com/rawbatch/rawbatch/pipeline/internal/lensfun"
)

// implausibleVignetting is lensDevignette's refusal of a profile whose
// gains are implausible somewhere in the frame (dngopcode.PlausibleGain:
// ≤ 0, not finite, or above dngopcode.MaxGain = 16, 4 EV); the image is
// left as it was.
type implausibleVignetting struct{ why string }

func (e *implausibleVignetting) Error() string { return e.why }

// checkVignetteGains looks at every gain of the node rows ys (gains: one
// row of w×3 float32 a node row, of a w×h image) and returns an
// *implausibleVignetting saying what and where ("gain ≤ 0 at the
// corners (from r = 0.80)", r the distance from the centre over the half
// diagonal) for the first implausible gain nearest the centre; nil when
// all are plausible.
func checkVignetteGains(gains []float32, ys []int, w, h int) error {
	return checkVignetteGainsN(gains, 3, ys, w, h)
}

// checkVignetteGainsN is checkVignetteGains for gains of gc values a
// pixel (1: one gain for the three channels; 3).
func checkVignetteGainsN(gains []float32, gc int, ys []int, w, h int) error {
	cx, cy := float64(w-1)/2, float64(h-1)/2
	half := math.Hypot(cx, cy)
	if !(half > 0) {
		half = 1
	}
	why, rmin := "", math.Inf(1)
	for k, y := range ys {
		row := gains[k*w*gc : (k+1)*w*gc]
		for i, g := range row {
			if s := dngopcode.PlausibleGain(float64(g)); s != "" {
				if r := math.Hypot(float64(i/gc)-cx, float64(y)-cy) / half; r < rmin {
					why, rmin = s, r
				}
			}
		}
	}
	if why == "" {
		return nil
	}
	if rmin > 0.7 {
		return &implausibleVignetting{fmt.Sprintf("%s at the corners (from r = %.2f)", why, rmin)}
	}
	return &implausibleVignetting{fmt.Sprintf("%s from r = %.2f of the half diagonal", why, rmin)}
}

// skipLensVignetting records in lc and the warnings that the profile's
// vignetting correction was not applied because of err (an
// *implausibleVignetting); the other corrections of applied go on.
// It returns false, leaving everything as it was, for any other error.
func (j *job) skipLensVignetting(lc *LensCorrection, applied lensfun.Corrections, err error) bool {
	var bad *implausibleVignetting
	if !errors.As(err, &bad) {
		return false
	}
	lc.Corrections = ""
	if rest := applied &^ lensfun.Vignetting; rest != 0 {
		lc.Corrections = rest.String()
	}
	note := "vignetting not applied: " + bad.why
	lc.Reason = strings.TrimPrefix(lc.Reason+"; "+note, "; ")
	j.warnings = append(j.warnings, fmt.Sprintf("lens correction (%s): %s", lc.Profile, note))
	return true
}

// noLensReason is Reason when lensfun has no lens named name for cam:
// "no lens profile", or, when a lens of that name exists but lensfun
// does not match it to cam, why: a lens profiled on a smaller sensor
// than cam's (a larger crop factor, by more than 1 %: lensfun does not
// use it on a larger sensor) gives "no lens profile (lensfun's NAME is
// profiled for crop factor 1.5, larger than the Canon EOS 6D's 1.0)";
// any other (a --lens-model for another camera's mount) "no lens
// profile (lensfun's NAME does not fit the Canon EF mount)".
func noLensReason(db *lensfun.DB, cam *lensfun.Camera, name string) string {
	if cam == nil || name == "" {
		return "no lens profile"
	}
	other, err := db.FindLens(nil, "", name)
	if err != nil || other == nil {
		return "no lens profile"
	}
	if cam.CropFactor > 0 && other.CropFactor > cam.CropFactor*1.01 {
		return fmt.Sprintf("no lens profile (lensfun's %s is profiled for crop factor %.1f, larger than the %s %s's %.1f)", other.Name(), other.CropFactor, cam.Maker, cam.Model, cam.CropFactor)
	}
	mount := "the camera's mount"
	if cam.Mount != "" {
		mount = "the " + cam.Mount + " mount"
	}
	return fmt.Sprintf("no lens profile (lensfun's %s does not fit %s)", other.Name(), mount)
}
