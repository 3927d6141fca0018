package pipeline

// ExposureAnchor chooses whether the exposure is anchored to the embedded
// preview (issue 12 point 4).
type ExposureAnchor string

const (
	// AnchorPreview adds the preview-anchored correction (look.AnchorExposure)
	// when the file's embedded preview is usable and the estimate consistent.
	AnchorPreview ExposureAnchor = "preview"
	// AnchorNone applies --exposure and BaselineExposure only.
	AnchorNone ExposureAnchor = "none"
)

// AnchorNames lists the accepted --exposure-anchor values.
const AnchorNames = "preview|none"

// ParseExposureAnchor accepts one of AnchorNames, case-insensitively.
func ParseExposureAnchor(s string) (ExposureAnchor, error) {
	return parseChoice[ExposureAnchor]("exposure anchor", AnchorNames, s)
}

// Look chooses the rendering of issue 12 point 7.
type Look string

const (
	// LookDefault is the default curve with the preview-anchored exposure
	// (as ExposureAnchor says).
	LookDefault Look = "default"
	// LookCamera fits exposure, curve, white-balance gains and saturation
	// to the embedded preview per file (look.FitCamera), falling back to
	// LookDefault with a note.
	LookCamera Look = "camera"
	// LookNeutral is the default curve with no preview anchoring.
	LookNeutral Look = "neutral"
)

// LookNames lists the accepted --look values.
const LookNames = "default|camera|neutral"

// ParseLook accepts one of LookNames, case-insensitively.
func ParseLook(s string) (Look, error) {
	return parseChoice[Look]("look", LookNames, s)
}

// validateLook checks the look settings (part of Validate); the zero
// values mean the defaults of older callers: no anchor, default look.
func (s Settings) validateLook() error {
	if s.ExposureAnchor != "" {
		if _, err := ParseExposureAnchor(string(s.ExposureAnchor)); err != nil {
			return err
		}
	}
	if s.Look != "" {
		if _, err := ParseLook(string(s.Look)); err != nil {
			return err
		}
	}
	return nil
}

// needsPreview reports whether s's look uses the embedded preview: the
// preview-anchored exposure (not with --look neutral) or --look camera,
// both only with a tone curve (with --tone none neither applies).
func (s Settings) needsPreview() bool {
	if s.Tone == ToneNone {
		return false
	}
	return s.Look == LookCamera || s.ExposureAnchor == AnchorPreview && s.Look != LookNeutral
}
