package batch

import "github.com/rawbatch/rawbatch/pipeline"

// ReportDenoise is a converted file's noise reduction in the report
// (pipeline.DenoiseUsed).
type ReportDenoise struct {
	// Strength applied (0: none; docs/denoise.md for the scale).
	Strength float64 `json:"strength"`
	// ISO is the file's ISO speed (0 unknown, or not read: --denoise off).
	ISO int `json:"iso,omitempty"`
	// Sigma is the luminance noise measured at mid grey (linear, 1 =
	// white), when the stage ran.
	Sigma float64 `json:"sigma,omitempty"`
	// Reason says how the strength was chosen.
	Reason string `json:"reason"`
}

// ReportSharpen is a converted file's capture sharpening in the report
// (pipeline.SharpenUsed).
type ReportSharpen struct {
	// Amount of the unsharp mask (0: none) and Sigma its Gaussian in
	// pixels.
	Amount float64 `json:"amount"`
	Sigma  float64 `json:"sigma_px,omitempty"`
	// Reason says how the amount was chosen.
	Reason string `json:"reason"`
}

// reportDetail converts a result's denoise and capture sharpening (nil
// when absent).
func reportDetail(r pipeline.Result) (*ReportDenoise, *ReportSharpen) {
	var d *ReportDenoise
	var s *ReportSharpen
	if u := r.Denoise; u != nil {
		d = &ReportDenoise{Strength: u.Strength, ISO: u.ISO, Sigma: u.Sigma, Reason: ReportText(u.Reason)}
	}
	if u := r.CaptureSharpen; u != nil {
		s = &ReportSharpen{Amount: u.Amount, Sigma: u.Sigma, Reason: ReportText(u.Reason)}
	}
	return d, s
}
