package pipeline

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rawbatch/rawbatch/pipeline/internal/lensfun"
	"github.com/rawbatch/rawbatch/pipeline/lens"
)

// skipLensVignetting records in lc and the warnings that the profile's
// vignetting correction was not applied because of err (an
// *lens.ImplausibleVignetting); the other corrections of applied go on.
// It returns false, leaving everything as it was, for any other error.
func (j *job) skipLensVignetting(lc *LensCorrection, applied lensfun.Corrections, err error) bool {
	var bad *lens.ImplausibleVignetting
	if !errors.As(err, &bad) {
		return false
	}
	lc.Corrections = ""
	if rest := applied &^ lensfun.Vignetting; rest != 0 {
		lc.Corrections = rest.String()
	}
	note := "vignetting not applied: " + bad.Error()
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
