package batch

import "github.com/rawbatch/rawbatch/pipeline"

// ReportLens is the lens correction of a file (pipeline.LensCorrection) in
// a FileReport: the lensfun profile used, or why none was.
type ReportLens struct {
	// Profile is the lensfun lens used ("Maker Model"); "" when none.
	Profile string `json:"profile,omitempty"`
	// Camera is the lensfun camera matched; "" when lensfun knows none.
	Camera string `json:"camera,omitempty"`
	// LookedUp is the lens name looked up (--lens-model, else the file's).
	LookedUp string `json:"looked_up,omitempty"`
	// Corrections applied: "vignetting, distortion, TCA" or a part.
	Corrections string `json:"corrections,omitempty"`
	// FocalLengthMM, Aperture (f-number) and DistanceM the profile was
	// interpolated at; Scale the auto-scale of the geometric corrections.
	FocalLengthMM float64 `json:"focal_length_mm,omitempty"`
	Aperture      float64 `json:"aperture,omitempty"`
	DistanceM     float64 `json:"distance_m,omitempty"`
	Scale         float64 `json:"scale,omitempty"`
	// Reason says why nothing was corrected ("no lens profile", ...).
	Reason string `json:"reason,omitempty"`
}

// ReportLensOf is l for the report and the JSON log, nil when l is (the
// lens stage did not run: --lens off, or the file was not decoded).
func ReportLensOf(l *pipeline.LensCorrection) *ReportLens {
	if l == nil {
		return nil
	}
	return &ReportLens{Profile: ReportText(l.Profile), Camera: ReportText(l.Camera), LookedUp: ReportText(l.LookedUp),
		Corrections: l.Corrections, FocalLengthMM: l.FocalLength, Aperture: l.Aperture, DistanceM: l.Distance,
		Scale: l.Scale, Reason: ReportText(l.Reason)}
}
