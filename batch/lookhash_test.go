package batch

import (
	"testing"

	"github.com/rawbatch/rawbatch/pipeline"
)

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
