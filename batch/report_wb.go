package batch

import "github.com/rawbatch/rawbatch/pipeline"

// ReportWhiteBalance is the white balance a file was converted with and why
// (pipeline.WhiteBalanceUsed), in a FileReport.
type ReportWhiteBalance struct {
	// Multipliers are the gains applied to camera R, G, B, relative to
	// green (G = 1); zeros when unknown.
	Multipliers [3]float64 `json:"multipliers"`
	// Source: "as shot", "auto", "daylight", "grey world", "custom" or
	// "cached" (see pipeline.WhiteBalanceUsed).
	Source string `json:"source"`
	// Reason says why ("as shot", or why the as-shot multipliers were not
	// used).
	Reason string `json:"reason"`
	// EstimatedCCT and CorrectedCCT are, for source "auto", the colour
	// temperatures in kelvin of the estimated illuminant and of the one made
	// neutral.
	EstimatedCCT float64 `json:"estimated_cct_k,omitempty"`
	CorrectedCCT float64 `json:"corrected_cct_k,omitempty"`
}

// reportWhiteBalance is w for the report, nil when w is.
func reportWhiteBalance(w *pipeline.WhiteBalanceUsed) *ReportWhiteBalance {
	if w == nil {
		return nil
	}
	return &ReportWhiteBalance{Multipliers: w.Multipliers, Source: w.Source, Reason: ReportText(w.Reason),
		EstimatedCCT: w.EstimatedCCT, CorrectedCCT: w.CorrectedCCT}
}
