package batch

import (
	"testing"

	"github.com/rawbatch/rawbatch/pipeline"
)

// TestSettingsHashLook: the exposure anchor and the look are part of the
// settings hash, so changing them converts again.
func TestSettingsHashLook(t *testing.T) {
	base := pipeline.DefaultSettings()
	anchor, look := base, base
	anchor.ExposureAnchor = pipeline.AnchorNone
	look.Look = pipeline.LookCamera
	h := map[string]bool{SettingsHash(base): true, SettingsHash(anchor): true, SettingsHash(look): true}
	if len(h) != 3 {
		t.Errorf("hashes of default, anchor none and look camera are not all different: %v", h)
	}
}

// TestReportExposure: a converted file's report gives the exposure applied
// and its source; a failed one gives none.
func TestReportExposure(t *testing.T) {
	ok := FileResult{Status: StatusConverted}
	ok.Result.Exposure = pipeline.ExposureResult{EV: -0.99, Source: "--exposure +0.00, preview anchor -0.99"}
	failed := FileResult{Status: StatusFailed}
	rep := BuildReport([]FileResult{ok, failed})
	f := rep.Files[0]
	if f.ExposureEV == nil || *f.ExposureEV != -0.99 || f.ExposureSource != ok.Result.Exposure.Source {
		t.Errorf("converted: %v %q", f.ExposureEV, f.ExposureSource)
	}
	if rep.Files[1].ExposureEV != nil {
		t.Errorf("failed file has exposure_ev %v", *rep.Files[1].ExposureEV)
	}
}
